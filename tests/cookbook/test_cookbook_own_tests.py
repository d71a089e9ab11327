"""tinker-cookbook's own weight-export tests, run from its PyPI sdist against mint-local.

The tests are not in the wheel, and their code is not copied into this repository: `make
test-cookbook` downloads the sdist from PyPI (`pip download --no-binary :all:`) and unpacks it
under `.cookbook-sdist/` (git-ignored); TINKER_COOKBOOK_SDIST may name another unpacked copy.
They run unchanged, with their own pytest configuration, from a folder that also holds the
stand-in models and datasets.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tinker_cookbook", reason="the cookbook tier needs tinker-cookbook (.venv-cookbook): make test-cookbook")

REPO = Path(__file__).resolve().parents[2]
SDIST = Path(os.environ.get("TINKER_COOKBOOK_SDIST", REPO / ".cookbook-sdist" / "tinker_cookbook-0.4.1"))

# The tests that talk to a Tinker server and need no hub beyond the stand-ins: a dense Qwen3
# adapter trained, downloaded, exported as PEFT and merged. (The MoE/Qwen3.5/DeepSeek/Kimi ones
# need those architectures; mint-local serves one dense model.)
WEIGHT_TESTS = [
    "tests/weights/test_download.py",
    "tests/weights/test_lifecycle.py",
    "tests/weights/test_weight_export_e2e.py::TestDenseQwen3",
    "tests/weights/test_partial_lora_lifecycle.py::TestPartialLoraDense",
]


@pytest.fixture(scope="session")
def cookbook_tests_root(workspace, tmp_path_factory) -> Path:
    if not (SDIST / "tests" / "weights").is_dir():
        pytest.skip(f"tinker-cookbook's sdist is not unpacked at {SDIST}; `make test-cookbook` fetches it")
    root = tmp_path_factory.mktemp("cookbook-tests")
    shutil.copytree(SDIST / "tests", root / "tests")
    shutil.copy(SDIST / "pyproject.toml", root / "pyproject.toml")
    for entry in workspace.iterdir():
        (root / entry.name).symlink_to(entry)
    return root


def test_cookbook_weight_export_tests_pass(cookbook_tests_root, cookbook_env, use_cookbook_env):
    import tinker

    # test_download.py downloads whatever TINKER_TEST_CHECKPOINT_PATH names.
    tc = tinker.ServiceClient().create_lora_training_client(base_model="Qwen/Qwen3-8B", rank=4)
    checkpoint = tc.save_weights_for_sampler("cookbook-download-test").result().path
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", *WEIGHT_TESTS],
        cwd=cookbook_tests_root,
        env={**cookbook_env, "TINKER_TEST_CHECKPOINT_PATH": checkpoint},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=1800,
    )
    summary = proc.stdout.strip().splitlines()[-1]
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert re.fullmatch(r"=* ?6 passed.*", summary), summary


# --- the recipe smoke tests (tests/recipes): each runs `uv run python -m RECIPE ... max_steps=N` ---

UV_SHIM = '#!/bin/sh\n# tinker-cookbook\'s recipe tests call "uv run python ..."; this venv already has everything.\n[ "$1" = run ] && shift\nexec "$@"\n'


def run_cookbook_recipe_tests(root: Path, env: dict[str, str], selection: list[str]) -> dict[str, str]:
    """Run the sdist's recipe tests; returns {test id: PASSED | FAILED | ERROR | SKIPPED}."""
    bin_dir = root / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "uv").write_text(UV_SHIM)
    (bin_dir / "uv").chmod(0o755)
    path = f"{bin_dir}:{Path(sys.executable).parent}:{env.get('PATH', '')}"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", *selection],
        cwd=root,
        env={**env, "PATH": path, "SMOKE_TEST_TIMEOUT": "1200"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=4 * 3600,
    )
    (root / "recipe-tests.log").write_text(proc.stdout)
    outcomes = {}
    for line in proc.stdout.splitlines():
        m = re.match(r"(PASSED|FAILED|ERROR|SKIPPED) (tests/\S+)", line)
        if m:
            outcomes[m[2]] = m[1]
    return outcomes


# The recipe tests checked here (supervised chat_sl with its resume and rolling checkpoints, and
# DPO on its default Llama 3.2 1B tokenizer stand-in). The others are not run by this tier:
# guess_number, twenty_questions, text_arena, math_rl, on-policy distillation (16 groups at
# max_tokens=4096) and off-policy reasoning run for long stretches on a shared 2-core machine
# (this tier runs our own smaller versions of the RL and distillation ones); vlm_classifier
# needs image inputs, which mint-local refuses.
RECIPE_TESTS = [
    "tests/recipes/test_recipe_chat_sl.py::test_chat_sl",
    "tests/recipes/test_recipe_chat_sl.py::test_chat_sl_resume",
    "tests/recipes/test_recipe_rolling_checkpoints.py::test_rolling_checkpoint_train",
    "tests/recipes/test_recipe_rolling_checkpoints.py::test_rolling_checkpoint_resume",
    "tests/recipes/test_recipe_dpo.py::test_dpo",
]


def test_cookbook_recipe_tests_pass(cookbook_tests_root, cookbook_env):
    outcomes = run_cookbook_recipe_tests(cookbook_tests_root, cookbook_env, RECIPE_TESTS)
    log = (cookbook_tests_root / "recipe-tests.log").read_text()
    assert outcomes == {t: "PASSED" for t in RECIPE_TESTS}, log[-8000:]
