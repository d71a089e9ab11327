"""The plugin route on its own: `.mcp.json`'s command, run the way Claude Code runs it for a plugin.

A marketplace install copies the repository and runs `.mcp.json` with `${CLAUDE_PLUGIN_ROOT}` set
to it; nothing is pip-installed. Here that command starts from a clean Python (a fresh venv's
`python3` first on PATH), installs the server's dependencies into its own environment on the
first start, and serves the six tools to a real MCP client. Offline: pip may only use a
wheelhouse repackaged from this test environment's own installed distributions (the server's
core dependencies, no torch), built once per module.
"""

import base64
import csv
import hashlib
import importlib.metadata
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from mint_migrate.tools import TOOLS as REGISTRY

ROOT = Path(__file__).resolve().parent.parent
TOOLS = {tool.name for tool in REGISTRY}
INSTALLER_FILES = {"INSTALLER", "RECORD", "REQUESTED", "direct_url.json"}

pytestmark = pytest.mark.slow


def _requirements(dist: importlib.metadata.Distribution, extras: set[str]) -> list[Requirement]:
    found = []
    for line in dist.requires or []:
        req = Requirement(line)
        if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in extras | {""}):
            found.append(req)
    return found


def server_closure() -> list[importlib.metadata.Distribution]:
    """mint-migrate's core dependencies and theirs, as installed here."""
    todo = _requirements(importlib.metadata.distribution("mint-migrate"), set())
    seen: dict[str, importlib.metadata.Distribution] = {}
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen:
            continue
        dist = importlib.metadata.distribution(req.name)
        seen[name] = dist
        todo += _requirements(dist, set(req.extras))
    return list(seen.values())


def repackage(dist: importlib.metadata.Distribution, out: Path) -> Path:
    """A wheel of an installed distribution: its files under site-packages plus its dist-info."""
    tags = [line.split(":", 1)[1].strip() for line in (dist.read_text("WHEEL") or "").splitlines()
            if line.startswith("Tag:")]
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    wheel = out / f"{name}-{dist.version}-{tags[0]}.whl"
    record = io.StringIO()
    rows = csv.writer(record, lineterminator="\n")
    record_name = None
    with zipfile.ZipFile(wheel, "w") as archive:
        for file in dist.files or []:
            path = str(file)
            if path.startswith("..") or "__pycache__" in file.parts:
                continue  # scripts (pip writes them again) and bytecode
            if ".dist-info/" in path and file.name in INSTALLER_FILES:
                record_name = path.rsplit("/", 1)[0] + "/RECORD" if file.name == "RECORD" else record_name
                continue
            source = Path(file.locate())
            if not source.is_file():
                continue
            data = source.read_bytes()
            archive.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            rows.writerow([path, f"sha256={digest}", len(data)])
        record_name = record_name or f"{name}-{dist.version}.dist-info/RECORD"
        rows.writerow([record_name, "", ""])
        archive.writestr(record_name, record.getvalue())
    return wheel


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheelhouse")
    for dist in server_closure():
        repackage(dist, out)
    return out


@pytest.fixture(scope="module")
def clean_python(tmp_path_factory) -> Path:
    """A bin folder whose python3 is like a user's: pip (the base interpreter's), no mcp, no mint-migrate."""
    venv = tmp_path_factory.mktemp("clean") / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True, timeout=120
    )
    probe = "import importlib.util as u; print(bool(u.find_spec('pip')), u.find_spec('mcp') is None)"
    has = subprocess.run([str(venv / "bin" / "python3"), "-c", probe], capture_output=True, text=True, timeout=60)
    if has.stdout.split() != ["True", "True"]:
        pytest.skip("the base interpreter has no pip, or already has mcp: not a clean start")
    return venv / "bin"


def plugin_server() -> tuple[str, list[str]]:
    """.mcp.json's command and args with ${CLAUDE_PLUGIN_ROOT} expanded as Claude Code does for a plugin."""
    server = json.loads((ROOT / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]["mint-migrate"]
    expand = lambda s: s.replace("${CLAUDE_PLUGIN_ROOT}", str(ROOT))  # noqa: E731
    return expand(server["command"]), [expand(a) for a in server["args"]]


def plugin_env(clean_python: Path, data: Path, find_links: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(
        PATH=f"{clean_python}{os.pathsep}{env.get('PATH', '')}",
        CLAUDE_PLUGIN_ROOT=str(ROOT),
        CLAUDE_PLUGIN_DATA=str(data),
        PIP_NO_INDEX="1",  # offline: the wheelhouse only
        PIP_FIND_LINKS=str(find_links),
        PIP_CONFIG_FILE=os.devnull,
    )
    return env


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_plugin_mcp_json_starts_the_server_from_a_clean_python(wheelhouse, clean_python, tmp_path):
    from mcp import Client, StdioServerParameters

    command, args = plugin_server()
    assert command == "python3" and args[0].startswith(str(ROOT))
    env = plugin_env(clean_python, tmp_path / "plugin-data", wheelhouse)
    workspace = tmp_path / "project"
    workspace.mkdir()
    for start in ("first: installs its environment", "second: reuses it"):
        params = StdioServerParameters(command=command, args=args, env=env, cwd=str(workspace))
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == TOOLS, start
            result = await client.call_tool("map_concept", {"framework": "verl", "concept": "rollout.n"})
            assert not result.is_error and result.structured_content["concepts"][0]["id"] == "rollout_n"
    [venv] = (tmp_path / "plugin-data").glob("venv-*")
    assert (venv / ".ready").is_file()
    # The clean python stays clean: everything went into the plugin's own environment.
    assert not list(clean_python.parent.glob("lib/python*/site-packages/mcp"))
    assert list(venv.glob("lib/python*/site-packages/mcp"))


def test_without_a_package_source_it_names_the_one_command_to_run(clean_python, tmp_path):
    command, args = plugin_server()
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    done = subprocess.run(
        [command, *args], env=plugin_env(clean_python, tmp_path / "plugin-data", empty),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 1
    assert done.stdout == ""  # stdout is the MCP channel: nothing but protocol may appear there
    assert "scripts/mint_migrate_launcher.py --install" in done.stderr
    assert not list((tmp_path / "plugin-data").glob("venv-*")), "a failed install must not leave an environment"
