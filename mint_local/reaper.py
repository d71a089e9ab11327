"""The reaper of one supervised process tree: `python -I -S reaper.py STATUS_FD COMMAND...`.

mint_local.process starts every supervised command through this file, never imports it. The reaper
makes itself the child subreaper of what it starts (Linux prctl), so a process of the tree that
loses its parent (a double-forked daemon, a child that cleared its environment and called setsid)
is reparented to the reaper, not to init. While the reaper runs, every process of the tree is its
descendant by PPid: that is how the supervisor lists and kills them, by construction, with no
sampling that a quick double fork could slip between.

It starts COMMAND (in the reaper's session, group and environment), writes `started PID` to
STATUS_FD (`failed ERRNO` when COMMAND cannot be executed), reaps every process of the tree, writes
`exited CODE` when COMMAND exits, and exits once the tree is empty: its exit says nothing is left.
SIGTERM, SIGINT and SIGHUP do not end it: the supervisor ends the tree, and the reaper must outlive
it. Standard library only and nothing of this project: it runs isolated (-I -S), and starts fast.
"""

import ctypes
import os
import signal
import sys

PR_SET_CHILD_SUBREAPER = 36
HELD = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _report(status: int, message: str) -> None:
    try:
        os.write(status, message.encode() + b"\n")
    except OSError:  # the supervisor stopped listening; the tree still needs its reaper
        pass


def _exec(command: list[str], inherited: dict[int, object], ready: int) -> None:
    """In the forked child: the signal dispositions COMMAND would have had without the reaper, then exec."""
    for sig in HELD:
        signal.signal(sig, signal.SIG_IGN if inherited[sig] == signal.SIG_IGN else signal.SIG_DFL)
    for name in ("SIGPIPE", "SIGXFSZ"):  # Python ignores these; as subprocess does, the command gets the default
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        os.write(ready, str(exc.errno or 0).encode())
    os._exit(127)


def main() -> None:
    status, command = int(sys.argv[1]), sys.argv[2:]
    os.set_inheritable(status, False)  # the tree must not hold the supervisor's status pipe
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: orphans go to init, as they would without a reaper
        pass
    inherited = {sig: signal.getsignal(sig) for sig in HELD}
    for sig in HELD:  # a handler, not SIG_IGN: exec resets handlers, so COMMAND does not inherit it
        signal.signal(sig, lambda *_: None)
    ready_read, ready_write = os.pipe()  # close-on-exec: a successful exec closes it with nothing written
    pid = os.fork()
    if pid == 0:
        os.close(ready_read)
        _exec(command, inherited, ready_write)
    os.close(ready_write)
    failed = os.read(ready_read, 64)
    os.close(ready_read)
    if failed:
        os.waitpid(pid, 0)
        _report(status, f"failed {failed.decode()}")
        return
    _report(status, f"started {pid}")
    # The output pipe and any passed descriptors are the tree's: holding them here would keep the
    # supervisor reading after the last writer of the tree is gone.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, status)
    os.closerange(status + 1, os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1024)
    while True:
        try:
            child, code = os.waitpid(-1, 0)
        except ChildProcessError:  # no child left: every process of the tree is gone
            return
        if child == pid:
            _report(status, f"exited {os.waitstatus_to_exitcode(code)}")


if __name__ == "__main__":
    main()
