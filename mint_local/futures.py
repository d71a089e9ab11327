"""Request futures, the model worker thread and per-model `seq_id` ordering.

The SDK submits an operation, gets `{request_id}` back at once, then long-polls
`/api/v1/retrieve_future`. Model work runs on one worker thread (Worker), which interleaves
queued jobs with bounded steps of the batched sampler; within a training model, requests
carrying `seq_id` (1, 2, 3, ... per training client) are queued in `seq_id` order even when
they arrive out of order (tinker sends the chunks of one large forward_backward concurrently,
the first chunk last).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import queue
import sys
import threading
import time
import traceback
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from .errors import UserError

Job = Callable[[], dict[str, Any]]
T = TypeVar("T")
# A try_again answer costs the SDK a warning line, so hold each poll open most of its 45 s timeout.
LONG_POLL_S = 30.0
KEEP_RESULTS_S = 600.0
SEQ_GAP_TIMEOUT_S = 10.0


class ClientGone(Exception):
    """The client closed the connection of its long poll."""


@dataclass
class _Entry:
    done: asyncio.Event = field(default_factory=asyncio.Event)
    payload: dict[str, Any] | None = None
    finished_at: float | None = None


class FutureStore:
    """request_id -> result, completed from the worker thread via the event loop."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._finished: deque[tuple[float, str]] = deque()
        self._ids = itertools.count(1)

    def create(self) -> str:
        request_id = f"req-{next(self._ids)}"
        self._entries[request_id] = _Entry()
        return request_id

    def resolve(self, request_id: str, payload: dict[str, Any]) -> None:
        entry = self._entries.get(request_id)
        if entry is None:
            return
        entry.payload = payload
        entry.finished_at = time.monotonic()
        entry.done.set()
        self._finished.append((entry.finished_at, request_id))
        self._prune()

    def _prune(self) -> None:
        horizon = time.monotonic() - KEEP_RESULTS_S
        while self._finished and self._finished[0][0] < horizon:
            _, request_id = self._finished.popleft()
            self._entries.pop(request_id, None)

    async def wait(
        self, request_id: str, timeout: float = LONG_POLL_S, disconnected: Callable[[], Awaitable[None]] | None = None
    ) -> dict[str, Any]:
        """The result, or a try_again answer after `timeout`; raises ClientGone when
        `disconnected()` (the poll's connection closing) comes first."""
        entry = self._entries.get(request_id)
        if entry is None:
            raise UserError(
                f"unknown request_id {request_id!r}: it was never issued by this mint-local process "
                f"(results are kept {int(KEEP_RESULTS_S)} s; a restarted server forgets pending requests)",
                status=404,
            )
        if not entry.done.is_set():
            waiters = [asyncio.ensure_future(entry.done.wait())]
            if disconnected is not None:
                waiters.append(asyncio.ensure_future(disconnected()))
            finished, pending = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            for waiter in pending:
                waiter.cancel()
            if not entry.done.is_set():
                if len(waiters) > 1 and waiters[1] in finished:
                    raise ClientGone(request_id)
                return {"type": "try_again", "request_id": request_id, "queue_state": "active"}
        assert entry.payload is not None
        return entry.payload


class Batcher(Protocol):
    """Work that advances in bounded steps, many requests at once (the engine's sampler,
    sampling.Decoder). Each request reports its own result."""

    def add(self, request: Any) -> None: ...

    def pending(self) -> bool: ...

    def step(self) -> None: ...

    def cancel(self, owner: str, message: str) -> int: ...

    def fail_all(self, message: str) -> None: ...


@dataclass
class _Task:
    job: Job
    report: Callable[[dict[str, Any]], None]
    owner: str | None


def _failure(e: Exception) -> dict[str, Any]:
    """The failed-future payload for an exception raised by a job."""
    if isinstance(e, UserError):
        return {"error": e.message, "category": "user"}
    traceback.print_exc(file=sys.stderr)
    return {"error": f"mint-local internal error: {type(e).__name__}: {e}", "category": "server"}


def _run_job(job: Job) -> dict[str, Any]:
    try:
        return job()
    except Exception as e:  # noqa: BLE001 - the server must outlive any request
        return _failure(e)


