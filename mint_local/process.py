"""Run a child process so that nothing it starts outlives it.

The one process helper of this project: mint-local's launcher runs the server with it, and
mint-migrate's smoke runs run the training script with it. A `Supervised` process
- starts in its own session (so its process group is everything it starts that stays in it, and a
  Ctrl-C meant for the caller does not reach it);
- carries a tag in its environment (MINT_PROCESS_TAG), inherited by everything it starts, so a
  child that moved to a session of its own, or was orphaned, is still found in /proc;
- runs under a caller that is a child subreaper (Linux prctl), so orphans of the tree are
  reparented to the caller, not to init, and can be reaped;
- is watched (unless started with watch=False, as mint-local is): a thread records every
  descendant by its PPid chain (and start time, against PID
  reuse) while the tree runs, so a child that cleared its environment (no tag) and called setsid
  (a group of its own) is still known after its parent exited; an orphan reparented to the caller
  in a session of its own, too quick for the watch, is claimed by the trees then running;
- hands its output to the caller line by line (a reader thread), with a deadline and a cancel
  event, and stops reading once the process has exited even if a leftover child still holds the
  pipe open;
- is stopped by one kill ladder: SIGTERM to the group and every tagged process, a grace period,
  then SIGKILL, and reports what was still running besides the process itself.

Every live Supervised process is registered, so `stop_all()` (called at exit, and by the signal
handlers of long-running front ends) leaves nothing behind. Standard library only: importing this
module pulls in neither torch nor mint_migrate, which is why it lives here and mint_migrate imports it.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import ctypes
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
PR_SET_CHILD_SUBREAPER = 36
# Once the process has exited while others of its tree still run (and may hold the pipe open),
# how long to keep reading before stopping them; their last lines are still collected at stop().
LINGER_AFTER_EXIT_S = 2.0
_POLL_S = 0.02  # how often lines() looks for new output (a sleep: no lock for Ctrl-C to interrupt)

_WATCH_S = 0.2  # how often the watcher reads the process table (a few ms each time)
_LIVE: set[Supervised] = set()
_OURS: dict[str, int] = {}  # tag -> pid of every process started here
_LIVE_LOCK = threading.RLock()  # re-entered by stop_all() from a signal handler
_SUBREAPER: bool | None = None
_WATCHER: threading.Thread | None = None


@dataclass(frozen=True)
class Leftover:
    """A process the supervised one started that was still running when it was stopped;
    `survived`: still running after SIGKILL (another user's, or stuck in the kernel)."""

    pid: int
    command: str
    survived: bool = False


def become_subreaper() -> bool:
    """Make this process the reaper of orphaned descendants (Linux); False where unsupported."""
    global _SUBREAPER
    if _SUBREAPER is None:
        _SUBREAPER = False
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError, AttributeError):
                libc = ctypes.CDLL(None, use_errno=True)
                _SUBREAPER = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    return _SUBREAPER


