"""mint-local's scheduler: concurrent sampling requests against one batched request, against raw
torch `generate`, and a GRPO run, each with its baseline measured in this run.

    python bench/bench_scheduler.py                         # the scheduler's figures
    python bench/bench_scheduler.py --baseline DIR          # also the code before it, from DIR
    python bench/bench_scheduler.py --threads 1 ...         # OMP_NUM_THREADS for every server

DIR is a copy of the code to compare with, e.g. `git archive main | tar -x -C /tmp/sched-baseline`;
its servers start with PYTHONPATH=DIR, so they run that code. Both servers run side by side
and their rounds alternate, so background load hits both alike.

Every figure comes twice: per wall-clock second, and per CPU second of the server process
(utime + stime from /proc). On a shared machine the wall figures move with other jobs' load;
the CPU figures measure the work the server itself did, which is what the scheduler changes.

Figures (issue 16):
  1. concurrency: 16 concurrent requests with num_samples=1 against one request with
     num_samples=16 (same prompt, same max_tokens, stop=[]), through the SDK, on the tiny and the
     ~30M model: tokens/s of each, ratio (target >= 0.8). Then the same 16 seeded requests are
     sent one at a time: their results must be identical to the concurrent ones.
  2. mixed prompts: 8 prompts of different lengths x num_samples=4, concurrent, against one
     batched transformers `generate` of the same 32 rows in this process (left-padded, sampling,
     exactly max_tokens new tokens, the server's thread count): ratio (target >= 0.7).
  3. the GRPO scaffold, 2 steps of 4 groups x 4 answers, on the ~30M model: wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TINKER_TELEMETRY", "0")

from mint_local.launcher import LocalServer  # noqa: E402

API_KEY = "sk-mint-local-bench"
PROMPT = list(range(20, 36))
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def servers(codes: list[tuple[str, Path | None]], model: str, work: Path, **start: Any):
    """One server per code (None: this checkout), all running at once: {label: server}.
    `start`: more LocalServer.start arguments (serve_any_model=True, threads=1, ...)."""
    started: dict[str, LocalServer] = {}
    saved, cwd = os.environ.get("PYTHONPATH"), os.getcwd()
    try:
        for label, code in codes:
            if code is not None:
                # `python -m` puts the working directory first on sys.path, ahead of PYTHONPATH.
                os.environ["PYTHONPATH"] = os.pathsep.join([str(code), *hidden_extras(code, work / f"hidden-{label}")])
                os.chdir(code)
            try:
                started[label] = LocalServer.start(model=model, device="cpu", state_dir=work / f"{label}-{model}", **start)
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


# Optional speed-ups the server uses when they are installed (uvicorn picks httptools by itself).
SERVER_EXTRAS = ("httptools", "uvloop")


def hidden_extras(code: Path, folder: Path) -> list[str]:
    """A folder that hides from the code in `code` the SERVER_EXTRAS its own pyproject.toml does
    not install, so a baseline runs as a fresh `make setup` of it would (this venv has them)."""
    wanted = (code / "pyproject.toml").read_text(encoding="utf-8")
    hide = [name for name in SERVER_EXTRAS if f'"{name}' not in wanted]
    if not hide:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    for name in hide:
        (folder / f"{name}.py").write_text(f"raise ImportError('{name} is not installed by this baseline')\n", encoding="utf-8")
    return [str(folder)]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def measured(server: LocalServer, run: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall seconds, server CPU seconds, result) of run()."""
    cpu, t = cpu_seconds(server.pid), time.perf_counter()
    result = run()
    return time.perf_counter() - t, cpu_seconds(server.pid) - cpu, result


def server_threads(server: LocalServer) -> int:
    for line in server.log_path.read_text().splitlines():
        if " CPU threads" in line:
            return int(line.split(" CPU threads")[0].rsplit(" ", 1)[-1])
    raise RuntimeError("thread count not found in the server log")


def params(max_tokens: int, seed: int):
    import mint

    return mint.SamplingParams(max_tokens=max_tokens, stop=[], seed=seed)


def tokens_of(results) -> int:
    return sum(len(s.tokens) for r in results for s in r.sequences)


def median_rates(runs: list[tuple[float, float, Any]]) -> tuple[float, float]:
    """Median tokens per wall second and per server CPU second."""
    return statistics.median(tokens_of(r) / w for w, _, r in runs), statistics.median(tokens_of(r) / c for _, c, r in runs)


