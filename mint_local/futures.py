"""Request futures, the model worker thread and per-model `seq_id` ordering.

The SDK submits an operation, gets `{request_id}` back at once, then long-polls
`/api/v1/retrieve_future`. Model work runs on one worker thread, in submission order; within
a training model, requests carrying `seq_id` (1, 2, 3, ... per training client) are queued in
`seq_id` order even when they arrive out of order (tinker sends the chunks of one large
forward_backward concurrently, the first chunk last).
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
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .errors import UserError

Job = Callable[[], dict[str, Any]]
T = TypeVar("T")
# A try_again answer costs the SDK a warning line, so hold each poll open most of its 45 s timeout.
LONG_POLL_S = 30.0
KEEP_RESULTS_S = 600.0
SEQ_GAP_TIMEOUT_S = 10.0


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

    async def wait(self, request_id: str, timeout: float = LONG_POLL_S) -> dict[str, Any]:
        entry = self._entries.get(request_id)
        if entry is None:
            raise UserError(
                f"unknown request_id {request_id!r}: it was never issued by this mint-local process "
                f"(results are kept {int(KEEP_RESULTS_S)} s; a restarted server forgets pending requests)",
                status=404,
            )
        if not entry.done.is_set():
            try:
                await asyncio.wait_for(entry.done.wait(), timeout)
            except TimeoutError:
                return {"type": "try_again", "request_id": request_id, "queue_state": "active"}
        assert entry.payload is not None
        return entry.payload


class Worker:
    """The one thread that touches torch: it loads the model (`call`) and then runs every model
    job in submission order (`submit`).

    Why the same thread for both: once a thread has run parallel torch ops its OpenMP team stays
    alive, and parallel ops on another thread then ran ~1.6x slower on 2 cores (a ~30M-parameter
    training step took 480 ms on the worker when the model was loaded on the main thread, 300 ms
    when loaded on the worker).
    """

    def __init__(self) -> None:
        self._queue: queue.Queue[Callable[[], None] | None] = queue.Queue()
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

        self._queue.put(task)
        return done.result()

    def submit(self, job: Job, report: Callable[[dict[str, Any]], None]) -> None:
        """Queue a job; report(payload) gets its result or its error, on the worker thread."""

        def task() -> None:
            try:
                payload = job()
            except UserError as e:
                payload = {"error": e.message, "category": "user"}
            except Exception as e:  # noqa: BLE001 - the server must outlive any request
                traceback.print_exc(file=sys.stderr)
                payload = {"error": f"mint-local internal error: {type(e).__name__}: {e}", "category": "server"}
            report(payload)

        self._queue.put(task)

    def stop(self) -> None:
        self._queue.put(None)

    def _run(self) -> None:
        while (task := self._queue.get()) is not None:
            task()


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
