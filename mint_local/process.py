"""Run a child process so that nothing it starts outlives it.

The one process helper of this project: mint-local's launcher runs the server with it, and
mint-migrate's smoke runs run the training script with it. A `Supervised` process
- runs under a reaper of its own (mint_local/reaper.py, one small Python process between the caller
  and the command), which is the child subreaper of the command's tree (Linux prctl): a child that
  cleared its environment, called setsid and was orphaned by a double fork is reparented to the
  reaper, not to init. So while the reaper runs, every process the command started is its
  descendant by PPid, found in one read of /proc whenever it is asked, however quickly the daemon
  forked: by construction, not by sampling. Each tree has its own reaper, so two runs at once never
  claim each other's processes. The reaper reaps them all and exits once the tree is empty;
- starts in its own session (the reaper's: a Ctrl-C meant for the caller does not reach it);
- carries a tag in its environment (MINT_PROCESS_TAG), inherited by everything it starts: what
  still finds the tree's processes if the reaper itself was killed from outside;
- hands its output to the caller line by line (a reader thread), with a deadline and a cancel
  event, and stops reading once the command has exited even if a leftover child still holds the
  pipe open;
- is stopped by one kill ladder: SIGTERM to every process of the tree, a grace period, then SIGKILL
  until the reaper exits (its exit is the proof that nothing is left), and reports what was
  still running besides the command itself.

Every live Supervised process is registered, so `stop_all()` (called at exit, and by the signal
handlers of long-running front ends) leaves nothing behind. Standard library only: importing this
module pulls in neither torch nor mint_migrate, which is why it lives here and mint_migrate imports it.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

TAG_ENV = "MINT_PROCESS_TAG"
_REAPER = str(Path(__file__).with_name("reaper.py"))
_HAS_PROC = os.path.isdir("/proc")
# Once the process has exited while others of its tree still run (and may hold the pipe open),
# how long to keep reading before stopping them; their last lines are still collected at stop().
LINGER_AFTER_EXIT_S = 2.0
_POLL_S = 0.02  # how often lines() looks for new output (a sleep: no lock for Ctrl-C to interrupt)
# SIGKILL cannot be refused, but a process in the kernel (D state) may take a while to go.
_KILL_WAIT_S = 10.0

_LIVE: set[Supervised] = set()
_LIVE_LOCK = threading.RLock()  # re-entered by stop_all() from a signal handler


@dataclass(frozen=True)
class Leftover:
    """A process the supervised one started that was still running when it was stopped;
    `survived`: still running after SIGKILL (another user's, or stuck in the kernel)."""

    pid: int
    command: str
    survived: bool = False


class Supervised:
    """A child process under its own reaper, in its own session, whose whole tree `stop()` ends.
    `.pid` is the command's own process (not the reaper's)."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: dict[str, str] | None = None,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        name: str = "process",
        pass_fds: Sequence[int] = (),
    ) -> None:
        self.args = list(command)
        self.tag = f"{name}-{uuid.uuid4().hex}"
        self.started = time.time()
        environment = dict(os.environ if env is None else env)
        environment[TAG_ENV] = self.tag
        status_read, status_write = os.pipe()
        try:
            self.popen = subprocess.Popen(
                [sys.executable, "-I", "-S", _REAPER, str(status_write), *self.args],
                cwd=None if cwd is None else str(cwd),
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                text=True,
                encoding="utf-8",
                errors="replace",
                start_new_session=True,
                pass_fds=(*pass_fds, status_write),
            )
        except BaseException:
            os.close(status_read)
            raise
        finally:
            os.close(status_write)
        self._status: int | None = status_read
        # poll() runs on the caller's threads and from stop_all() in a signal handler: one reads the
        # pipe at a time (re-entrant: a handler may interrupt a read), and none reads a closed fd.
        self._status_lock = threading.RLock()
        self._status_text = ""
        self._returncode: int | None = None
        self.timed_out = False
        self.cancelled = False
        self.leftovers: list[Leftover] = []
        reaper = _stat(self.popen.pid)  # still there, gone or not: nobody has waited for it yet
        self._reaper_ticks = None if reaper is None else reaper.ticks
        try:
            self.pid = self._started()
        except BaseException:  # the command did not start (or Ctrl-C): leave neither it nor its reaper
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait()
            self._close_status()
            raise
        # A deque, not a queue.Queue: Ctrl-C raises KeyboardInterrupt wherever the main thread is, and
        # one landing just after a Queue took its lock leaves that lock held for ever (the next
        # get() hangs). deque's append/popleft take no lock the main thread could be holding.
        self._lines: collections.deque[str | None] = collections.deque()
        self._eof = self.popen.stdout is None
        self._reader = threading.Thread(target=self._pump, name=f"{name}-output", daemon=True)
        if self.popen.stdout is not None:
            self._reader.start()
        with _LIVE_LOCK:
            _LIVE.add(self)

    def _started(self) -> int:
        """The command's pid, from the reaper's first report; the OSError exec gave when it could not start."""
        assert self._status is not None
        while "\n" not in self._status_text:
            chunk = os.read(self._status, 256)
            if not chunk:
                raise OSError(f"the process reaper ended before starting {self.args[0]!r} (exit code {self.popen.wait()})")
            self._status_text += chunk.decode()
        first, _, self._status_text = self._status_text.partition("\n")
        word, _, value = first.partition(" ")
        if word == "failed":
            self.popen.wait()
            code = int(value)
            raise OSError(code, os.strerror(code), self.args[0])  # FileNotFoundError etc., as Popen raises
        os.set_blocking(self._status, False)
        self._parse_status()
        return int(value)

    def _read_status(self) -> None:
        """Take in what the reaper reported since the last look (never blocks)."""
        with self._status_lock:
            while self._status is not None:
                try:
                    chunk = os.read(self._status, 256)
                except BlockingIOError:
                    break
                if not chunk:  # the reaper is gone; without a report the command's end is the reaper's
                    self._close_status()
                    self._parse_status()
                    if self._returncode is None:
                        self._returncode = self.popen.wait()
                    return
                self._status_text += chunk.decode()
            self._parse_status()

    def _parse_status(self) -> None:
        while "\n" in self._status_text:
            line, _, self._status_text = self._status_text.partition("\n")
            word, _, value = line.partition(" ")
            if word == "exited":
                self._returncode = int(value)

    def _close_status(self) -> None:
        with self._status_lock:
            if self._status is not None:
                with contextlib.suppress(OSError):
                    os.close(self._status)
                self._status = None

    # --- output ----------------------------------------------------------------------------

    def _pump(self) -> None:
        assert self.popen.stdout is not None
        with contextlib.suppress(ValueError, OSError):  # the pipe closed under us at stop()
            for line in self.popen.stdout:
                self._lines.append(line.rstrip("\n"))
        self._lines.append(None)

    def lines(self, deadline: float | None = None, cancel: threading.Event | None = None) -> Iterator[str]:
        """Output lines as they come, until the output ends; or the process has exited and the output
        still has not ended LINGER_AFTER_EXIT_S later (a leftover holds the pipe open, maybe for ever);
        or `deadline` (time.monotonic()) passes (sets .timed_out); or `cancel` is set (sets
        .cancelled). Lines still in the pipe then are returned by `stop()`'s `drained()`."""
        exited_at: float | None = None
        while not self._eof:
            now = time.monotonic()
            if cancel is not None and cancel.is_set():
                self.cancelled = True
                return
            if deadline is not None and now >= deadline:
                self.timed_out = True
                return
            if exited_at is None and self.poll() is not None:
                exited_at = now
            # Exited, and the output has not ended LINGER_AFTER_EXIT_S later: something else holds the
            # pipe (a daemon of its tree); the run is over either way, and stop() ends the daemon.
            if exited_at is not None and now - exited_at > LINGER_AFTER_EXIT_S:
                return
            if not self._lines:
                time.sleep(_POLL_S if deadline is None else max(0.0, min(_POLL_S, deadline - now)))
                continue
            line = self._lines.popleft()
            if line is None:
                self._eof = True
                return
            yield line

    def drained(self) -> list[str]:
        """Lines that arrived after the last one `lines()` handed out (all of them after stop())."""
        found = []
        while self._lines:
            line = self._lines.popleft()
            if line is not None:
                found.append(line)
        return found

    # --- state -----------------------------------------------------------------------------

    def poll(self) -> int | None:
        """The command's exit code (negative: the signal that ended it), None while it runs."""
        self._read_status()
        return self._returncode

    @property
    def returncode(self) -> int | None:
        return self.poll()

    def wait(self, timeout: float | None = None) -> int:
        """The command's exit code once it has exited (its tree may still run); as Popen.wait."""
        end = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(_POLL_S if left is None else min(_POLL_S, left))
        return code

    def tree(self) -> list[int]:
        """Every live process of this tree except the command itself: the reaper's descendants (the
        command's children, and every orphan of the tree, which the reaper adopted)."""
        return sorted(self._members() - {self.pid})

    def _members(self) -> set[int]:
        """The command and every live process it started."""
        if not _HAS_PROC:  # no process table to walk: the reaper's group is all that can be known
            return set() if self.popen.poll() is not None else {self.pid}
        if self.popen.poll() == 0:  # the reaper leaves with 0 only once its tree is empty
            return set()
        table = _table()
        reaper = table.get(self.popen.pid)
        if reaper is not None and not reaper.zombie and reaper.ticks == self._reaper_ticks:
            children: dict[int, list[int]] = collections.defaultdict(list)
            for pid, info in table.items():
                children[info.ppid].append(pid)
            found, queue = set(), [self.popen.pid]
            while queue:
                for child in children.get(queue.pop(), []):
                    if child not in found:
                        found.add(child)
                        queue.append(child)
            return {pid for pid in found if not table[pid].zombie}
        # The reaper was killed from outside (or there is no /proc): its orphans went to init. What
        # is left to know them by: the group they may still be in, the tag they may still carry.
        group = {pid for pid, info in table.items() if info.pgid == self.popen.pid and not info.zombie}
        return group | _tagged(self.tag)

    # --- the kill ladder -------------------------------------------------------------------

    def stop(self, grace_s: float = 5.0) -> list[Leftover]:
        """End the process and everything it started: SIGTERM, `grace_s` to exit, then SIGKILL.

        Returns (and keeps in .leftovers) the processes besides the supervised one that were
        still running, with their command lines, so a caller can say what was left behind.
        """
        self.leftovers += [Leftover(pid, _command(pid)) for pid in self.tree()]
        self._signal_all(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and self._members():
            time.sleep(0.05)
        # SIGKILL, again for any child forked meanwhile, until the tree is empty: then the reaper exits.
        deadline = time.monotonic() + _KILL_WAIT_S
        while (members := self._members()) and time.monotonic() < deadline:
            self._signal_all(signal.SIGKILL, members)
            time.sleep(0.05)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=max(1.0, deadline - time.monotonic()))
        if survivors := self._members() - {self.pid}:  # SIGKILL did not end them: say so
            self.leftovers = [Leftover(p.pid, p.command, p.pid in survivors) for p in self.leftovers]
            self.leftovers += [Leftover(pid, _command(pid), True)
                               for pid in sorted(survivors - {p.pid for p in self.leftovers})]
        if self.popen.poll() is None:  # its tree will not go: the caller must not wait for it for ever
            self.popen.kill()
            self.popen.wait()
        self._read_status()  # the reaper's last report: the command's exit code
        self._close_status()
        if self._reader.ident is not None:  # started: there is an output pipe
            self._reader.join(timeout=5)  # every writer is gone, so the rest of the output is in the queue
        with _LIVE_LOCK:
            _LIVE.discard(self)
        return self.leftovers

    def _signal_all(self, sig: int, members: set[int] | None = None) -> None:
        # One by one, not the group: the reaper is in it, and must outlive the rest of its tree.
        for pid in self._members() if members is None else members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        if not _HAS_PROC:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.popen.pid, sig)

    def __enter__(self) -> Supervised:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def run_to_end(
    command: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None,
    env: dict[str, str] | None,
    deadline: float,
    on_line: Callable[[str], None],
    cancel: threading.Event | None = None,
    name: str = "process",
    pass_fds: Sequence[int] = (),
) -> tuple[int | None, bool]:
    """Run `command` supervised until its output ends, `deadline` (time.monotonic()) passes or
    `cancel` is set, each output line to `on_line`; then stop its whole tree. Returns (exit code,
    or None when it did not end by itself; timed out)."""
    proc = Supervised(command, cwd=cwd, env=env, name=name, pass_fds=pass_fds)
    try:
        for line in proc.lines(deadline=deadline, cancel=cancel):
            on_line(line)
    finally:
        proc.stop()
    for line in proc.drained():
        on_line(line)
    ended = not (proc.timed_out or proc.cancelled)
    return (proc.returncode if ended else None), proc.timed_out


