"""HTTP layer: routes -> Service methods, exceptions -> 4xx with a plain-text message.

Error bodies are plain text on purpose: tinker raises `BadRequestError(<body text>)` for a
non-JSON body, so the user sees "mint-local: <what went wrong and what to do>" verbatim.
"""

from __future__ import annotations

import asyncio
import inspect
import io
import json
import sys
import tarfile
import traceback
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from .engine import Engine
from .errors import UserError
from .futures import Worker
from .service import Service

Handler = Callable[[Service, Request], Awaitable[Any]]


class JSONOut(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        # allow_nan: a diverging loss must still reach the client as a number, not a 500.
        return json.dumps(content, allow_nan=True, separators=(",", ":")).encode("utf-8")


def _error(message: str, status: int) -> PlainTextResponse:
    return PlainTextResponse(f"mint-local: {message}", status_code=status)


def _validation_message(e: ValidationError) -> str:
    parts = []
    for err in e.errors()[:5]:
        where = ".".join(str(x) for x in err["loc"]) or "body"
        parts.append(f"{where}: {err['msg']}")
    more = f" (+{e.error_count() - 5} more)" if e.error_count() > 5 else ""
    return f"invalid request for {e.title}: " + "; ".join(parts) + more


# The SDK sends forward_backward in chunks of ~5 MB (its estimate; JSON floats make that ~10 MB),
# so a larger body is a mistake or an attack; it is refused before it is read.
MAX_BODY_BYTES = 32 * 1024 * 1024


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The request body, or a 413 as soon as it is known to exceed `limit` (Content-Length first,
    then counted while streaming, so a lying or missing header cannot make the server hold more)."""
    too_large = UserError(
        f"request body for {request.url.path} is larger than {limit // (1024 * 1024)} MiB; send fewer datums or "
        "shorter sequences per call",
        status=413,
    )
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise UserError(f"invalid Content-Length header {declared[:40]!r}")
        if int(declared) > limit:
            raise too_large
    chunks, total = [], 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


async def body_json(request: Request) -> dict[str, Any]:
    body = await read_body(request)
    try:
        data = json.loads(body or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"malformed JSON body for {request.url.path}: {e}") from None
    except RecursionError:
        raise UserError(_too_deep(request)) from None
    if not isinstance(data, dict):
        raise UserError(f"{request.url.path} expects a JSON object, got {type(data).__name__}")
    return data


def _too_deep(request: Request) -> str:
    return (
        f"the JSON body for {request.url.path} is nested too deeply to read; no request of the API nests more "
        "than a few levels (user_metadata at most 32)"
    )


def endpoint(fn: Handler) -> Callable[[Request], Awaitable[Response]]:
    async def handle(request: Request) -> Response:
        try:
            result = await fn(request.app.state.service, request)
        except UserError as e:
            return _error(e.message, e.status)
        except ValidationError as e:
            return _error(_validation_message(e), 400)
        except RecursionError:  # a nesting json.loads took but a later walk over the request did not
            return _error(_too_deep(request), 400)
        except Exception as e:  # noqa: BLE001 - the server outlives every request
            traceback.print_exc(file=sys.stderr)
            # 400, not 500: tinker retries 5xx for minutes before the user sees anything.
            return _error(f"internal error while handling {request.url.path}: {type(e).__name__}: {e}", 400)
        if isinstance(result, Response):
            return result
        return JSONOut(result)

    return handle


def _int_param(request: Request, name: str, default: int) -> int:
    value = request.query_params.get(name)
    try:
        return default if value is None else max(0, int(value))
    except ValueError:
        raise UserError(f"query parameter {name} must be an integer, got {value!r}") from None


# --- handlers ------------------------------------------------------------------------------------


async def healthz(s: Service, r: Request) -> Any:
    return {"status": "ok"}


def with_body(method: Callable[[Service, dict[str, Any]], Any]) -> Handler:
    """A handler that passes the JSON body to a Service method (sync or async)."""

    async def handle(s: Service, r: Request) -> Any:
        result = method(s, await body_json(r))
        return await result if inspect.isawaitable(result) else result

    return handle


async def auth_token(s: Service, r: Request) -> Any:
    return s.auth_token()


async def capabilities(s: Service, r: Request) -> Any:
    return s.capabilities()


async def retrieve_future(s: Service, r: Request) -> Any:
    """The long poll, told when its client disconnects (a dead client's work is then dropped)."""

    async def disconnected() -> None:
        while (await r.receive())["type"] != "http.disconnect":
            pass

    return await s.retrieve_future(await body_json(r), disconnected)


async def telemetry(s: Service, r: Request) -> Any:
    await read_body(r)
    return {"status": "accepted"}


async def get_sampler(s: Service, r: Request) -> Any:
    return s.get_sampler(r.path_params["sampler_id"])


async def training_runs(s: Service, r: Request) -> Any:
    return s.list_training_runs(_int_param(r, "limit", 20), _int_param(r, "offset", 0))


async def training_run(s: Service, r: Request) -> Any:
    return s.training_run(r.path_params["run_id"])


async def run_checkpoints(s: Service, r: Request) -> Any:
    return s.list_checkpoints(r.path_params["run_id"])


async def checkpoint_item(s: Service, r: Request) -> Any:
    """DELETE .../checkpoints/{weights/NAME}; GET .../checkpoints/{weights/NAME}/archive."""
    run_id, rest = r.path_params["run_id"], r.path_params["rest"]
    if r.method == "GET":
        if not rest.endswith("/archive"):
            raise UserError(f"GET {r.url.path}: only .../archive is served here", status=404)
        ref = s.checkpoint_ref(run_id, rest[: -len("/archive")])
        s.engine.store.read_meta(ref)
        # tinker expects a redirect to a download URL (it reads Location, never follows it).
        return RedirectResponse(str(r.url.replace(query="").replace(path=f"/api/v1/mint_local/archive/{ref.run_id}/{ref.checkpoint_id}.tar.gz")), status_code=302)
    s.delete_checkpoint(run_id, rest)
    return Response(status_code=204)


async def archive(s: Service, r: Request) -> Any:
    path = r.path_params["rest"]
    if not path.endswith(".tar.gz"):
        raise UserError("archive URLs end in .tar.gz", status=404)
    run_id, _, checkpoint_id = path[: -len(".tar.gz")].partition("/")
    ref = s.checkpoint_ref(run_id, checkpoint_id)
    folder = s.engine.store.dir_for(ref)
    s.engine.store.read_meta(ref)

    def pack() -> bytes:
        # The files sit at the archive's root, as in a PEFT adapter folder: unpacking into a
        # folder gives one that PeftModel.from_pretrained (and tinker-cookbook's weights tools) load.
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            for f in sorted(folder.iterdir()):
                if f.is_file():
                    tar.add(f, arcname=f.name)
        return buf.getvalue()

    data = await asyncio.to_thread(pack)
    return Response(data, media_type="application/gzip", headers={"Content-Disposition": f'attachment; filename="{ref.name}.tar.gz"'})


async def user_checkpoints(s: Service, r: Request) -> Any:
    return s.list_user_checkpoints(_int_param(r, "limit", 100), _int_param(r, "offset", 0))


async def sessions(s: Service, r: Request) -> Any:
    return s.list_sessions(_int_param(r, "limit", 20), _int_param(r, "offset", 0))


async def session(s: Service, r: Request) -> Any:
    return s.get_session(r.path_params["session_id"])


async def not_found(s: Service, r: Request) -> Any:
    raise UserError(f"{r.method} {r.url.path} is not part of the API mint-local serves", status=404)


ROUTES: list[tuple[str, str, Handler]] = [
    ("GET", "/api/v1/healthz", healthz),
    ("POST", "/api/v1/client/config", with_body(Service.client_config)),
    ("POST", "/api/v1/auth/token", auth_token),
    ("POST", "/api/v1/create_session", with_body(Service.create_session)),
    ("POST", "/api/v1/session_heartbeat", with_body(Service.session_heartbeat)),
    ("GET", "/api/v1/get_server_capabilities", capabilities),
    ("POST", "/api/v1/telemetry", telemetry),
    ("POST", "/api/v1/create_model", with_body(Service.create_model)),
    ("POST", "/api/v1/get_info", with_body(Service.get_info)),
    ("POST", "/api/v1/unload_model", with_body(Service.unload_model)),
    ("POST", "/api/v1/forward", with_body(lambda s, raw: s.forward(raw, backward=False))),
    ("POST", "/api/v1/forward_backward", with_body(lambda s, raw: s.forward(raw, backward=True))),
    ("POST", "/api/v1/optim_step", with_body(Service.optim_step)),
    ("POST", "/api/v1/save_weights", with_body(Service.save_weights)),
    ("POST", "/api/v1/save_weights_for_sampler", with_body(Service.save_weights_for_sampler)),
    ("POST", "/api/v1/load_weights", with_body(Service.load_weights)),
    ("POST", "/api/v1/create_sampling_session", with_body(Service.create_sampling_session)),
    ("POST", "/api/v1/asample", with_body(Service.sample)),
    ("POST", "/api/v1/retrieve_future", retrieve_future),
    ("GET", "/api/v1/samplers/{sampler_id}", get_sampler),
    ("POST", "/api/v1/weights_info", with_body(Service.weights_info)),
    ("GET", "/api/v1/training_runs", training_runs),
    ("GET", "/api/v1/training_runs/{run_id}", training_run),
    ("GET", "/api/v1/training_runs/{run_id}/checkpoints", run_checkpoints),
    ("GET", "/api/v1/training_runs/{run_id}/checkpoints/{rest:path}", checkpoint_item),
    ("DELETE", "/api/v1/training_runs/{run_id}/checkpoints/{rest:path}", checkpoint_item),
    ("GET", "/api/v1/mint_local/archive/{rest:path}", archive),
    ("GET", "/api/v1/checkpoints", user_checkpoints),
    ("GET", "/api/v1/sessions", sessions),
    ("GET", "/api/v1/sessions/{session_id}", session),
    ("POST", "/api/v1/mint/forward_backward_reverse_kl", with_body(Service.forward_backward_reverse_kl)),
    ("POST", "/api/v1/mint/checkpoints/interpolate", with_body(Service.interpolate_checkpoints)),
]


class ExactPaths:
    """The ASGI entry point: a request for a path without parameters (every call of a training or
    sampling loop: asample, retrieve_future, forward_backward, ...) goes straight to its handler
    by one dict lookup; the rest (paths with parameters, HEAD, unknown paths, lifespan) goes
    through Starlette. Each sample costs the SDK two HTTP requests, and Starlette's way there
    (its error and exception middleware, then a regex match against each route in turn until
    one fits) was ~15% of the event loop's busy time in a cProfile of 16 concurrent samples; the
    handlers catch their own errors (`endpoint`), so skipping that middleware changes no answer."""

    def __init__(self, app: Starlette, exact: dict[tuple[str, str], Callable[[Request], Awaitable[Response]]]) -> None:
        self.app = app
        self.exact = exact

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            handle = self.exact.get((scope["method"], scope["path"]))
            if handle is not None:
                scope["app"] = self.app  # what Request.app (and so app.state.service) reads
                response = await handle(Request(scope, receive, send))
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(engine: Engine, worker: Worker, *, hosted_parity: bool = False, jwt_auth: bool = True) -> ExactPaths:
    """The HTTP app over an engine; `worker` is the thread that built the engine and runs its jobs."""

    @asynccontextmanager
    async def lifespan(app: Starlette):  # type: ignore[no-untyped-def]
        app.state.service = Service(engine, worker, asyncio.get_running_loop(), hosted_parity=hosted_parity,
                                    jwt_auth=jwt_auth)
        yield
        app.state.service.worker.stop()

    routes = [Route(path, endpoint(fn), methods=[method]) for method, path, fn in ROUTES]
    routes.append(Route("/{rest:path}", endpoint(not_found), methods=["GET", "POST", "PUT", "DELETE", "PATCH"]))
    exact = {(method, path): endpoint(fn) for method, path, fn in ROUTES if "{" not in path}
    return ExactPaths(Starlette(routes=routes, lifespan=lifespan), exact)
