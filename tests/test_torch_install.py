"""Which torch build the install picks (scripts/torch_install_args.py): the real decision function,
with each machine's answers given as its probes; the Makefile and the plugin launcher both use it."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


choice = _load("torch_install_args")


def asked(answer: bool, calls: list[str], name: str):
    def probe() -> bool:
        calls.append(name)
        return answer

    return probe


@pytest.mark.parametrize(
    ("cuda", "cpu_index", "expected", "asks_index"),
    [
        (True, True, ["torch==2.13.0"], False),  # CUDA: the default index's CUDA build; no need to ask
        (True, False, ["torch==2.13.0"], False),
        (False, True, ["torch==2.13.0", "--index-url", "https://download.pytorch.org/whl/cpu"], True),
        (False, False, ["torch==2.13.0"], True),  # offline: the plain pin, whatever pip's config finds
    ],
)
def test_the_build_fits_the_machine(monkeypatch, cuda, cpu_index, expected, asks_index):
    monkeypatch.delenv("MINT_TORCH_INDEX", raising=False)
    calls: list[str] = []
    args = choice.torch_install_args(cuda=asked(cuda, calls, "cuda"), cpu_index_reachable=asked(cpu_index, calls, "index"))
    assert args == expected
    assert ("index" in calls) == asks_index


def test_a_chosen_index_wins(monkeypatch):
    monkeypatch.setenv("MINT_TORCH_INDEX", "https://mirror.example/torch-cu128")
    args = choice.torch_install_args(cuda=lambda: False, cpu_index_reachable=lambda: True)
    assert args == ["torch==2.13.0", "--index-url", "https://mirror.example/torch-cu128"]


def test_the_real_probes_answer_without_hanging():
    assert isinstance(choice.has_cuda(), bool)
    # Nothing listens on port 9 of loopback: unreachable, at once, and no exception.
    assert choice.index_reachable("http://127.0.0.1:9/torch/", timeout=2) is False


def test_the_makefile_and_the_launcher_ask_the_script(monkeypatch):
    # A chosen index keeps the script from asking the internet (tests stay on loopback).
    monkeypatch.setenv("MINT_TORCH_INDEX", "http://127.0.0.1:9/simple")
    dry = subprocess.run(["make", "-n", "-W", "pyproject.toml", "setup", "VENV=.venv-dry-run"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0, dry.stderr
    printed = subprocess.run([sys.executable, str(ROOT / "scripts" / "torch_install_args.py")],
                             capture_output=True, text=True, timeout=120).stdout.strip()
    assert printed == "torch==2.13.0 --index-url http://127.0.0.1:9/simple"
    assert f"pip install -q {printed}" in dry.stdout
    launcher = _load("mint_migrate_launcher")
    assert launcher.torch_install_args is choice.torch_install_args or (
        launcher.torch_install_args.__code__.co_filename == choice.torch_install_args.__code__.co_filename
    )
