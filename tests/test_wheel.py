"""A non-editable install works from any directory: the wheel carries scaffolds, concept maps and docs."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(REPO)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    [built] = out.glob("mint_migrate-*.whl")
    return built


def test_wheel_carries_the_bundled_files(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "mcp_server/_bundled/SKILL.md",
        "mcp_server/_bundled/mint_api_cheatsheet.md",
        "mcp_server/_bundled/mint_api_reference.txt",
        "mcp_server/_bundled/commands/migrate.md",
        "mcp_server/concepts/verl.yaml",
        "mint_local/__init__.py",
    ):
        assert required in names, required
    assert any(n.startswith("mcp_server/_bundled/scaffolds/") and n.endswith(".j2") for n in names)


@pytest.mark.slow
def test_installed_wheel_runs_map_outside_the_checkout(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = venv / "bin" / "pip"
    # Core dependencies only: map, lint, scaffold and migrate must work without torch.
    subprocess.run([str(pip), "install", "-q", str(wheel)], check=True, capture_output=True, timeout=900)
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
         "from mcp_server.bundled import bundled_path; print(bundled_path('scaffolds'))"],
        capture_output=True, text=True, cwd=elsewhere, env=env, timeout=60,
    )
    assert where.returncode == 0, where.stderr
    assert str(venv) in where.stdout and str(REPO) not in where.stdout
