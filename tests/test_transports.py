"""The server as a real client sees it: a subprocess over stdio, from Python and from the MCP Inspector CLI."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parents[1]
INSPECTOR = REPO / "node_modules" / ".bin" / "mcp-inspector"


@pytest.fixture
def anyio_backend():
    return "asyncio"


CONSOLE_SCRIPT = str(Path(sys.executable).parent / "mint-migrate")


@pytest.mark.anyio
@pytest.mark.parametrize(
    "command",
    [[sys.executable, "-m", "mint_migrate"], [CONSOLE_SCRIPT, "serve", "--workspace", "."]],
    ids=["python-m", "mint-migrate-serve"],
)
async def test_stdio_subprocess_lists_tools_and_calls_map_concept(command, tmp_path):
    params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(tmp_path))
    async with Client(params) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "map_concept" in names and "launch_smoke_run" in names
        result = await client.call_tool("map_concept", {"framework": "openrlhf", "concept": "--pretrain"})
        assert not result.is_error
        assert result.structured_content["framework"] == "openrlhf"


def _inspector(*args: str) -> subprocess.CompletedProcess:
    cmd = [str(INSPECTOR), "--cli", sys.executable, "-m", "mint_migrate", *args, "--format", "json"]
    env = {**os.environ, "MCP_INSPECTOR_SECRET_STORE": "memory"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO, env=env)


@pytest.mark.slow
@pytest.mark.skipif(not INSPECTOR.exists() or not shutil.which("node"), reason="run `make inspector` (npm) first")
def test_mcp_inspector_cli_lists_tools_and_calls_map_concept():
    listed = _inspector("--method", "tools/list")
    assert listed.returncode == 0, listed.stderr
    tools = {t["name"]: t for t in json.loads(listed.stdout)["result"]["tools"]}
    assert "map_concept" in tools
    assert tools["map_concept"]["annotations"]["readOnlyHint"] is True
    assert "outputSchema" in tools["migrate_script"]

    called = _inspector("--method", "tools/call", "--tool-name", "map_concept", "--tool-arg", "framework=verl")
    assert called.returncode == 0, called.stderr
    result = json.loads(called.stdout)["result"]
    assert result["structuredContent"]["framework"] == "verl"
    assert len(result["structuredContent"]["concepts"]) >= 8

    failed = _inspector("--method", "tools/call", "--tool-name", "map_concept", "--tool-arg", "framework=nope")
    assert failed.returncode == 5  # the Inspector's exit code for isError results
    assert "Unknown framework 'nope'" in failed.stdout
