"""mint-local on multi-turn conversations through the SDK (issue 27): thread settings under load,
and prefix (KV) reuse of a re-sent history.

    python bench/bench_multiturn.py threads [--baseline DIR]   # default vs each --threads, 2 busy processes beside
    python bench/bench_multiturn.py prefix [--baseline DIR]    # growing history vs the same lengths, nothing to reuse

DIR is a copy of the code to compare with (`git archive main | tar -x -C /tmp/mt-baseline`); its
server starts with PYTHONPATH=DIR. All servers run side by side and their rounds alternate, so
background load hits each alike.

threads: two CPU burners (plain Python loops, started and stopped here, each bounded by
`--burn-s`) run beside the servers: this checkout with its default, with `--threads 1` and
`--threads 2`, and the baseline's default. Each round runs the workload once per server:
4 conversations at once, each `--turns` turns; a turn samples `--max-tokens` tokens (stop=[])
and appends them and a 24-token user message to the history. Wall seconds per round.

prefix: one thread per server (`--threads 1`, the issue's setting). 4 conversations, each
`--turns` turns re-sending a history that starts at `--history` tokens, against the same
workload with fresh random tokens in every prompt (the same lengths, nothing to reuse).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TINKER_TELEMETRY", "0")

from mint_local.launcher import LocalServer  # noqa: E402

API_KEY = "sk-mint-local-bench"
CONVERSATIONS = 4
MESSAGE_TOKENS = 24


@contextlib.contextmanager
def servers(specs: list[tuple[str, Path | None, int | None]], model: str, work: Path):
    """One server per (label, code folder or None for this checkout, --threads), all at once."""
    started: dict[str, LocalServer] = {}
    saved, cwd = os.environ.get("PYTHONPATH"), os.getcwd()
    try:
        for label, code, threads in specs:
            if code is not None:
                os.environ["PYTHONPATH"] = str(code)  # `python -m` puts the cwd first on sys.path
                os.chdir(code)
            try:
                started[label] = LocalServer.start(model=model, device="cpu", state_dir=work / label, threads=threads)
            finally:
                os.chdir(cwd)
                if saved is None:
                    os.environ.pop("PYTHONPATH", None)
                else:
                    os.environ["PYTHONPATH"] = saved
        yield started
    finally:
        for server in started.values():
            server.stop()


@contextlib.contextmanager
def burners(count: int, seconds: float):
    """`count` processes that keep one CPU busy each, for at most `seconds`."""
    code = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(count)]
    try:
        yield procs
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


class DidNotFinish(Exception):
    pass


def conversation_workload(sampler, turns: int, history: int, max_tokens: int, fresh: bool, seed: int, cap_s: float) -> tuple[float, int]:
    """CONVERSATIONS conversations at once, `turns` turns each: (wall seconds, prompt tokens sent).
    fresh: every prompt is new random tokens of the length the conversation would have.
    Raises DidNotFinish after cap_s."""
    import mint

    async def one(conversation: int) -> int:
        rng = random.Random(seed * 100 + conversation)
        tokens = [rng.randrange(10, 2000) for _ in range(history)]
        sent = 0
        for turn in range(turns):
            prompt = [rng.randrange(10, 2000) for _ in tokens] if fresh else tokens
            sent += len(prompt)
            out = await sampler.sample_async(
                prompt=mint.ModelInput.from_ints(prompt),
                num_samples=1,
                sampling_params=mint.SamplingParams(max_tokens=max_tokens, stop=[], seed=turn),
            )
            tokens = tokens + out.sequences[0].tokens + [rng.randrange(10, 2000) for _ in range(MESSAGE_TOKENS)]
        return sent

    async def run() -> int:
        return sum(await asyncio.gather(*[one(c) for c in range(CONVERSATIONS)]))

    async def capped() -> int:
        try:
            return await asyncio.wait_for(run(), cap_s)
        except TimeoutError:
            raise DidNotFinish from None

    t = time.perf_counter()
    sent = asyncio.run(capped())
    return time.perf_counter() - t, sent


def server_log_threads(server: LocalServer) -> str:
    lines = [line for line in server.log_path.read_text().splitlines() if "CPU thread" in line]
    return "; ".join(line.split("mint-local: ", 1)[-1][:110] for line in lines[-3:])


def rounds_over(live: dict[str, LocalServer], rounds: int, work, cap_s: float) -> dict[str, list[float]]:
    """work(sampler, round) on each server in turn, `rounds` times: wall seconds per round. A
    server whose run passes cap_s is stopped (its stalled work would load the others' rounds)
    and counts as cap_s from then on (a lower bound)."""
    import mint

    clients = {label: mint.ServiceClient(base_url=s.base_url, api_key=API_KEY) for label, s in live.items()}
    try:
        samplers = {label: c.create_sampling_client(base_model=live[label].model_name) for label, c in clients.items()}
        times: dict[str, list[float]] = {label: [] for label in live}
        stalled: set[str] = set()
        for i in range(rounds):
            for label in live:
                if label in stalled:
                    times[label].append(cap_s)
                    continue
                try:
                    wall = work(samplers[label], i, label)
                except DidNotFinish:
                    times[label].append(cap_s)
                    stalled.add(label)
                    clients[label].holder.close()
                    print(f"  round {i + 1} {label:18s} did not finish in {cap_s:.0f} s: server stopped", flush=True)
                    print(f"  {label:18s} server log: {server_log_threads(live[label])}")
                    live[label].stop()
                    continue
                times[label].append(wall)
                print(f"  round {i + 1} {label:18s} {wall:7.1f} s   load {os.getloadavg()[0]:.1f}", flush=True)
        return times
    finally:
        for client in clients.values():
            client.holder.close()


def threads_section(args, work: Path) -> None:
    specs: list[tuple[str, Path | None, int | None]] = [("default", None, None), ("--threads 1", None, 1)]
    if args.baseline:
        specs.append(("baseline default", args.baseline.resolve(), None))
    specs.append(("--threads 2", None, 2))
    print(
        f"\n## {args.model}: {CONVERSATIONS} conversations x {args.turns} turns, history from {args.history} tokens, "
        f"max_tokens {args.max_tokens}, with 2 busy processes beside the servers; wall s per round"
    )
    with servers(specs, args.model, work / "threads") as live, burners(2, args.burn_s):
        time.sleep(2.0)  # the burners show in the load the default reads at its first count
        times = rounds_over(live, args.rounds, lambda s, i, _label: conversation_workload(s, args.turns, args.history, args.max_tokens, False, i, args.cap_s)[0], args.cap_s)
        for label, server in live.items():
            if server.proc.returncode is None:
                print(f"  {label:18s} server log: {server_log_threads(server)}")
    # Each round's ratio to the best --threads value in that round: the load drifts between rounds.
    best = [min(t[i] for label, t in times.items() if label.startswith("--threads")) for i in range(args.rounds)]
    for label, t in times.items():
        med = statistics.median(t)
        more = ">=" if med >= args.cap_s else ""
        ratio = statistics.median(x / b for x, b in zip(t, best, strict=True))
        print(f"{label:18s} median {more}{med:7.1f} s (runs {', '.join(f'{x:.1f}' for x in t)}); / that round's best --threads, median {more}{ratio:.2f}x")


def prefix_section(args, work: Path) -> None:
    specs: list[tuple[str, Path | None, int | None]] = [("prefix reuse", None, 1)]
    if args.baseline:
        specs.append(("baseline", args.baseline.resolve(), 1))
    print(
        f"\n## {args.model}, --threads 1: {CONVERSATIONS} conversations x {args.turns} turns re-sending a history from "
        f"{args.history} tokens (max_tokens {args.max_tokens}, +{MESSAGE_TOKENS} per message) vs fresh prompts of the same lengths"
    )
    with servers(specs, args.model, work / "prefix") as live:
        # Both workloads on each server in every round, so load drift hits them alike.
        runs = {f"{label} / {kind}": server for label, server in live.items() for kind in ("history", "fresh")}
        times = rounds_over(runs, args.rounds, lambda s, i, label: conversation_workload(s, args.turns, args.history, args.max_tokens, label.endswith("fresh"), i, args.cap_s)[0], args.cap_s)
    for label in live:
        h, f = times[f"{label} / history"], times[f"{label} / fresh"]
        ratios = [b / a for a, b in zip(h, f, strict=True)]
        print(
            f"{label:14s} history median {statistics.median(h):6.1f} s, fresh median {statistics.median(f):6.1f} s: "
            f"fresh / history per round {', '.join(f'{r:.2f}' for r in ratios)}, median {statistics.median(ratios):.2f}x"
        )



def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("section", choices=["threads", "prefix"])
    parser.add_argument("--baseline", type=Path, help="a copy of the code to compare with (e.g. main)")
    parser.add_argument("--model", default="tiny-30m")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--turns", type=int)
    parser.add_argument("--history", type=int)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--burn-s", type=float, default=900.0, help="upper bound on the burners' life")
    parser.add_argument("--cap-s", type=float, default=90.0, help="a run slower than this stops its server")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the servers and burners are stopped
    args.turns = args.turns or (2 if args.section == "threads" else 4)
    args.history = args.history or (200 if args.section == "threads" else 800)
    import torch

    print(f"# mint-local multi-turn benchmark, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()} {os.cpu_count()} CPUs, torch {torch.__version__}")
    print(f"load average at start: {os.getloadavg()}")
    work = Path(tempfile.mkdtemp(prefix="mint-local-multiturn-"))
    (threads_section if args.section == "threads" else prefix_section)(args, work)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
