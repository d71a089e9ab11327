"""tinker-cookbook's own tests (weight export, and its 18 recipe smoke tests), run from its PyPI
sdist against mint-local.

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


def run_cookbook_recipe_tests(root: Path, env: dict[str, str], selection: list[str], log_name: str) -> dict[str, str]:
    """Run the sdist's recipe tests; returns {test id: PASSED | FAILED | ERROR | SKIPPED}."""
    bin_dir = root / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "uv").write_text(UV_SHIM)
    (bin_dir / "uv").chmod(0o755)
    path = f"{bin_dir}:{Path(sys.executable).parent}:{env.get('PATH', '')}"
    # The cookbook's own per-recipe limit (its tests/helpers.py reads it); a user may raise it
    # for a slow machine, and the log is written as the recipe runs, so `tail -f` shows progress.
    recipe_timeout = int(env.get("SMOKE_TEST_TIMEOUT", "3600"))
    log_path = root / log_name
    with log_path.open("w") as log:
        subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-s", "-rA", *selection],
            cwd=root,
            env={**env, "PATH": path, "SMOKE_TEST_TIMEOUT": str(recipe_timeout)},
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=len(selection) * recipe_timeout + 600,
        )
    outcomes = {}
    for line in log_path.read_text().splitlines():
        m = re.match(r"(PASSED|FAILED|ERROR|SKIPPED) (tests/\S+)", line)
        if m:
            outcomes[m[2]] = m[1]
    return outcomes


# All 18 of the cookbook's recipe tests, one item per file (a file's tests run together: the
# resume tests continue the run before them). The stand-ins of standins.py cover every model
# name and dataset they read; mint-local serves each name with its tiny model. Figures and what
# each needs: tests/cookbook/README.md.
RECIPE_FILES = {
    "chat_sl": ["test_chat_sl", "test_chat_sl_resume"],
    "rolling_checkpoints": ["test_rolling_checkpoint_train", "test_rolling_checkpoint_resume"],
    "dpo": ["test_dpo"],
    "math_rl": ["test_math_rl_sync", "test_math_rl_async", "test_math_rl_stream_minibatch"],
    "off_policy_reasoning": ["test_off_policy_reasoning"],
    "shorter": ["test_shorter"],
    "text_arena": ["test_text_arena", "test_text_arena_random_opponent"],
    "on_policy_distillation": ["test_on_policy_distillation"],
    "on_policy_multi_teacher": ["test_on_policy_multi_teacher"],
    "guess_number": ["test_guess_number"],
    "twenty_questions": ["test_twenty_questions"],
    "rlhf_pipeline": ["test_rlhf_pipeline"],
    "vlm_classifier": ["test_vlm_classifier"],
}
SKIPPED = {
    # Not a mint-local limit we can configure away: the data are images from the hub.
    "vlm_classifier": "needs the hub and image inputs: it loads dpdl-benchmark/caltech101 (images) "
    "and trains Qwen3-VL on image chunks, which mint-local refuses (text-only)",
}
# The multi-turn RL recipes (guess_number, twenty_questions) and rlhf_pipeline take about half
# an hour each with a core: a tiny random model never wins a game nor stops early, so every
# episode runs its longest (the README has the figures). They run in every nightly-style pass.


def _recipe_param(name: str, tests: list[str]):
    marks = []
    if name in SKIPPED:
        marks.append(pytest.mark.skip(reason=SKIPPED[name]))
    return pytest.param([f"tests/recipes/test_recipe_{name}.py::{t}" for t in tests], id=name, marks=marks)


def test_all_of_the_cookbooks_recipe_tests_are_listed(cookbook_tests_root):
    """A cookbook upgrade that adds a recipe test must show up here, not be silently left out."""
    found = {
        f"{path.stem.removeprefix('test_recipe_')}::{m[1]}"
        for path in (cookbook_tests_root / "tests" / "recipes").glob("test_recipe_*.py")
        for m in re.finditer(r"^def (test_\w+)", path.read_text(), re.M)
    }
    assert found == {f"{name}::{t}" for name, tests in RECIPE_FILES.items() for t in tests}
    assert len(found) == 18


@pytest.mark.parametrize("selection", [_recipe_param(n, t) for n, t in RECIPE_FILES.items()])
def test_cookbook_recipe_tests_pass(cookbook_tests_root, cookbook_env, selection):
    log_name = f"recipe-{Path(selection[0].split('::')[0]).stem}.log"
    outcomes = run_cookbook_recipe_tests(cookbook_tests_root, cookbook_env, selection, log_name)
    log = (cookbook_tests_root / log_name).read_text()
    assert outcomes == {t: "PASSED" for t in selection}, log[-8000:]