def concurrency(live: dict[str, LocalServer], max_tokens: int, rounds: int) -> dict[str, dict]:
    """One request x16 against 16 concurrent requests x1, rounds alternating between servers."""
    import mint

    clients = {label: mint.ServiceClient(base_url=s.base_url, api_key=API_KEY) for label, s in live.items()}
    try:
        samplers = {label: c.create_sampling_client(base_model=live[label].model_name) for label, c in clients.items()}
        prompt = mint.ModelInput.from_ints(PROMPT)

        def one(label: str) -> Callable[[], list]:
            async def run():
                return [await samplers[label].sample_async(prompt=prompt, num_samples=16, sampling_params=params(max_tokens, 0))]

            return lambda: asyncio.run(run())

        def many(label: str) -> Callable[[], list]:
            async def run():
                return await asyncio.gather(
                    *[samplers[label].sample_async(prompt=prompt, num_samples=1, sampling_params=params(max_tokens, i)) for i in range(16)]
                )

            return lambda: asyncio.run(run())

        runs: dict[str, dict[str, list]] = {label: {"one": [], "many": []} for label in live}
        for label in live:
            one(label)()  # warm-up
        for _ in range(rounds):
            for label, server in live.items():
                runs[label]["one"].append(measured(server, one(label)))
                runs[label]["many"].append(measured(server, many(label)))
        out = {}
        for label, r in runs.items():
            (one_wall, one_cpu), (many_wall, many_cpu) = median_rates(r["one"]), median_rates(r["many"])
            out[label] = {"one_wall": one_wall, "many_wall": many_wall, "one_cpu": one_cpu, "many_cpu": many_cpu}
            together = r["many"][-1][2]
            alone = [samplers[label].sample(prompt=prompt, num_samples=1, sampling_params=params(max_tokens, i)).result() for i in range(16)]
            out[label]["identical"] = all(
                [(s.tokens, s.logprobs) for s in a.sequences] == [(s.tokens, s.logprobs) for s in b.sequences] for a, b in zip(alone, together, strict=True)
            )
        return out
    finally:
        for client in clients.values():
            client.holder.close()


def mixed_prompts(server: LocalServer, folder: Path, max_tokens: int, rounds: int) -> dict:
    """8 prompts of different lengths x num_samples=4 through the server, against transformers'
    `generate` on the same 32 rows in one left-padded batch."""
    import mint
    import torch
    from transformers import AutoModelForCausalLM

    prompts = [list(range(30 + 7 * i, 30 + 7 * i + length)) for i, length in enumerate((5, 9, 14, 20, 27, 33, 41, 50))]
    torch.set_num_threads(server_threads(server))
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()
    width = max(len(p) for p in prompts)
    rows = [p for p in prompts for _ in range(4)]
    ids = torch.tensor([[0] * (width - len(p)) + p for p in rows])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in rows])

    def raw() -> tuple[float, float]:
        cpu, t = time.process_time(), time.perf_counter()
        with torch.inference_mode():
            out = model.generate(
                input_ids=ids, attention_mask=mask, do_sample=True, top_k=0, top_p=1.0, temperature=1.0,
                max_new_tokens=max_tokens, min_new_tokens=max_tokens, pad_token_id=0,
            )
        tokens = (out.shape[1] - width) * len(rows)
        return tokens / (time.perf_counter() - t), tokens / (time.process_time() - cpu)

    sc = mint.ServiceClient(base_url=server.base_url, api_key=API_KEY)
    try:
        sampler = sc.create_sampling_client(base_model=server.model_name)

        async def served():
            return await asyncio.gather(
                *[sampler.sample_async(prompt=mint.ModelInput.from_ints(p), num_samples=4, sampling_params=params(max_tokens, i)) for i, p in enumerate(prompts)]
            )

        raw()
        asyncio.run(served())  # warm-up
        ours, theirs = [], []
        for _ in range(rounds):
            ours.append(measured(server, lambda: asyncio.run(served())))
            theirs.append(raw())
        wall, cpu = median_rates(ours)
        raw_wall, raw_cpu = statistics.median(r[0] for r in theirs), statistics.median(r[1] for r in theirs)
        return {"wall": wall, "cpu": cpu, "raw_wall": raw_wall, "raw_cpu": raw_cpu}
    finally:
        sc.holder.close()


GRPO_ROWS = [
    {"question": "Tom has 3 apples and buys 2 more. How many apples does he have?", "answer": "5"},
    {"question": "What is 7 times 6?", "answer": "42"},
    {"question": "A book costs 12 dollars. How much do 3 books cost?", "answer": "36"},
    {"question": "Sara had 20 stickers and gave away 8. How many are left?", "answer": "12"},
    {"question": "What is 15 plus 27?", "answer": "42"},
    {"question": "A box holds 6 eggs. How many eggs are in 4 boxes?", "answer": "24"},
    {"question": "What is 100 minus 37?", "answer": "63"},
    {"question": "Ann reads 9 pages a day. How many pages in 5 days?", "answer": "45"},
]


