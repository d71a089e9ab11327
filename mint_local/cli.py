"""`mint-local` command line: `mint-local serve [...]` (also `python -m mint_local serve`)."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import ipaddress
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path

LOOPBACK_NAMES = {"localhost", "ip6-localhost"}


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mint-local",
        description="An offline MinT-compatible backend: real `import mint` scripts run against it without credentials, GPU or model hub.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the MinT/Tinker HTTP API")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port; 0 picks a free one (default 8000)")
    serve.add_argument(
        "--model",
        default="tiny",
        help="tiny (default, ~0.3M params), tiny-30m, or a local Hugging Face model folder",
    )
    serve.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"], help="auto uses CUDA (bf16) when present")
    serve.add_argument(
        "--dtype",
        default="auto",
        choices=["auto", "float32", "bfloat16"],
        help="the base model's weights: auto = bfloat16 on CUDA, float32 on CPU (LoRA weights and Adam state are always float32)",
    )
    serve.add_argument(
        "--state-dir",
        default=os.environ.get("MINT_LOCAL_STATE_DIR", ".mint-local"),
        help="where checkpoints and training runs live (default ./.mint-local)",
    )
    serve.add_argument(
        "--serve-any-model",
        action="store_true",
        help="answer every base_model name with the loaded model (for smoke runs of scripts written for hosted models)",
    )
    serve.add_argument(
        "--hosted-parity",
        action="store_true",
        help="refuse what hosted MinT refuses although tinker has it (today: /api/v1/weights_info is a 404, so "
        "create_training_client_from_state* fails as it does on MinT); smoke runs use this",
    )
    serve.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads (default: 1 for models under 10M parameters, else the CPUs other processes leave "
        "free, re-counted every few seconds, at most torch's default)",
    )
    serve.add_argument(
        "--max-context",
        type=int,
        default=None,
        help="tokens per sequence, prompt plus sampled (default: the model's max_position_embeddings, 32768 for "
        "the built-in tiny models, which take any length; a model folder's limit can only be lowered)",
    )
    serve.add_argument(
        "--prefix-cache-mb",
        type=int,
        default=None,
        help="memory for the keys and values of recent prompts, reused by requests that start with one (a "
        "conversation re-sending its history); 0 turns it off (default 256 on the CPU, off on CUDA, where it was "
        "not exact; built-in models only)",
    )
    serve.add_argument("--allow-remote", action="store_true", help="allow binding a non-loopback address")
    serve.add_argument(
        "--no-jwt-auth",
        dest="jwt_auth",
        action="store_false",
        help="advertise no JWT auth, as some MinT endpoints do: the PyPI mindlab-toolkit 0.2.0 then rejects sk- keys",
    )
    return parser


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on accepted sockets whose proto
    # says TCP, and without it every small response waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


def serve(args: argparse.Namespace) -> int:
    if not is_loopback(args.host) and not args.allow_remote:
        print(
            f"mint-local: refusing to bind {args.host}: the API has no real authentication, so it listens on "
            "loopback only. Pass --allow-remote to expose it on other interfaces.",
            file=sys.stderr,
        )
        return 2
    from .tiny_model import VARIANTS

    if args.model not in VARIANTS and not (Path(args.model).expanduser() / "config.json").is_file():
        print(
            f"mint-local: --model {args.model!r} is neither a tiny variant ({', '.join(VARIANTS)}) nor a local "
            "Hugging Face model folder with a config.json (mint-local never downloads models)",
            file=sys.stderr,
        )
        return 2
    try:
        sock = _bind(args.host, args.port)
    except OSError as e:
        print(f"mint-local: cannot listen on {args.host}:{args.port}: {e} (use --port 0 for a free port)", file=sys.stderr)
        return 2
    port = sock.getsockname()[1]

    import torch
    import uvicorn

    from .app import create_app
    from .engine import Engine, log
    from .errors import UserError
    from .futures import Worker

    worker = Worker()
    try:
        engine = worker.call(
            lambda: Engine(model=args.model, device=args.device, dtype=args.dtype, state_dir=Path(args.state_dir), serve_any_model=args.serve_any_model, threads=args.threads, max_context=args.max_context, prefix_cache_mb=args.prefix_cache_mb)
        )
    except UserError as e:
        print(f"mint-local: {e.message}", file=sys.stderr)
        return 2
    worker.tick = engine.thread_governor.tick if engine.thread_governor else None
    prefix = f"prefix cache {engine.prefix_cache_mb} MB" if engine.decoder.prefix is not None else "prefix cache off"
    governed = f" (now; up to {engine.thread_governor.ceiling} as other processes leave CPUs free)" if engine.thread_governor else ""
    log(
        f"serving {engine.name} ({engine.arch}, {engine.num_parameters:,} parameters) on {engine.device} "
        f"{str(engine.dtype).replace('torch.', '')}, {worker.call(torch.get_num_threads)} CPU threads{governed}, {prefix}; state in {engine.store.root}"
    )
    config = uvicorn.Config(
        create_app(engine, worker, hosted_parity=args.hosted_parity, jwt_auth=args.jwt_auth),
        log_level="warning",
        access_log=False,
        lifespan="on",
        # Loopback (or --allow-remote without a proxy in front): no X-Forwarded-* to honour, and
        # the proxy-headers middleware would otherwise wrap every request.
        proxy_headers=False,
        timeout_keep_alive=120,
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    loop_factory = _event_loop_factory()
    log(f"HTTP: uvicorn's {'httptools' if _importable('httptools') else 'h11'} parser on {'uvloop' if loop_factory else 'asyncio'}'s event loop")
    shown_host = f"[{args.host}]" if ":" in args.host else args.host

    async def announce() -> None:
        while not server.started:
            if server.should_exit:
                return
            await asyncio.sleep(0.005)
        print(f"mint-local listening on http://{shown_host}:{port}", flush=True)

    async def run() -> None:
        task = asyncio.create_task(announce())
        await server.serve(sockets=[sock])
        task.cancel()

    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(run())
    return 0


def _importable(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop where it is installed (the `local` extra installs it on Linux and macOS):
    every sample is two HTTP requests, and the event loop's share of each is CPU that the model's
    thread and the SDK's client, on the same cores, then do not get. None: asyncio's own loop."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        sys.exit(serve(args))
