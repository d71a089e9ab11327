"""What the reliability tests and bench/probe_reliability.py both use (one copy): the hostile
sources that crashed the parsers, the process counting in /proc, the script that leaves children
behind, the script that prints a key into every verdict field, and the link racer."""

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from mint_migrate import pyparse

# name -> source. The first ones crashed or stalled `lint`/`migrate` before pyparse existed.
HOSTILE = {
    "deep-parens": "x = " + "(" * 2000 + "1" + ")" * 2000 + "\n",  # libcst: SIGSEGV
    "deep-lists": "x = " + "[" * 5000 + "1" + "]" * 5000 + "\n",  # libcst: SIGSEGV
    "deep-dicts": "x = " + "{1: " * 3000 + "1" + "}" * 3000 + "\n",
    "unclosed-brackets": "[" * 5000 + "\n",  # CPython: MemoryError
    "lambda-chain": "f = " + "lambda: " * 5000 + "1\n",  # libcst: SIGSEGV
    "subscript-chain": "x = a" + "[0]" * 3000 + "\n",  # libcst: minutes
    "unary-chain": "x = " + "-" * 5000 + "1\n",  # libcst: minutes
    "elif-chain": "if a:\n    pass\n" + "elif a:\n    pass\n" * 3000,
    "binop-chain": "x = " + "1 + " * 100_000 + "1\n",
    "deep-indent": "".join("    " * i + "if a:\n" for i in range(120)) + "    " * 120 + "pass\n",
    "nul-in-string": 'import mint\nMODEL = "Qwen\x00/Qwen3"\nURL = "https://mint.macaron.xin"\n',
    "oversized": "# " + "x" * pyparse.MAX_CHARS + "\n",
}


MARKER = "MINT_TEST_PROCESS_MARK"