def stop_all(grace_s: float = 1.0) -> None:
    """Stop every live Supervised process at once (at exit, on SIGTERM): SIGTERM to every tree,
    one shared grace period, then SIGKILL. Quick on purpose: a terminated server has seconds."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for proc in live:
        proc._signal_all(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(p._members() for p in live):
        time.sleep(0.05)
    for proc in live:
        with contextlib.suppress(Exception):  # best effort: keep stopping the others
            proc.stop(grace_s=0)


atexit.register(stop_all)


# --- /proc -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Stat:
    ppid: int
    pgid: int
    ticks: int  # start time after boot, in clock ticks: with the pid, names one process for ever
    zombie: bool


def _table() -> dict[int, _Stat]:
    """pid -> (ppid, group, start time, zombie) of every process, from /proc/PID/stat alone (a few ms;
    empty where there is no /proc)."""
    found: dict[int, _Stat] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if name.isdigit() and (stat := _stat(int(name))) is not None:
            found[int(name)] = stat
    return found


def _stat(pid: int) -> _Stat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode(errors="replace")
    except OSError:  # gone
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        return _Stat(ppid=int(fields[1]), pgid=int(fields[2]), ticks=int(fields[19]), zombie=fields[0] == "Z")
    except (IndexError, ValueError):
        return None


def _tagged(tag: str) -> set[int]:
    """Live processes whose environment carries MINT_PROCESS_TAG=tag (reads every process's environ:
    only for a tree whose reaper is gone)."""
    found: set[int] = set()
    wanted = f"{TAG_ENV}={tag}".encode()
    for pid, info in _table().items():
        if info.zombie:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                if wanted in handle.read().split(b"\0"):
                    found.add(pid)
        except OSError:  # gone, or not ours to read
            continue
    return found


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace").strip()[:300]
    except OSError:
        return "?"