def grpo_run(server: LocalServer, work: Path, max_tokens: int) -> dict:
    """The GRPO scaffold, 2 steps of 4 groups x 4 answers: wall time of the whole script, and the
    server's CPU seconds during it."""
    from mint_migrate.render import ScaffoldOptions, render_scaffold, write_scripts

    script = write_scripts(work, render_scaffold(ScaffoldOptions(kind="grpo", base_model=server.model_name)))
    data = work / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in GRPO_ROWS))
    env = dict(os.environ, MINT_BASE_URL=server.base_url, MINT_API_KEY=API_KEY, TINKER_TELEMETRY="0")
    cmd = [
        sys.executable, str(script), "--data", str(data), "--steps", "2", "--groups-per-batch", "4", "--group-size", "4",
        "--max-tokens", str(max_tokens), "--save-every", "0", "--log-dir", str(work / "log"),
    ]
    wall, cpu, out = measured(server, lambda: subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=work, timeout=1800))
    if out.returncode != 0:
        raise RuntimeError(f"grpo run failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    step_s = [float(f.split("=", 1)[1]) for line in out.stdout.splitlines() if line.startswith("METRIC step=") for f in line.split() if f.startswith("step_s=")]
    return {"wall": wall, "cpu": cpu, "step_s": step_s}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", type=Path, help="a copy of the code to compare with (e.g. main)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip", nargs="*", default=[], choices=["concurrency", "mixed", "grpo"])
    parser.add_argument("--max-tokens", type=int, help="tokens per sample in the concurrency figure (default: tiny 256, ~30M 48)")
    parser.add_argument(
        "--threads", type=int, help="OMP_NUM_THREADS for every server (default: the server's own choice; on a loaded "
        "2-core machine two-thread torch stalls on its spinning OpenMP team, so compare with 1)",
    )
    args = parser.parse_args()
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch

    from mint_local.tiny_model import ensure_tiny_model

    folders = {"tiny": ensure_tiny_model("tiny"), "tiny-30m": ensure_tiny_model("tiny-30m")}
    work = Path(tempfile.mkdtemp(prefix="mint-local-sched-bench-"))
    codes: list[tuple[str, Path | None]] = [("scheduler", None)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    print(f"# mint-local scheduler benchmark, {time.strftime('%Y-%m-%d %H:%M')}, {platform.machine()} {os.cpu_count()} CPUs, torch {torch.__version__}")
    print(f"load average at start: {os.getloadavg()}; OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; rounds {args.rounds}")

    if "concurrency" not in args.skip:
        print("\n## 16 concurrent requests x num_samples=1 vs one request x num_samples=16 (same prompt, stop=[]); tokens/s per wall | per server-CPU second")
        for variant, max_tokens in (("tiny", args.max_tokens or 256), ("tiny-30m", args.max_tokens or 48)):
            with servers(codes, variant, work) as live:
                results = concurrency(live, max_tokens, args.rounds)
            for label, r in results.items():
                print(
                    f"{variant:8s} {label:9s} max_tokens={max_tokens}: one x16 {r['one_wall']:.0f} | {r['one_cpu']:.0f}, "
                    f"16 x1 {r['many_wall']:.0f} | {r['many_cpu']:.0f}; ratio {r['many_wall'] / r['one_wall']:.2f} | "
                    f"{r['many_cpu'] / r['one_cpu']:.2f}; concurrent results identical to each request alone: {r['identical']}"
                )

    if "mixed" not in args.skip:
        print("\n## 8 prompts (5-50 tokens) x num_samples=4 concurrent vs transformers generate of the same 32 rows (one batch); tokens/s per wall | per CPU second")
        for variant, max_tokens in (("tiny", 128), ("tiny-30m", 48)):
            with servers(codes[:1], variant, work / "mixed") as live:
                r = mixed_prompts(live["scheduler"], folders[variant], max_tokens, args.rounds)
            print(
                f"{variant:8s} max_tokens={max_tokens}: mint-local {r['wall']:.0f} | {r['cpu']:.0f}, raw generate {r['raw_wall']:.0f} | "
                f"{r['raw_cpu']:.0f}; ratio {r['wall'] / r['raw_wall']:.2f} | {r['cpu'] / r['raw_cpu']:.2f}"
            )

    if "grpo" not in args.skip:
        print("\n## GRPO scaffold on the ~30M model: 2 steps x 4 groups x 4 answers, max_tokens 64 (rounds alternate)")
        runs: dict[str, list[dict]] = {label: [] for label, _ in codes}
        with servers(codes, "tiny-30m", work / "grpo") as live:
            for i in range(args.rounds):
                for label, server in live.items():
                    runs[label].append(grpo_run(server, work / "grpo" / f"{label}-{i}", 64))
        for label, r in runs.items():
            walls = ", ".join(f"{x['wall']:.1f}" for x in r)
            print(
                f"{label:9s}: wall median {statistics.median(x['wall'] for x in r):.1f} s (runs {walls}), "
                f"server CPU median {statistics.median(x['cpu'] for x in r):.1f} s; step_s {[x['step_s'] for x in r]}"
            )
    print(f"\nload average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