class Supervised:
    """A child process in its own session, whose whole tree `stop()` ends."""

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
        watch: bool = True,
    ) -> None:
        become_subreaper()
        # A long-lived server that starts no daemons says watch=False: the watch costs a read of the
        # process table every _WATCH_S for as long as it lives, and it would claim every process in a
        # session of its own that the caller starts meanwhile (the caller's own children among them).
        self.watch = watch
        self.tag = f"{name}-{uuid.uuid4().hex}"
        self.started = time.time()
        environment = dict(os.environ if env is None else env)
        environment[TAG_ENV] = self.tag
        self.popen = subprocess.Popen(
            list(command),
            cwd=None if cwd is None else str(cwd),
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            text=True,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
        self.pid = self.popen.pid
        self.timed_out = False
        self.cancelled = False
        self.leftovers: list[Leftover] = []
        self._descendants: dict[int, int] = {}  # pid -> start time (clock ticks) of every process seen in the tree
        self._start_ticks: int | None = None
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
            _OURS[self.tag] = self.pid
        if watch:
            _start_watcher()

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
            if exited_at is None and self.popen.poll() is not None:
                exited_at = now
            # Exited, and the output has not ended LINGER_AFTER_EXIT_S later: something else holds the
            # pipe (a daemon of its tree, found by the watch or not); the run is over either way.
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
        return self.popen.poll()

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    def wait(self, timeout: float | None = None) -> int:
        return self.popen.wait(timeout)

    def tree(self) -> list[int]:
        """Every live process of this tree except the supervised one: its process group, any
        process carrying its tag, every descendant the watcher recorded (still the same process),
        and orphans in a session of their own reparented to this (subreaper) process since it started."""
        if self.watch:
            self._record(_table())
        found = set()
        for pid, info in _processes().items():
            if pid == self.pid or info.zombie:
                continue
            if info.pgid == self.pid or info.tag == self.tag:
                found.add(pid)
        table = _table()
        for pid, ticks in list(self._descendants.items()):
            now = table.get(pid)
            if pid != self.pid and now is not None and now.ticks == ticks and not now.zombie:
                found.add(pid)
        return sorted(found)

    def _record(self, table: dict[int, _Stat]) -> None:
        """Add to the recorded descendants every process whose PPid chain reaches the supervised
        process or one recorded before (each compared by start time, so a reused PID is not taken)."""
        me = table.get(self.pid)
        if self._start_ticks is None and me is not None:
            self._start_ticks = me.ticks
        if self._start_ticks is None:
            return
        known = {pid for pid, ticks in self._descendants.items() if (t := table.get(pid)) is not None and t.ticks == ticks}
        if me is not None and me.ticks == self._start_ticks:
            known.add(self.pid)
        children: dict[int, list[int]] = collections.defaultdict(list)
        for pid, info in table.items():
            children[info.ppid].append(pid)
        queue = list(known)
        while queue:
            for child in children.get(queue.pop(), []):
                info = table[child]
                if child not in known and info.ticks >= self._start_ticks:
                    known.add(child)
                    self._descendants[child] = info.ticks
                    queue.append(child)
        # An orphan reparented here in a session of its own: a daemon of some tree that double-forked
        # faster than the watch. Processes this one starts itself stay in its session (or are _OURS).
        here, session = os.getpid(), os.getsid(0)
        with _LIVE_LOCK:
            ours = set(_OURS.values())
        for pid, info in table.items():
            if info.ppid == here and info.sid != session and pid not in ours and info.ticks >= self._start_ticks:
                if pid not in self._descendants:
                    self._descendants[pid] = info.ticks

    # --- the kill ladder -------------------------------------------------------------------

    def stop(self, grace_s: float = 5.0) -> list[Leftover]:
        """End the process and everything it started: SIGTERM, `grace_s` to exit, then SIGKILL.

        Returns (and keeps in .leftovers) the processes besides the supervised one that were
        still running, with their command lines, so a caller can say what was left behind.
        """
        others = self.tree()
        infos = _processes()
        self.leftovers += [Leftover(pid, infos[pid].command) for pid in others if pid in infos]
        self._signal_all(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and (self.popen.poll() is None or self.tree()):
            _reap_orphans()
            time.sleep(0.05)
        if self.popen.poll() is None or self.tree():
            self._signal_all(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=10)
        end = time.monotonic() + 5
        while self.tree() and time.monotonic() < end:  # SIGKILL cannot be refused; this is their exit
            _reap_orphans()
            time.sleep(0.05)
        _reap_orphans()
        if survivors := set(self.tree()):  # SIGKILL did not end them: say so
            infos = _processes()
            self.leftovers = [Leftover(p.pid, p.command, p.pid in survivors) for p in self.leftovers]
            self.leftovers += [Leftover(pid, infos[pid].command if pid in infos else "?", True)
                               for pid in sorted(survivors - {p.pid for p in self.leftovers})]
        self._reader.join(timeout=5)  # every writer is gone, so the rest of the output is in the queue
        with _LIVE_LOCK:
            _LIVE.discard(self)
        return self.leftovers

    def _signal_all(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)
        for pid in self.tree():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)

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
    while time.monotonic() < deadline and any(p.popen.poll() is None or p.tree() for p in live):
        time.sleep(0.05)
    for proc in live:
        with contextlib.suppress(Exception):  # best effort: keep stopping the others
            proc.stop(grace_s=0)


atexit.register(stop_all)


# --- /proc -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Info:
    ppid: int
    pgid: int
    zombie: bool
    tag: str | None
    command: str


def _processes() -> dict[int, _Info]:
    """Live processes of this user from /proc (empty where there is no /proc)."""
    found: dict[int, _Info] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            environ = (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # gone, or not ours to read
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        tag = None
        for item in environ.split(b"\0"):
            if item.startswith(TAG_ENV.encode() + b"="):
                tag = item.split(b"=", 1)[1].decode(errors="replace")
                break
        command = cmdline.replace(b"\0", b" ").decode(errors="replace").strip()
        found[int(entry.name)] = _Info(
            ppid=int(fields[1]), pgid=int(fields[2]), zombie=fields[0] == "Z", tag=tag, command=command[:300]
        )
    return found


@dataclass(frozen=True)
class _Stat:
    ppid: int
    sid: int
    ticks: int  # start time after boot, in clock ticks: with the pid, names one process for ever
    zombie: bool


def _table() -> dict[int, _Stat]:
    """pid -> (ppid, session, start time, zombie) of every process, from /proc/PID/stat alone (cheap
    enough to read every _WATCH_S)."""
    found: dict[int, _Stat] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read().decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        try:
            found[int(name)] = _Stat(ppid=int(fields[1]), sid=int(fields[3]), ticks=int(fields[19]), zombie=fields[0] == "Z")
        except (IndexError, ValueError):
            continue
    return found


def _start_watcher() -> None:
    """One thread records the descendants of every live Supervised process; it ends with the last."""
    global _WATCHER
    with _LIVE_LOCK:
        if _WATCHER is not None:
            return
        _WATCHER = threading.Thread(target=_watch, name="supervised-watch", daemon=True)
        _WATCHER.start()


def _watch() -> None:
    global _WATCHER
    while True:
        with _LIVE_LOCK:
            live = [proc for proc in _LIVE if proc.watch]
            if not live:  # decided under the lock _start_watcher takes: a new process starts a new watch
                _WATCHER = None
                return
        table = _table()
        for proc in live:
            with contextlib.suppress(Exception):  # a watch that fails once must not end the watching
                proc._record(table)
        time.sleep(_WATCH_S)


def _reap_orphans() -> None:
    """Collect the exit status of orphans reparented to this subreaper, so none stays a zombie."""
    me = os.getpid()
    with _LIVE_LOCK:
        ours, started = set(_OURS), set(_OURS.values())
    for pid, info in _processes().items():
        # Only orphans of trees started here; each started process itself is its Popen's to wait for.
        if info.ppid == me and info.zombie and info.tag in ours and pid not in started:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
