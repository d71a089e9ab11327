"""Every process a smoke run starts is gone when it returns, however it ended: finished with
children left behind (one in a session of its own, one holding stdout open), Ctrl-C or SIGTERM
on `mint-migrate smoke`, the MCP client going away mid-run, SIGTERM to the MCP server. Each test
tags its processes through the environment and counts them in /proc before, during and after."""

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from mcp_server.smoke import format_verdict, run_smoke

CLI = str(Path(sys.executable).parent / "mint-migrate")
MARKER = "MINT_TEST_PROCESS_MARK"

# Starts a child in a session of its own and a child that shares (holds) its stdout, then either
# finishes (leaving both behind) or keeps running. Takes --smoke and --steps like a scaffold.
SCRIPT = """\
import os, pathlib, subprocess, sys, time
assert "--smoke" in sys.argv and "--steps" in sys.argv
sleeper = [sys.executable, "-c", "import time; time.sleep(300)"]
own_session = subprocess.Popen(sleeper, start_new_session=True, stdout=subprocess.DEVNULL)
holds_stdout = subprocess.Popen(sleeper)
pathlib.Path(__file__).with_name("pids").write_text(f"{os.getpid()} {own_session.pid} {holds_stdout.pid}")
print("METRIC step=1 loss=1.5 tokens=4 step_s=0.1", flush=True)
if FINISH:
    print("METRIC step=2 loss=1.25 tokens=4 step_s=0.1", flush=True)
    print("METRIC done=1 steps=2", flush=True)
    sys.exit(0)
time.sleep(300)
"""


@pytest.fixture
def anyio_backend():
    return "asyncio"


def write_script(folder: Path, finish: bool) -> Path:
    script = folder / "train.py"
    script.write_text(SCRIPT.replace("FINISH", str(finish)), encoding="utf-8")
    return script


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def marked(mark: str) -> list[int]:
    """Live processes whose environment carries MARKER=mark."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                environ = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if f"{MARKER}={mark}".encode() in environ and alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def wait_for(predicate, timeout: float = 300.0) -> None:  # mint-local starts slowly on a loaded machine
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.1)


def gone(pids: list[int], timeout: float = 30.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


@pytest.mark.slow
def test_children_left_behind_are_listed_and_killed_and_a_held_stdout_is_no_timeout(tmp_path):
    script = write_script(tmp_path, finish=True)
    verdict = run_smoke(script, steps=2, timeout_s=120)
    assert verdict.passed, format_verdict(verdict)
    assert verdict.exit_code == 0 and verdict.duration_s < 60  # not the 120 s timeout
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert sorted(p.pid for p in verdict.left_running) == sorted(pids[1:])
    assert any("were still running when the run ended, and were killed" in note for note in verdict.notes)
    assert gone(pids) == []


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupting_the_cli_prints_the_verdict_and_leaves_nothing(tmp_path, sig, code):
    mark = uuid.uuid4().hex
    assert marked(mark) == []
    script = write_script(tmp_path, finish=False)
    cli = subprocess.Popen(
        [CLI, "smoke", str(script), "--json", "--timeout", "300"],
        env=dict(os.environ, **{MARKER: mark}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # our signal goes to the CLI alone, as a terminal's goes to its group
    )
    try:
        wait_for(lambda: (tmp_path / "pids").exists())
        during = marked(mark)
        assert len(during) >= 5, during  # the CLI, mint-local, the script and its two children
        cli.send_signal(sig)
        out, err = _communicate_or_show_stacks(cli, timeout=180)  # generous: the machine may be loaded
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == code, err[-2000:]
    assert "Traceback" not in err
    verdict = json.loads(out)
    assert verdict["passed"] is False and [e["kind"] for e in verdict["errors"]] == ["interrupted"]
    assert verdict["steps_done"] == 1
    assert gone(during) == [] and marked(mark) == []


def _communicate_or_show_stacks(cli: subprocess.Popen, timeout: float) -> tuple[str, str]:
    """cli.communicate(), or a failure that shows where every thread of the CLI was stuck."""
    try:
        return cli.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        cli.send_signal(signal.SIGUSR1)  # faulthandler in the CLI prints all its threads' stacks
        time.sleep(2)
        cli.kill()
        _, err = cli.communicate()
        raise AssertionError(f"the CLI did not end {timeout:.0f} s after the signal; its stacks:\n{err[-6000:]}") from None


async def _mcp_run_then(tmp_path: Path, action) -> tuple[list[int], str]:
    """Start a long smoke run through a stdio MCP server, then `action(server_pid)` mid-run."""
    mark = uuid.uuid4().hex
    assert marked(mark) == []
    write_script(tmp_path, finish=False)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_server"], cwd=str(tmp_path), env=dict(os.environ, **{MARKER: mark})
    )
    during: list[int] = []
    async with Client(params) as client:

        async def run() -> None:
            try:
                await client.call_tool("launch_smoke_run", {"script_path": "train.py", "timeout_s": 300})
            except Exception:  # noqa: BLE001 - the server is stopped under this call
                pass

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run)
            while not (tmp_path / "pids").exists():
                await anyio.sleep(0.1)
            during = marked(mark)
            [server] = [p for p in during if Path(f"/proc/{p}/cmdline").read_bytes().endswith(b"-m\0mcp_server\0")]
            await action(server)
            tasks.cancel_scope.cancel()
    return during, mark


@pytest.mark.slow
@pytest.mark.anyio
async def test_an_mcp_client_going_away_mid_run_leaves_nothing(tmp_path):
    async def disconnect(server_pid: int) -> None:
        pass  # leaving the client's context closes the server's stdin

    during, mark = await _mcp_run_then(tmp_path, disconnect)
    assert len(during) >= 5, during  # the server, mint-local, the script and its two children
    assert gone(during) == [] and marked(mark) == []


@pytest.mark.slow
@pytest.mark.anyio
async def test_sigterm_to_the_mcp_server_mid_run_leaves_nothing(tmp_path):
    async def terminate(server_pid: int) -> None:
        os.kill(server_pid, signal.SIGTERM)
        while alive(server_pid):
            await anyio.sleep(0.1)

    during, mark = await _mcp_run_then(tmp_path, terminate)
    assert len(during) >= 5, during
    assert gone(during) == [] and marked(mark) == []
