"""How many torch threads the server uses: the CPUs other work leaves free, re-read as it changes.

Why: mint-local runs beside the user's editor, tests and agent. A parallel torch op waits for
its slowest thread, and with other processes on the cores one of its threads is often not
running: the ~30M model's two-thread decode step took 363 ms instead of 12 ms at load 7, and a
multi-turn workload beside two busy processes did not finish in 400 s with two threads, 72 s
with one. So the server starts with the CPUs that are free at launch and, while it works,
re-counts them every few seconds from what the other processes actually used (/proc/stat minus
this process's own time), never more than torch's own default. `--threads N` fixes the count.

Standard library only, except the `torch.set_num_threads` call handed in by the caller.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

# How often a busy server re-counts the free CPUs. Long enough that one count averages over
# many scheduler time slices, short enough to follow a test run that starts beside it.
RECOUNT_S = 2.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def free_at_launch(cpus: int) -> int:
    """CPUs free now, from /proc/loadavg: the one-minute load and the tasks running this instant
    (minus this one), whichever says busier; the whole count where /proc is missing."""
    try:
        fields = Path("/proc/loadavg").read_text(encoding="ascii").split()
        load, running = float(fields[0]), int(fields[3].split("/")[0]) - 1
    except (OSError, ValueError, IndexError):
        return cpus
    return _clamp(cpus - max(load, running), cpus)


def _clamp(free: float, cpus: int) -> int:
    return max(1, min(cpus, int(free + 0.5)))


def _machine_busy_ticks() -> int | None:
    try:
        first = Path("/proc/stat").read_text(encoding="ascii").split("\n", 1)[0].split()
    except OSError:
        return None
    # cpu user nice system idle iowait irq softirq steal ...: busy = all but idle and iowait
    values = [int(v) for v in first[1:9]]
    return sum(values) - values[3] - values[4]


def _own_ticks() -> int | None:
    try:
        fields = Path("/proc/self/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) + int(fields[12])  # utime + stime of every thread of this process


class ThreadGovernor:
    """Sets torch's thread count to the CPUs the other processes leave free, at most `ceiling`.

    `tick()` is cheap (a clock read) and is called by the worker between bounded pieces of work;
    every RECOUNT_S it reads the CPU time the machine and this process used since the last count
    and sets the threads to the CPUs the others did not use."""

    def __init__(self, set_threads: Callable[[int], None], ceiling: int, cpus: int | None = None) -> None:
        self.cpus = cpus or usable_cpus()
        self.ceiling = max(1, min(ceiling, self.cpus))
        self._set = set_threads
        self.threads = min(self.ceiling, free_at_launch(self.cpus))
        self._set(self.threads)
        self._mark = self._sample()

    def _sample(self) -> tuple[float, int, int] | None:
        machine, own = _machine_busy_ticks(), _own_ticks()
        return None if machine is None or own is None else (time.monotonic(), machine, own)

    def tick(self) -> None:
        if self._mark is None or time.monotonic() - self._mark[0] < RECOUNT_S:
            return
        now = self._sample()
        if now is None:
            return
        elapsed = now[0] - self._mark[0]
        others = max(0, (now[1] - self._mark[1]) - (now[2] - self._mark[2])) / CLOCK_TICKS / elapsed
        self._mark = now
        threads = min(self.ceiling, _clamp(self.cpus - others, self.cpus))
        if threads != self.threads:
            print(f"mint-local: {threads} CPU thread(s): other processes used {others:.1f} of {self.cpus} CPUs", file=sys.stderr, flush=True)
            self.threads = threads
            self._set(threads)
