"""What a user's path may name, and how long a tool may work on it (mint_migrate/userfiles.py, the
one door every read goes through; mint_migrate/worker.py, where the MCP server's engine calls run).

A FIFO, a device node or a socket is refused with a clear error by the CLI and by every MCP tool,
never opened blocking and never read without end; the server's loop stays free (map_concept
answers after a FIFO was named). An MCP engine call has a deadline, and its worker is killed when
the deadline passes or the client goes away. Smaller: `migrate --out EXISTING_FILE` exits 2 with a
message, preflight fails an empty script and calls a folder a folder."""

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from probes import MARKER, gone, marked

from mint_migrate.server import create_server
from mint_migrate.tools import TOOLS

CLI = str(Path(sys.executable).parent / "mint-migrate")
SFT = "from trl import SFTConfig\nargs = SFTConfig(output_dir='o', learning_rate=2e-5)\n"


@pytest.fixture
def anyio_backend():
    return "asyncio"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60, cwd=cwd)


def make_specials(folder: Path) -> dict[str, Path]:
    """A FIFO, a character device (/dev/zero's numbers, when this user may make one) and a socket."""
    found = {"fifo": folder / "train_fifo.py"}
    os.mkfifo(found["fifo"])
    try:
        os.mknod(folder / "zero.py", stat.S_IFCHR | 0o600, os.makedev(1, 5))
        found["device"] = folder / "zero.py"
    except PermissionError:
        pass
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(folder / "sock.py"))
    found["socket"] = folder / "sock.py"
    return found


@pytest.mark.parametrize("command", [tool.command for tool in TOOLS if tool.isolated])  # the ones that read user files
def test_the_cli_refuses_fifos_devices_and_sockets(tmp_path, command):
    for kind, path in {**make_specials(tmp_path), "dev-zero": Path("/dev/zero")}.items():
        done = run(command, str(path), "--json")
        assert done.returncode == 2, (kind, done.stdout, done.stderr[-2000:])
        assert "Traceback" not in done.stderr
        error = json.loads(done.stdout)["error"]
        assert "regular file" in error or "socket" in error, (kind, error)


@pytest.mark.anyio
async def test_mcp_tools_refuse_them_and_the_server_keeps_answering(tmp_path):
    specials = make_specials(tmp_path)
    calls = [("lint_script", "path"), ("migrate_script", "source_path"), ("preflight_check", "script_path")]
    # Over stdio: a server whose loop blocks must fail this test, not hang it.
    params = StdioServerParameters(command=sys.executable, args=["-m", "mint_migrate"], cwd=str(tmp_path))
    async with Client(params) as client:
        for kind, path in specials.items():
            for tool, argument in calls:
                with anyio.fail_after(60):  # a FIFO opened blocking froze the loop for ever
                    result = await client.call_tool(tool, {argument: path.name})
                assert result.is_error, (kind, tool)
                text = result.content[0].text
                assert "regular file" in text or "socket" in text, (kind, tool, text)
            with anyio.fail_after(30):
                answer = await client.call_tool("map_concept", {"framework": "trl", "concept": "SFTConfig"})
            assert not answer.is_error


def test_a_file_over_the_size_bound_is_refused(tmp_path):
    from mint_migrate import userfiles
    from mint_migrate.errors import MintMigrateError

    big = tmp_path / "big.py"
    big.write_bytes(b"x = 1\n" * 1000)
    with pytest.raises(MintMigrateError, match="larger than"):
        userfiles.read_bytes(big, limit=1000)
    assert userfiles.read_bytes(big, limit=10_000).startswith(b"x = 1")


@pytest.mark.anyio
async def test_an_engine_call_past_its_deadline_is_stopped_with_a_message(tmp_path, monkeypatch):
    (tmp_path / "sft.py").write_text(SFT, encoding="utf-8")
    monkeypatch.setenv("MINT_MIGRATE_TOOL_DEADLINE_S", "0.001")
    async with Client(create_server(tmp_path)) as client:
        result = await client.call_tool("migrate_script", {"source_path": "sft.py"})
        assert result.is_error and "did not finish within" in result.content[0].text
        monkeypatch.setenv("MINT_MIGRATE_TOOL_DEADLINE_S", "120")
        result = await client.call_tool("migrate_script", {"source_path": "sft.py"})
        assert not result.is_error and result.structured_content["plan"]["framework"] == "trl"


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("how", ["client leaves", "SIGTERM to the server"])
async def test_a_client_going_away_mid_call_stops_the_worker(tmp_path, how):
    """A lint of a long (but allowed) file keeps a worker busy; the client leaves, or the server is
    terminated; nothing stays."""
    mark = uuid.uuid4().hex
    (tmp_path / "long.py").write_text("import mint\n" + "value = [1, 2, 3]\n" * 250_000, encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "mint_migrate"], cwd=str(tmp_path), env=dict(os.environ, **{MARKER: mark})
    )
    during: list[int] = []
    async with Client(params) as client:

        async def call() -> None:
            try:
                await client.call_tool("lint_script", {"path": "long.py"})
            except Exception:  # noqa: BLE001 - cancelled under this call
                pass

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(call)
            with anyio.fail_after(120):
                while len(during := marked(mark)) < 3:  # the server, the fork server, the worker
                    await anyio.sleep(0.1)
            if how == "SIGTERM to the server":
                [server] = [p for p in during if Path(f"/proc/{p}/cmdline").read_bytes().endswith(b"-m\0mint_migrate\0")]
                os.kill(server, signal.SIGTERM)
            tasks.cancel_scope.cancel()
    assert gone(during) == [] and marked(mark) == []


def test_migrate_out_onto_an_existing_file_exits_2_with_a_message(tmp_path):
    (tmp_path / "sft.py").write_text(SFT, encoding="utf-8")
    (tmp_path / "taken").write_text("mine\n", encoding="utf-8")
    done = run("migrate", str(tmp_path / "sft.py"), "--out", str(tmp_path / "taken"), "--json")
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert "taken" in json.loads(done.stdout)["error"]
    assert (tmp_path / "taken").read_text() == "mine\n"


def test_preflight_fails_an_empty_script_and_calls_a_folder_a_folder(tmp_path):
    (tmp_path / "train.py").write_text("", encoding="utf-8")
    done = run("preflight", str(tmp_path / "train.py"), "--target", "local", "--json")
    assert done.returncode == 1, done.stderr[-2000:]
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["lint"]["status"] == "fail" and "empty" in checks["lint"]["message"]
    done = run("preflight", str(tmp_path), "--target", "local", "--json")
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert "directory" in error and "No such file" not in error
