"""tinker-cookbook's own code against mint-local: the cookbook test tier (`make test-cookbook`).

Needs the `cookbook` extra (tinker-cookbook 0.4.1), which caps transformers below the main
venv's, so it lives in `.venv-cookbook`; elsewhere this directory is skipped. The cookbook runs
unchanged, configured only as a user would configure it for any Tinker-compatible server:
TINKER_BASE_URL, a `tml-` key (the plain tinker SDK refuses `sk-`), recipe arguments, and the
local stand-in models and datasets of standins.py in the working directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mint_local.launcher import LocalServer

from .standins import build_workspace


COOKBOOK_API_KEY = "tml-mint-local-cookbook"
HERE = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.cookbook)
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def cookbook_server(tmp_path_factory):
    """mint-local serving every hub name the recipes ask for with its built-in tiny model."""
    root = tmp_path_factory.mktemp("cookbook-server")
    server = LocalServer.start(model="tiny", device="cpu", serve_any_model=True, state_dir=root / "state", log_path=root / "server.log")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def workspace(tmp_path_factory) -> Path:
    from mint_local.tiny_model import ensure_tiny_model

    return build_workspace(tmp_path_factory.mktemp("cookbook-workspace"), ensure_tiny_model("tiny"))


@pytest.fixture(scope="session")
def small_workspace(tmp_path_factory) -> Path:
    """The same stand-ins with 64 SFT conversations, for loops that train a whole epoch."""
    from mint_local.tiny_model import ensure_tiny_model

    return build_workspace(tmp_path_factory.mktemp("cookbook-small-workspace"), ensure_tiny_model("tiny"), sft_rows=64)


@pytest.fixture(scope="session")
def cookbook_env(cookbook_server, tmp_path_factory) -> dict[str, str]:
    """What a user sets to point tinker-cookbook at mint-local (and keep everything offline)."""
    hf_home = tmp_path_factory.mktemp("hf-home")
    return {
        **os.environ,
        "TINKER_BASE_URL": cookbook_server.base_url,
        "TINKER_API_KEY": COOKBOOK_API_KEY,
        "TINKER_TELEMETRY": "0",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HOME": str(hf_home),
        "WANDB_MODE": "disabled",
        "PYTHONUNBUFFERED": "1",
    }


@pytest.fixture
def use_cookbook_env(cookbook_env, monkeypatch, workspace):
    """The same settings for cookbook code called in this process, from the workspace."""
    for key in ("TINKER_BASE_URL", "TINKER_API_KEY", "TINKER_TELEMETRY", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(key, cookbook_env[key])
    monkeypatch.chdir(workspace)
    return cookbook_env


def run_recipe(module: str, *args: str, cwd: Path, env: dict[str, str], timeout: float = 900) -> str:
    """`python -m MODULE key=value ...` as the cookbook's README runs recipes; returns the output."""
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        pytest.fail(f"{module} exited with {proc.returncode}:\n" + "\n".join(proc.stdout.splitlines()[-60:]))
    return proc.stdout


def metrics(log_path: Path) -> list[dict]:
    """The recipe's metrics.jsonl (the cookbook's ml_log writes one JSON object per step)."""
    return [json.loads(line) for line in (log_path / "metrics.jsonl").read_text().splitlines() if line.strip()]
