"""Engine calls of the MCP server run in a worker process, with a deadline, killed when not wanted.

A thread cannot be stopped: a migration that hostile input keeps busy (or a lint of a huge file)
would go on using a core after the client gave up, and the next call would queue behind it. So
the server runs the tools that read user input (migrate, lint, preflight: `ToolSpec.isolated`) in a
process of their own, forked for each call from a
fork server that has the engine imported already (a fork costs milliseconds, a fresh interpreter a
second of CPU); the call runs under the same read fence the tool has and sends back one answer.
The server kills the worker when the deadline passes or the call is cancelled (the client went
away, the server stops). The fork server ends with the server. Plumbing only: what each call does
is the engine's.
"""

import multiprocessing
import multiprocessing.connection
import os
import threading
import time
from pathlib import Path
from typing import Any

DEADLINE_ENV = "MINT_MIGRATE_TOOL_DEADLINE_S"
DEFAULT_DEADLINE_S = 300.0


def deadline_s() -> float:
    """The deadline of one engine call: MINT_MIGRATE_TOOL_DEADLINE_S, else 300 s."""
    try:
        value = float(os.environ.get(DEADLINE_ENV, DEFAULT_DEADLINE_S))
    except ValueError:
        return DEFAULT_DEADLINE_S
    return value if value > 0 else DEFAULT_DEADLINE_S


def _tool(root: Path, roots: list[Path], args: dict[str, Any]) -> dict[str, Any]:
    """One registry tool (mint_migrate/tools) as the MCP server runs it, here in the worker: its request
    model, the fenced Env, the engine call, then the summary (or everything, with detail='full')."""
    from mint_migrate.tools import TOOLS
    from mint_migrate.tools.base import Env
    from mint_migrate.workspace import inside, read_fence, read_text_inside

    tool = next(t for t in TOOLS if t.name == args["tool"])
    request = tool.request.model_validate(args["arguments"])
    env = Env(front="mcp", workspace=root, read=lambda path: inside(path, root, roots),
              read_bytes=lambda path: read_text_inside(path, root, roots), fence=lambda: read_fence(roots))
    result = tool.run(request, env)
    shown = (tool.full if getattr(request, "detail", "summary") == "full" else tool.summary)(result, request, env)
    return {"result": shown.model_dump(mode="json"), "files": [str(p) for p in tool.files(result)]}


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """{"result": the tool's result as JSON, "files": what it wrote} or {"error": a message for the user}."""
    from mint_migrate.errors import MintMigrateError

    root, roots = Path(request["root"]), [Path(r) for r in request["roots"]]
    os.environ.clear()  # the server's environment now, not the fork server's from when it started
    os.environ.update(request["environment"])
    try:
        return _tool(root, roots, request["args"])
    except (MintMigrateError, FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        return {"error": str(exc)}
    except RecursionError:
        return {"error": "the input is nested too deeply to read; simplify it or leave that file out."}
    except MemoryError:
        return {"error": "the input needs more memory than the tool may use; leave that file out."}


def _leave_with(server_pid: int) -> None:
    """End this worker when the server that asked is gone, however it went (SIGKILL included): its
    answer has no reader. A worker's parent is the fork server, which outlives the server while
    any worker runs, so the server itself is watched."""
    while True:
        time.sleep(0.5)
        try:
            os.kill(server_pid, 0)
        except ProcessLookupError:
            os._exit(1)
        except PermissionError:  # a pid reused by another user's process: the server is gone
            os._exit(1)


def run_to_pipe(connection: multiprocessing.connection.Connection, request: dict[str, Any]) -> None:
    """A worker's whole life: answer `request` on `connection`, then leave at once."""
    threading.Thread(target=_leave_with, args=(request["server_pid"],), daemon=True).start()
    try:
        reply = answer(request)
    except Exception as exc:  # noqa: BLE001 - a bug still gets a message, not a silent worker
        reply = {"error": f"mint-migrate failed on this input ({type(exc).__name__}: {exc}); please report it."}
    connection.send(reply)
    connection.close()
    os._exit(0)  # nothing to tear down: the answer is out


_CONTEXT: multiprocessing.context.BaseContext | None = None
_CONTEXT_LOCK = threading.Lock()


def context() -> multiprocessing.context.BaseContext:
    """The fork server's context, the engine preloaded in it (started on first use)."""
    global _CONTEXT
    with _CONTEXT_LOCK:
        if _CONTEXT is None:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["mint_migrate.worker", "mint_migrate.tools", "mint_migrate.migrate",
                                        "mint_migrate.lint", "mint_migrate.preflight", "mint_migrate.worker_warm"])
            _CONTEXT = ctx
        return _CONTEXT


def kill_all() -> None:
    """Kill every worker still running (the server is being terminated: no atexit will run)."""
    for process in multiprocessing.active_children():
        if process.name.startswith("mint-migrate-"):
            process.kill()


def start(request: dict[str, Any]) -> tuple[multiprocessing.process.BaseProcess, multiprocessing.connection.Connection]:
    """A started worker for `request` and the end of the pipe its answer comes on (blocking: call it
    from a thread)."""
    ctx = context()
    receive, send = ctx.Pipe(duplex=False)
    process = ctx.Process(target=run_to_pipe, args=(send, request), name=f"mint-migrate-{request['call']}",
                          daemon=True)
    process.start()
    send.close()
    return process, receive