# Starts a child in a session of its own and a child that shares (holds) its stdout, then either
# finishes (leaving both behind) or keeps running. Takes --smoke and --steps like a scaffold.
LEAVES_CHILDREN = """\
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


# Leaves daemons that clear their environment (no tag, no MARKER) and leave the script's process
# group: a setsid child that ignores SIGTERM, and a double-forked one that holds the script's stdout.
# Writes every pid to ./pids (the script's first), then finishes or keeps running like LEAVES_CHILDREN.
CLEARS_ENV = """\
import os, pathlib, subprocess, sys, time
assert "--smoke" in sys.argv and "--steps" in sys.argv
stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"
setsid_child = subprocess.Popen([sys.executable, "-c", stubborn], env={}, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
daemon = pathlib.Path(__file__).with_name("daemon")
double = (
    "import os, time\\n"
    "if os.fork():\\n    os._exit(0)\\n"
    "os.setsid()\\n"
    "if os.fork():\\n    os._exit(0)\\n"
    f"open({str(daemon)!r}, 'w').write(str(os.getpid()))\\n"
    "time.sleep(300)\\n"
)
subprocess.run([sys.executable, "-c", double], env={})  # its grandchild keeps our stdout open
while not daemon.exists() or not daemon.read_text():
    time.sleep(0.01)
pathlib.Path(__file__).with_name("pids").write_text(f"{os.getpid()} {setsid_child.pid} {daemon.read_text()}")
print("METRIC step=1 loss=1.5 tokens=4 step_s=0.1", flush=True)
if FINISH:
    print("METRIC step=2 loss=1.25 tokens=4 step_s=0.1", flush=True)
    print("METRIC done=1 steps=2", flush=True)
    sys.exit(0)
time.sleep(300)
"""


def write_daemon_script(folder: Path, finish: bool) -> Path:
    script = folder / "train.py"
    script.write_text(CLEARS_ENV.replace("FINISH", str(finish)), encoding="utf-8")
    return script


def write_script(folder: Path, finish: bool) -> Path:
    script = folder / "train.py"
    script.write_text(LEAVES_CHILDREN.replace("FINISH", str(finish)), encoding="utf-8")
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


SENTINEL = "mint-sentinel-5Fq9Xk2LwP7rTb"  # the user's key: no sk- shape, so only the secrets list catches it
KEY_SHAPED = "sk-live-QQ81bcZr02Vx9Lm4"  # a key-shaped string the user never configured

LEAKY_SCRIPT = f"""\
import pathlib, sys
assert "--smoke" in sys.argv and "--steps" in sys.argv
env = dict(line.split("=", 1) for line in pathlib.Path(__file__).with_name(".env").read_text().split())
key, other = env["MINT_API_KEY"], {KEY_SHAPED!r}
print(f"RUN served_model={{key}}", flush=True)
print(f"METRIC step=1 loss={{key}} tokens=4 step_s=0.1 accepted={{other}}", flush=True)
print(f'SAMPLE step=1 text="the key is {{key}} and {{other}}"', flush=True)
print(f"METRIC step=2 loss=1.0 tokens=4 step_s={{other}}", flush=True)
print(f"METRIC done=1 steps=2 checkpoint=tinker://{{key}}/weights/{{other}}", flush=True)
raise SystemExit(f"could not upload with {{key}} / {{other}}")
"""


def leaked(text: str) -> bool:
    """The sentinel key or the key-shaped string (or a long piece of either) is in `text`."""
    return any(part in text for part in (SENTINEL, SENTINEL[8:], KEY_SHAPED, KEY_SHAPED[3:]))


def assert_clean(text: str, where: str) -> None:
    assert not leaked(text), where


# A racer in its own process: swaps ws/sub (a folder) and ws/flip/train.py (a file) for links to the
# outside folder and its script, and back, as fast as it can, until its stdin closes.
RACER = """\
import os, random, sys, threading, time
ws, outside = sys.argv[1], sys.argv[2]
stop = threading.Event()

def swap(name, parked, link_to):
    # a link for up to 2 ms, the real thing for up to 2 ms, and so on: a check made in one state
    # and a use made in the other is what the race is about
    while not stop.is_set():
        try:
            os.rename(name, parked)
            os.symlink(link_to, name)
            time.sleep(random.random() * 0.002)
            os.unlink(name)
            os.rename(parked, name)
        except OSError:
            pass
        time.sleep(random.random() * 0.002)

for name, parked, link_to in [
    (f"{ws}/sub", f"{ws}/sub.parked", outside),
    (f"{ws}/flip/train.py", f"{ws}/flip/train.parked", f"{outside}/train.py"),
]:
    threading.Thread(target=swap, args=(name, parked, link_to), daemon=True).start()
print("racing", flush=True)
sys.stdin.read()
stop.set()
"""

OUTSIDE_MARK = "OUTSIDE-0xdeadbeef"
# A TRL-looking script (the analyzer reads its learning rate) that only prints a smoke run's lines;
# its outside twin has another rate and a mark, and leaves a sentinel file when it runs.
INSIDE_SCRIPT = """\
import sys

if "--never" in sys.argv:  # read by the analyzer, never run by a smoke run
    from trl import SFTConfig, SFTTrainer

    SFTTrainer(model="Qwen/Qwen3-0.6B", args=SFTConfig(learning_rate=0.000111), train_dataset=None).train()
print("METRIC step=1 loss=1.5 tokens=4 step_s=0.01", flush=True)
print("METRIC step=2 loss=1.25 tokens=4 step_s=0.01", flush=True)
print("METRIC done=1 steps=2", flush=True)
"""
OUTSIDE_SCRIPT = INSIDE_SCRIPT.replace("0.000111", "0.987654").replace(
    "import sys\n", f'import pathlib, sys\npathlib.Path(__file__).with_name("RAN").write_text("{OUTSIDE_MARK}")\n'
) + f'print("{OUTSIDE_MARK}")\n'


def race_places(workspace: Path, outside: Path) -> None:
    for folder in (workspace / "sub", workspace / "flip"):
        folder.mkdir()
        (folder / "train.py").write_text(INSIDE_SCRIPT, encoding="utf-8")
        (folder / "cfg.yaml").write_text("learning_rate: 0.000111\n", encoding="utf-8")
    (outside / "train.py").write_text(OUTSIDE_SCRIPT, encoding="utf-8")
    (outside / "cfg.yaml").write_text(f"learning_rate: 0.987654  # {OUTSIDE_MARK}\n", encoding="utf-8")


@contextlib.contextmanager
def racing(workspace: Path, outside: Path) -> Iterator[None]:
    """RACER swapping workspace/sub and workspace/flip/train.py for links to `outside` meanwhile."""
    racer = subprocess.Popen(
        [sys.executable, "-c", RACER, str(workspace), str(outside)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert racer.stdout is not None and racer.stdout.readline() == b"racing\n"
        yield
    finally:
        racer.communicate(b"")


async def race_reads(client, outside: Path, rounds: int) -> tuple[list[str], dict[str, list[bool]]]:
    """rounds x 6 MCP calls (lint, migrate, smoke launch on sub/ and flip/) while `racing`: (the
    escapes seen: outside content in an answer or the outside script run; per tool, which succeeded)."""
    from mcp import types

    escapes: list[str] = []
    outcomes: dict[str, list[bool]] = {}
    for _ in range(rounds):
        for folder in ("sub", "flip"):
            calls = [
                ("lint_script", {"path": f"{folder}/train.py", "fix": True}),
                ("migrate_script", {"source_path": f"{folder}/train.py", "config_paths": [f"{folder}/cfg.yaml"]}),
                ("launch_smoke_run", {"script_path": f"{folder}/train.py", "timeout_s": 60}),
            ]
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                text = "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))
                if OUTSIDE_MARK in text or "0.987654" in text:
                    escapes.append(f"{name} {arguments}: outside content in the answer")
                if (outside / "RAN").exists():
                    escapes.append(f"{name} {arguments}: the outside script ran")
                    (outside / "RAN").unlink()
                outcomes.setdefault(name, []).append(not result.is_error)
    return escapes, outcomes


async def mcp_run_then(tmp_path: Path, action) -> tuple[list[int], str]:
    """Start a long smoke run through a stdio MCP server, then `action(server_pid)` mid-run."""
    mark = uuid.uuid4().hex
    assert marked(mark) == []
    write_script(tmp_path, finish=False)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "mint_migrate"], cwd=str(tmp_path), env=dict(os.environ, **{MARKER: mark})
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
            [server] = [p for p in during if Path(f"/proc/{p}/cmdline").read_bytes().endswith(b"-m\0mint_migrate\0")]
            await action(server)
            tasks.cancel_scope.cancel()
    return during, mark


def communicate_or_show_stacks(cli: subprocess.Popen, timeout: float) -> tuple[str, str]:
    """cli.communicate(), or a failure that shows where every thread of the CLI was stuck."""
    try:
        return cli.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        cli.send_signal(signal.SIGUSR1)  # faulthandler in the CLI prints all its threads' stacks
        time.sleep(2)
        cli.kill()
        _, err = cli.communicate()
        raise AssertionError(f"the CLI did not end {timeout:.0f} s after the signal; its stacks:\n{err[-6000:]}") from None


def with_default_sigint() -> None:
    """Popen's preexec_fn for a CLI that a test interrupts as Ctrl-C would: SIGINT back to its default.
    A command started in the background of a non-interactive shell (CI runners, `make ... &`, nohup)
    inherits SIGINT ignored, and Python then rightly keeps ignoring it: the test would measure that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)

