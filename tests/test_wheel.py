"""A non-editable install works from any directory: the wheel carries scaffolds, concept maps and docs.

Offline, as every test: the wheel is built with the hatchling of this environment (no isolated
build environment to download), and installed without an index into a fresh venv that sees only
the wheel's own core dependencies, taken from this environment (so torch is absent there).
"""

import json
import os
import subprocess
import sys
import zipfile
from email.parser import Parser
from importlib.metadata import distribution
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(REPO)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    [built] = out.glob("mint_migrate-*.whl")
    return built


def core_requirements(wheel: Path) -> list[str]:
    """The wheel's Requires-Dist without extras: what `pip install mint-migrate` installs."""
    with zipfile.ZipFile(wheel) as archive:
        [metadata] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        message = Parser().parsestr(archive.read(metadata).decode("utf-8"))
    return [r for r in message.get_all("Requires-Dist", []) if "extra ==" not in r]


def dependency_folder(requirements: list[str], folder: Path) -> set[str]:
    """Links to every installed distribution the requirements need (recursively), in `folder`."""
    folder.mkdir()
    seen: set[str] = set()
    todo = list(requirements)
    while todo:
        requirement = Requirement(todo.pop())
        name = canonicalize_name(requirement.name)
        if name in seen or (requirement.marker is not None and not requirement.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        dist = distribution(requirement.name)
        todo += dist.requires or []
        top = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for entry in top:
            source = Path(dist.locate_file(entry))
            if source.exists() and not (folder / entry).exists():
                (folder / entry).symlink_to(source)
    return seen


def test_wheel_carries_the_bundled_files(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "mint_migrate/_bundled/SKILL.md",
        "mint_migrate/_bundled/mint_api_cheatsheet.md",
        "mint_migrate/_bundled/mint_api_reference.txt",
        "mint_migrate/_bundled/commands/migrate.md",
        "mint_migrate/concepts/verl.yaml",
        "mint_local/__init__.py",
    ):
        assert required in names, required
    assert any(n.startswith("mint_migrate/_bundled/scaffolds/") and n.endswith(".j2") for n in names)


@pytest.mark.slow
def test_installed_wheel_runs_map_outside_the_checkout(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    # Core dependencies only: map, lint, scaffold and migrate must work without torch.
    deps = dependency_folder(core_requirements(wheel), tmp_path / "deps")
    assert "torch" not in deps and "pydantic" in deps and "libcst" in deps
    [packages] = [p for p in (venv / "lib").glob("python3*/site-packages")]
    (packages / "core-deps.pth").write_text(str(tmp_path / "deps") + "\n", encoding="utf-8")
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        [str(venv / "bin" / "mint-migrate"), "map", "trl", "--json"],
        capture_output=True, text=True, cwd=elsewhere, env=env, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["framework"] == "trl"
    # The bundled files resolve from the installed package, not from this checkout.
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "from mint_migrate.bundled import bundled_path; print(bundled_path('scaffolds'))"],
        capture_output=True, text=True, cwd=elsewhere, env=env, timeout=60,
    )
    assert where.returncode == 0, where.stderr
    assert str(venv) in where.stdout and str(REPO) not in where.stdout
    no_torch = subprocess.run([str(venv / "bin" / "python"), "-c", "import torch"], capture_output=True, env=env, timeout=60)
    assert no_torch.returncode != 0, "torch leaked into the core install"