class Worker:
    """The one thread that touches torch: it loads the model (`call`), then runs the scheduler.

    Each iteration runs one queued job (training steps, saves, ...; taken round-robin across
    owners, i.e. sessions, in submission order within one) and one bounded step of the sampler
    (prefill of new requests, one token for the requests in flight). So a long sampling request
    and another client's forward interleave: neither waits for the other to finish. Jobs of one
    training model stay in order: SeqGate releases them in seq_id order, all under one owner.

    Why one thread for everything: once a thread has run parallel torch ops its OpenMP team
    stays alive, and parallel ops on another thread then ran ~1.6x slower on 2 cores (a
    ~30M-parameter training step took 480 ms on the worker when the model was loaded on the main
    thread, 300 ms when loaded on the worker).
    """

    def __init__(self) -> None:
        self._inbox: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._jobs: OrderedDict[str | None, deque[_Task]] = OrderedDict()
        self.batcher: Batcher | None = None
        # Called between pieces of work while busy (the engine's CPU thread governor).
        self.tick: Callable[[], None] | None = None
        self._thread = threading.Thread(target=self._run, name="mint-local-worker", daemon=True)
        self._thread.start()

    def call(self, fn: Callable[[], T]) -> T:
        """Run fn on the worker thread and return its result (or raise its exception)."""
        done: concurrent.futures.Future[T] = concurrent.futures.Future()

        def task() -> None:
            try:
                done.set_result(fn())
            except BaseException as e:  # noqa: BLE001 - handed to the caller, who decides
                done.set_exception(e)

        self._inbox.put(task)
        return done.result()

    def attach(self, batcher: Batcher) -> None:
        """Use `batcher` for sampling requests (set once the engine is loaded)."""
        self.call(lambda: setattr(self, "batcher", batcher))

    def submit(self, job: Job, report: Callable[[dict[str, Any]], None], owner: str | None = None) -> None:
        """Queue a job; report(payload) gets its result or its error, on the worker thread."""
        self._inbox.put(lambda: self._jobs.setdefault(owner, deque()).append(_Task(job, report, owner)))

    def submit_batched(self, start: Callable[[], Any], report: Callable[[dict[str, Any]], None]) -> None:
        """Hand the batcher the request start() makes on the worker thread (start's errors are reported)."""

        def admit() -> None:
            try:
                request = start()
            except Exception as e:  # noqa: BLE001 - e.g. a checkpoint that no longer loads
                report(_failure(e))
                return
            assert self.batcher is not None, "attach() a batcher before submitting batched work"
            self.batcher.add(request)

        self._inbox.put(admit)

    def soon(self, fn: Callable[[], None]) -> None:
        """Run fn on the worker thread between two steps, without waiting for it (what stops one
        sampling request: the decoder's state is the worker's alone)."""

        def run() -> None:
            try:
                fn()
            except Exception:  # noqa: BLE001 - the worker thread must outlive it
                traceback.print_exc(file=sys.stderr)

        self._inbox.put(run)

    def cancel(self, owner: str, message: str) -> None:
        """Drop every queued job and batched request of `owner`; each reports `message` as its error."""

        def drop() -> None:
            tasks = self._jobs.pop(owner, deque())
            for task in tasks:
                task.report({"error": message, "category": "user"})
            dropped = len(tasks) + (self.batcher.cancel(owner, message) if self.batcher else 0)
            if dropped:
                print(f"mint-local: dropped {dropped} queued request(s) of {owner}: {message}", file=sys.stderr, flush=True)

        self._inbox.put(drop)

    def stop(self) -> None:
        self._inbox.put(None)

    def _busy(self) -> bool:
        return bool(self._jobs) or (self.batcher is not None and self.batcher.pending())

    def _run(self) -> None:
        while True:
            # Take everything that arrived; wait only when there is nothing to do.
            try:
                message = self._inbox.get(block=not self._busy())
                while True:
                    if message is None:
                        return
                    message()
                    message = self._inbox.get_nowait()
            except queue.Empty:
                pass
            if self._jobs:
                owner, tasks = next(iter(self._jobs.items()))
                task = tasks.popleft()
                if tasks:
                    self._jobs.move_to_end(owner)
                else:
                    del self._jobs[owner]
                task.report(_run_job(task.job))
            if self.batcher is not None and self.batcher.pending():
                try:
                    self.batcher.step()
                except Exception as e:  # noqa: BLE001 - the sampler reports its own failures; this is the last line
                    traceback.print_exc(file=sys.stderr)
                    self.batcher.fail_all(f"mint-local internal error while sampling: {type(e).__name__}: {e}")
            if self.tick is not None:
                self.tick()


class SeqGate:
    """Releases one training model's jobs in seq_id order (event-loop thread only)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, release: Callable[[str, Job], None]) -> None:
        self._loop = loop
        self._release = release
        self._next = 1
        self._pending: dict[int, tuple[str, Job] | None] = {}
        self._accepted: dict[int, str] = {}
        self._timer: asyncio.TimerHandle | None = None

    def duplicate(self, seq_id: int | None) -> str | None:
        """The request_id already issued for this seq_id (a client retry), if any."""
        return None if seq_id is None else self._accepted.get(seq_id)

    def arrive(self, seq_id: int | None, request: tuple[str, Job] | None) -> None:
        """Queue a job (or, with request=None, mark a rejected request's seq_id as used)."""
        if seq_id is None or seq_id < self._next:
            if request is not None:
                self._release(*request)
            return
        if request is not None:
            self._accepted[seq_id] = request[0]
        self._pending[seq_id] = request
        self._drain()
        if self._pending and self._timer is None:
            self._timer = self._loop.call_later(SEQ_GAP_TIMEOUT_S, self._skip_gap)

    def _drain(self) -> None:
        while self._next in self._pending:
            request = self._pending.pop(self._next)
            self._next += 1
            if request is not None:
                self._release(*request)
        for old in [s for s in self._accepted if s < self._next - 1000]:
            del self._accepted[old]

    def _skip_gap(self) -> None:
        self._timer = None
        if not self._pending:
            return
        first = min(self._pending)
        print(
            f"mint-local: seq_id {self._next}..{first - 1} never arrived after {SEQ_GAP_TIMEOUT_S:.0f} s; "
            f"running seq_id {first} onwards",
            file=sys.stderr,
            flush=True,
        )
        self._next = first
        self._drain()
        if self._pending:
            self._timer = self._loop.call_later(SEQ_GAP_TIMEOUT_S, self._skip_gap)
