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
from probes import (
    MARKER,
    alive,
    communicate_or_show_stacks,
    gone,
    marked,
    mcp_run_then,
    wait_for,
    with_default_sigint,
    write_daemon_script,
    write_script,
)

from mint_local.process import Supervised
from mint_migrate.smoke import format_verdict, run_smoke

CLI = str(Path(sys.executable).parent / "mint-migrate")


@pytest.fixture
def anyio_backend():
    return "asyncio"


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
def test_daemons_that_clear_their_environment_and_leave_the_group_are_found_listed_and_killed(tmp_path):
    """No tag, no process group: the run's reaper adopted them, so they are its descendants; the one
    holding stdout does not turn a finished script into a timeout."""
    script = write_daemon_script(tmp_path, finish=True)
    verdict = run_smoke(script, steps=2, timeout_s=120)
    assert verdict.passed, format_verdict(verdict)
    assert verdict.exit_code == 0 and verdict.duration_s < 60  # not the 120 s timeout
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert sorted(p.pid for p in verdict.left_running) == sorted(pids[1:])
    assert gone(pids) == []


# Leaves a daemon and exits at once: forks, the child calls setsid and forks again, the grandchild
# writes its pid to argv[1] and replaces itself with a sleeper whose environment is empty (no tag).
QUICK_DAEMON = """\
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(sys.argv[1], "w") as f:
            f.write(str(os.getpid()))
        os.execve(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)"], {})
    os._exit(0)
while not os.path.exists(sys.argv[1]) or not open(sys.argv[1]).read():
    time.sleep(0.005)
"""


def _quick_daemon(folder: Path, name: str) -> tuple[Supervised, Path]:
    pid_file = folder / name
    proc = Supervised([sys.executable, "-c", QUICK_DAEMON, str(pid_file)], name=name, stdout=subprocess.DEVNULL)
    return proc, pid_file


def test_a_daemon_of_a_script_that_exits_at_once_is_listed_and_killed(tmp_path):
    """The script is gone within milliseconds, before anything could have looked at its children;
    its daemon is still known: the run's reaper adopted it. Several runs, one after another, while
    another supervised process runs (the timing that once let such a daemon slip by)."""
    other = Supervised([sys.executable, "-c", "import time; time.sleep(300)"], name="other")
    try:
        for run in range(3):
            proc, pid_file = _quick_daemon(tmp_path, f"daemon-{run}")
            assert proc.wait(timeout=120) == 0
            daemon = int(pid_file.read_text())
            assert proc.tree() == [daemon]
            assert [p.pid for p in proc.stop()] == [daemon]
            assert gone([daemon]) == []
    finally:
        other.stop()


def test_two_runs_at_once_each_list_and_kill_only_their_own_daemons(tmp_path):
    first, first_file = _quick_daemon(tmp_path, "first")
    second, second_file = _quick_daemon(tmp_path, "second")
    try:
        assert first.wait(timeout=120) == 0 and second.wait(timeout=120) == 0
        mine, theirs = int(first_file.read_text()), int(second_file.read_text())
        assert [p.pid for p in first.stop()] == [mine]
        assert gone([mine]) == [] and alive(theirs)
        assert [p.pid for p in second.stop()] == [theirs]
        assert gone([theirs]) == []
    finally:
        first.stop()
        second.stop()


@pytest.mark.slow
def test_daemons_are_killed_on_a_timeout_too(tmp_path):
    script = write_daemon_script(tmp_path, finish=False)
    verdict = run_smoke(script, steps=2, timeout_s=20)
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert [e.kind for e in verdict.errors] == ["timeout"], format_verdict(verdict)
    assert set(pids[1:]) <= {p.pid for p in verdict.left_running}
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
        preexec_fn=with_default_sigint,  # as from a terminal, even when the suite runs in the background
    )
    try:
        wait_for(lambda: (tmp_path / "pids").exists())
        during = marked(mark)
        assert len(during) >= 5, during  # the CLI, mint-local, the script and its two children
        cli.send_signal(sig)
        out, err = communicate_or_show_stacks(cli, timeout=180)  # generous: the machine may be loaded
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == code, err[-2000:]
    assert "Traceback" not in err
    verdict = json.loads(out)
    assert verdict["passed"] is False and [e["kind"] for e in verdict["errors"]] == ["interrupted"]
    assert verdict["steps_done"] == 1
    assert gone(during) == [] and marked(mark) == []


@pytest.mark.slow
@pytest.mark.anyio
async def test_an_mcp_client_going_away_mid_run_leaves_nothing(tmp_path):
    async def disconnect(server_pid: int) -> None:
        pass  # leaving the client's context closes the server's stdin

    during, mark = await mcp_run_then(tmp_path, disconnect)
    assert len(during) >= 5, during  # the server, mint-local, the script and its two children
    assert gone(during) == [] and marked(mark) == []


@pytest.mark.slow
@pytest.mark.anyio
async def test_sigterm_to_the_mint_migrate_mid_run_leaves_nothing(tmp_path):
    async def terminate(server_pid: int) -> None:
        os.kill(server_pid, signal.SIGTERM)
        while alive(server_pid):
            await anyio.sleep(0.1)

    during, mark = await mcp_run_then(tmp_path, terminate)
    assert len(during) >= 5, during
    assert gone(during) == [] and marked(mark) == []


def _cli_smoke(script: Path, tmpdir: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [CLI, "smoke", str(script), "--json", *args],
        env=dict(os.environ, TMPDIR=str(tmpdir)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=with_default_sigint,
    )


@pytest.mark.slow
def test_a_finished_cli_run_leaves_no_temporary_files(tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    cli = _cli_smoke(write_script(tmp_path, finish=True), tmpdir, "--timeout", "300")
    out, err = communicate_or_show_stacks(cli, timeout=300)
    assert cli.returncode == 0, err[-2000:]
    assert json.loads(out)["passed"] is True
    assert sorted(p.name for p in tmpdir.iterdir() if p.name.startswith("mint-local")) == []


@pytest.mark.slow
def test_a_second_ctrl_c_while_stopping_still_prints_one_verdict_and_leaves_nothing(tmp_path):
    """The run's stubborn child ignores SIGTERM, so stopping takes the grace period: the second
    Ctrl-C lands while the processes are being killed."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    script = write_daemon_script(tmp_path, finish=False)
    cli = _cli_smoke(script, tmpdir, "--timeout", "300")
    try:
        wait_for(lambda: (tmp_path / "pids").exists())
        pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
        cli.send_signal(signal.SIGINT)
        time.sleep(1.0)
        cli.send_signal(signal.SIGINT)
        out, err = communicate_or_show_stacks(cli, timeout=180)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == 130, err[-2000:]
    assert "Traceback" not in err
    verdict = json.loads(out)  # exactly one document: json.loads refuses anything after it
    assert [e["kind"] for e in verdict["errors"]] == ["interrupted"]
    assert gone(pids) == []
    assert sorted(p.name for p in tmpdir.iterdir() if p.name.startswith("mint-local")) == []
