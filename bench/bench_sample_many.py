"""The grpo throughput variant's sliding window (iter_sample_many_async) against mint-local with injected latency.

A small reverse proxy sits between the SDK and mint-local and holds every sampling request
(POST /api/v1/asample) for --latency seconds, like a remote MinT far away. Through it, the same
N sampling requests run three ways in one process, one after the other:

  window      iter_sample_many_async(..., max_in_flight=W), taken from a freshly rendered grpo scaffold
              (throughput variant), all responses collected
  unbounded   asyncio.gather over all N requests at once (no bound on requests in flight)
  sequential  one request at a time

The ideal for a window of W: each request costs the latency plus the server's own time for it
(measured first, without the proxy), and W of them are always in flight, so throughput is at most
W / (latency + service time). The figure to watch is window / ideal (target >= 90%). The pure
latency bound W / latency is printed too.

    python bench/bench_sample_many.py [--requests 40] [--window 8] [--latency 1.0]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import importlib.util
import math
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_latency_proxy(upstream: str, port: int, latency_s: float) -> None:
    """Run a reverse proxy to `upstream` that holds each POST /api/v1/asample for latency_s."""
    import httpx
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    client = httpx.AsyncClient(base_url=upstream, timeout=120, limits=httpx.Limits(max_connections=None))
    hop_by_hop = {"content-length", "transfer-encoding", "connection", "content-encoding"}

    async def forward(request: Request) -> Response:
        if request.url.path.endswith("/asample"):
            await asyncio.sleep(latency_s)
        upstream_response = await client.request(
            request.method,
            request.url.path,
            params=request.query_params,
            content=await request.body(),
            headers={k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")},
        )
        headers = {k: v for k, v in upstream_response.headers.items() if k.lower() not in hop_by_hop}
        return Response(upstream_response.content, status_code=upstream_response.status_code, headers=headers)

    app = Starlette(routes=[Route("/{path:path}", forward, methods=["GET", "POST", "PUT", "DELETE"])])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def start_latency_proxy(upstream: str, latency_s: float) -> tuple[str, subprocess.Popen]:
    """The proxy in its own process, so that it does not share the measured client's CPU time and GIL."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, "--proxy", upstream, str(port), str(latency_s)])
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return f"http://127.0.0.1:{port}", proc
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("the latency proxy did not start") from None
            time.sleep(0.1)


def load_scaffold_helpers():
    """The async helpers exactly as a user gets them: render the grpo throughput variant and import it."""
    from mint_migrate.render import ScaffoldOptions, render_scaffold, write_scripts

    folder = Path(tempfile.mkdtemp(prefix="bench-scaffold-"))  # train.py imports mint_run.py beside it
    path = write_scripts(folder, render_scaffold(ScaffoldOptions(kind="grpo", throughput=True)))
    spec = importlib.util.spec_from_file_location("bench_grpo_scaffold", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def window(helpers, sampler, prompts, params, max_in_flight: int) -> list:
    """Every response through the scaffold's sliding window, in request order."""
    results = [None] * len(prompts)
    async for index, response in helpers.iter_sample_many_async(sampler, prompts, 1, params, max_in_flight):
        results[index] = response
    return results


async def timed(coroutine) -> float:
    started = time.perf_counter()
    results = await coroutine
    elapsed = time.perf_counter() - started
    assert all(r is not None and r.sequences for r in results), "a request came back empty"
    return elapsed


async def run(args: argparse.Namespace) -> None:
    from mint_local.launcher import LocalServer
    from mint_local.testing import TEST_API_KEY

    with LocalServer.start(model="tiny", device="cpu") as server:
        proxy, proxy_process = start_latency_proxy(server.base_url, args.latency)
        helpers = load_scaffold_helpers()
        import mint
        from mint import types

        params = types.SamplingParams(max_tokens=args.max_tokens, temperature=1.0, seed=0)
        prompts = [types.ModelInput.from_ints([11 + i % 50, 22, 33, 44, 55 + i % 7]) for i in range(args.requests)]

        def sampler_for(base_url: str):
            service = mint.ServiceClient(base_url=base_url, api_key=TEST_API_KEY)
            return service.create_sampling_client(base_model=server.model_name)

        direct = sampler_for(server.base_url)
        far = sampler_for(proxy)
        # Warm up both paths (connections, first-call costs), then time the server alone.
        await window(helpers, direct, prompts[:4], params, 4)
        await window(helpers, far, prompts[:4], params, 4)
        service_s = await timed(window(helpers, direct, prompts[:16], params, 1)) / 16

        window_s = await timed(window(helpers, far, prompts, params, args.window))
        unbounded_s = await timed(asyncio.gather(*(helpers.sample_one_async(far, p, 1, params) for p in prompts)))
        sequential_s = await timed(window(helpers, far, prompts, params, 1))
        proxy_process.terminate()

    ideal_rps = args.window / (args.latency + service_s)
    ideal_s = args.requests / ideal_rps
    latency_bound_s = math.ceil(args.requests / args.window) * args.latency

    def row(name: str, seconds: float, in_flight: str) -> str:
        rps = args.requests / seconds
        return f"| {name} | {in_flight} | {seconds:.2f} | {rps:.1f} | {rps / ideal_rps:.0%} |"

    print(f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(
        f"setup: {args.requests} requests, latency {args.latency * 1000:.0f} ms per request, window {args.window}, "
        f"max_tokens {args.max_tokens}; server time per request without latency {service_s * 1000:.1f} ms"
    )
    print(
        f"ideal for the window: {args.window} / ({args.latency:g} s + {service_s * 1000:.1f} ms) = "
        f"{ideal_rps:.1f} req/s ({ideal_s:.2f} s for {args.requests}); "
        f"pure latency bound ceil(N/W) x latency = {latency_bound_s:.2f} s"
    )
    print()
    print("| run | requests in flight | seconds | requests/s | of the window's ideal |")
    print("|---|---|---|---|---|")
    print(row("iter_sample_many_async (sliding window)", window_s, f"<= {args.window}"))
    print(row("unbounded asyncio.gather", unbounded_s, f"{args.requests}"))
    print(row("sequential loop", sequential_s, "1"))
    print()
    verdict = "meets" if ideal_s / window_s >= 0.9 else "MISSES"
    print(
        f"window throughput = {ideal_s / window_s:.1%} of its ideal bound ({verdict} the 90% target), "
        f"{latency_bound_s / window_s:.1%} of the pure latency bound; {sequential_s / window_s:.1f}x the sequential "
        f"loop; unbounded gather takes {unbounded_s / window_s:.2f}x the window's time with all {args.requests} "
        "requests in flight."
    )


def main() -> None:
    if sys.argv[1:2] == ["--proxy"]:
        upstream, port, latency = sys.argv[2:5]
        return serve_latency_proxy(upstream, int(port), float(latency))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--window", type=int, default=8)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds added to each sampling request")
    parser.add_argument("--max-tokens", type=int, default=4)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
