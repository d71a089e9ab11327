"""Where one sampling request's fixed cost goes: HTTP requests per sample, server and client CPU.

    python bench/profile_requests.py [--rounds 8] [--max-tokens 64] [--baseline DIR] [--pyspy]

Starts mint-local (tiny model, one thread) through this script's `serve` mode, which is the real
`mint-local serve` with its app wrapped in an ASGI layer that counts requests per route and
profiles the event-loop thread (cProfile). The client sends `--rounds` x (16 concurrent
num_samples=1 requests, then one num_samples=16 request) through the real SDK and prints, per
round kind: wall, client CPU and server CPU milliseconds, HTTP requests by route per sample
request, and the server event loop's top functions. `--pyspy` also records the client with
py-spy (it runs the SDK's event loop in a thread cProfile does not see) and prints its top frames.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import io
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("TINKER_TELEMETRY", "0")
API_KEY = "sk-mint-local-bench"
PROMPT = list(range(20, 36))
REPORT_PATH = "/__bench/report"
RESET_PATH = "/__bench/reset"


def serve(argv: list[str]) -> None:
    """`mint-local serve ARGV` with a counting, profiling ASGI layer around the app."""
    import mint_local.app as app_module
    import mint_local.cli as cli
    import mint_local.sampling as sampling

    real_create_app = app_module.create_app
    # What the sampler did: decode steps, the cohorts (separate caches, each its own tiles) they
    # ran, prefill calls and the requests they admitted. Counted on the worker thread.
    work: collections.Counter[str] = collections.Counter()
    real_decode, real_prefill = sampling.Decoder._decode, sampling.Decoder._prefill

    def decode(self, batch):
        work["decode steps"] += 1
        work["cohort-steps"] += len(batch)
        work["row-steps"] += sum(len(c.rows) for c in batch)
        return real_decode(self, batch)

    def prefill(self, requests):
        work["prefill calls"] += 1
        work["requests prefilled"] += len(requests)
        return real_prefill(self, requests)

    sampling.Decoder._decode, sampling.Decoder._prefill = decode, prefill

    def create_app(*args, **kwargs):
        inner = real_create_app(*args, **kwargs)
        counts: collections.Counter[str] = collections.Counter()
        arrivals: list[float] = []
        profiling = bool(os.environ.get("_PROFILE_SERVER_LOOP"))
        state = {"profile": cProfile.Profile()}
        if profiling:
            state["profile"].enable()

        async def app(scope, receive, send):
            if scope["type"] != "http":
                return await inner(scope, receive, send)
            path = scope["path"]
            if path in (REPORT_PATH, RESET_PATH):
                body = b"{}"
                if path == REPORT_PATH:
                    state["profile"].disable()
                    out, out2 = io.StringIO(), io.StringIO()
                if path == REPORT_PATH and profiling:
                    pstats.Stats(state["profile"], stream=out).sort_stats("tottime").print_stats(25)
                    pstats.Stats(state["profile"], stream=out2).sort_stats("cumulative").print_stats(40)
                if path == REPORT_PATH:
                    stack = f"parser {'httptools' if 'httptools' in sys.modules else 'h11'}, loop {type(asyncio.get_running_loop()).__module__}"
                    body = json.dumps({"stack": stack, "counts": dict(counts), "work": dict(work), "arrivals": arrivals, "tottime": out.getvalue(), "cumulative": out2.getvalue()}).encode()
                else:
                    counts.clear()
                    work.clear()
                    arrivals.clear()
                    state["profile"].disable()
                state["profile"] = cProfile.Profile()
                if profiling:
                    state["profile"].enable()
                await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": body})
                return None
            counts[f"{scope['method']} {path}"] += 1
            if path.endswith("/asample"):
                arrivals.append(time.perf_counter())
            return await inner(scope, receive, send)

        return app

    app_module.create_app = create_app
    cli.main(["serve", *argv])


def start_server(code: Path | None, work: Path, verbose: bool) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", _PROFILE_SERVER_LOOP="1" if verbose else "")
    if code is not None:
        from bench_scheduler import hidden_extras  # this script's folder is first on sys.path

        env["PYTHONPATH"] = os.pathsep.join([str(code), *hidden_extras(code, work / "hidden")])
    cmd = [sys.executable, str(Path(__file__).resolve()), "serve", "--host", "127.0.0.1", "--port", "0", "--model", "tiny",
           "--device", "cpu", "--state-dir", str(work), "--threads", "1"]
    with open(work / "server.log", "w") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True, env=env, cwd=str(code or ROOT))
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("mint-local listening on "):
            return proc, line.split()[-1]
    raise RuntimeError((work / "server.log").read_text()[-2000:])


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def loop_cpu_s(pid: int) -> float:
    """CPU seconds of the server's main thread, which runs the event loop (the model work runs on others)."""
    fields = Path(f"/proc/{pid}/task/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def get(url: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def client(args: argparse.Namespace) -> None:
    import mint

    work = Path(tempfile.mkdtemp(prefix="mint-local-profile-"))
    proc, base_url = start_server(args.baseline, work, args.verbose)
    try:
        sc = mint.ServiceClient(base_url=base_url, api_key=API_KEY)
        sampler = sc.create_sampling_client(base_model="mint-local/tiny-qwen3")
        prompt = mint.ModelInput.from_ints(PROMPT)

        def params(seed: int):
            return mint.SamplingParams(max_tokens=args.max_tokens, stop=[], seed=seed)

        async def many():
            return await asyncio.gather(*[sampler.sample_async(prompt=prompt, num_samples=1, sampling_params=params(i)) for i in range(16)])

        async def one():
            return [await sampler.sample_async(prompt=prompt, num_samples=16, sampling_params=params(0))]

        for kind in (one, many):
            asyncio.run(kind())  # warm-up
        for kind, requests in ((many, 16), (one, 1)):
            get(base_url + RESET_PATH)
            walls, clients, servers, loops = [], [], [], []
            for _ in range(args.rounds):
                c, s, lp, t = time.process_time(), cpu_s(proc.pid), loop_cpu_s(proc.pid), time.perf_counter()
                asyncio.run(kind())
                walls.append(time.perf_counter() - t)
                clients.append(time.process_time() - c)
                servers.append(cpu_s(proc.pid) - s)
                loops.append(loop_cpu_s(proc.pid) - lp)
            report = get(base_url + REPORT_PATH)
            med = lambda xs: sorted(xs)[len(xs) // 2] * 1000  # noqa: E731
            print(f"\n## {kind.__name__} ({requests} request(s) per round, {args.rounds} rounds, max_tokens {args.max_tokens})")
            print(f"server HTTP stack: {report['stack']}")
            print(f"median per round: wall {med(walls):.0f} ms, client CPU {med(clients):.0f} ms, server CPU {med(servers):.0f} ms "
                  f"(event-loop thread {med(loops):.0f} ms)")
            total = args.rounds * requests
            served = sum(n for route, n in report["counts"].items() if "/__bench/" not in route)
            print(f"  event-loop thread: {1000 * sum(loops) / served:.2f} ms of CPU per HTTP request ({served} requests, all rounds)")
            for route, n in sorted(report["counts"].items()):
                if not route.endswith(REPORT_PATH) and not route.endswith(RESET_PATH):
                    print(f"  {route}: {n} ({n / total:.2f} per sample request)")
            print("  sampler: " + ", ".join(f"{k} {v / args.rounds:.1f}" for k, v in report["work"].items()) + " per round")
            if requests > 1:
                at = report["arrivals"]
                spreads = [1000 * (at[i + requests - 1] - at[i]) for i in range(0, len(at) - requests + 1, requests)]
                print(f"  {requests} asample requests reached the server over (ms): " + ", ".join(f"{x:.0f}" for x in spreads))
            if args.verbose:
                print(report["tottime"])
                print(report["cumulative"])
        sc.holder.close()
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        sys.path[:0] = (os.environ.get("PYTHONPATH") or str(ROOT)).split(os.pathsep)
        serve(sys.argv[2:])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--baseline", type=Path, help="profile the code in DIR instead of this checkout")
    parser.add_argument("--verbose", action="store_true", help="print the server event loop's cProfile tables")
    parser.add_argument("--pyspy", action="store_true", help="run the client under py-spy and print its top frames")
    args = parser.parse_args()
    if args.pyspy and not os.environ.get("_PROFILE_UNDER_PYSPY"):
        if not (Path(sys.executable).parent / "py-spy").exists():
            sys.exit("--pyspy needs py-spy in this venv (not a project dependency): pip install py-spy")
        out = Path(tempfile.mkdtemp()) / "client.txt"
        argv = [a for a in sys.argv[1:] if a != "--pyspy"]
        env = dict(os.environ, _PROFILE_UNDER_PYSPY="1")
        subprocess.run([str(Path(sys.executable).parent / "py-spy"), "record", "-r", "200", "-f", "raw", "-o", str(out), "--",
                        sys.executable, __file__, *argv], env=env, check=True)
        summarize_pyspy(out)
        return
    client(args)


def summarize_pyspy(path: Path) -> None:
    """Self time and inclusive time per function from py-spy's collapsed stacks."""
    own: collections.Counter[str] = collections.Counter()
    incl: collections.Counter[str] = collections.Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        count = int(n)
        frames = stack.split(";")
        total += count
        own[frames[-1]] += count
        for f in set(frames):
            incl[f] += count
    print(f"\n## client py-spy: {total} samples")
    for title, table in (("self", own), ("inclusive", incl)):
        print(f"top {title}:")
        for f, n in table.most_common(30):
            print(f"  {100 * n / total:5.1f}%  {f}")


if __name__ == "__main__":
    main()
