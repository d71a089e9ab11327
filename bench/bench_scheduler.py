"""mint-local's scheduler: concurrent sampling requests against one batched request, against raw
torch `generate`, and a GRPO smoke run, each with its baseline measured in this run.

    python bench/bench_scheduler.py                         # the scheduler's figures (~5 minutes on 2 CPU cores)
    python bench/bench_scheduler.py --baseline DIR          # also the code before it, from DIR

DIR is a copy of the code to compare with, e.g. `git archive main | tar -x -C /tmp/sched-baseline`;
its servers start with PYTHONPATH=DIR, so they run that code.

Figures (issue 16):
  1. concurrency: 16 concurrent requests with num_samples=1 against one request with
     num_samples=16 (same prompt, same max_tokens, stop=[]), through the SDK, on the tiny and the
     ~30M model: tokens/s of each, ratio (target >= 0.8). Rounds interleaved, medians. Then the
     same 16 seeded requests are sent one at a time: their results must be identical.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TINKER_TELEMETRY", "0")

from mint_local.launcher import LocalServer  # noqa: E402

API_KEY = "sk-mint-local-bench"
PROMPT = list(range(20, 36))


@contextlib.contextmanager
def server_for(code: Path | None, model: str, state_dir: Path):
    """A server running the code in `code` (None: this checkout)."""
    saved = os.environ.get("PYTHONPATH")
    if code is not None:
        os.environ["PYTHONPATH"] = str(code)
    try:
        server = LocalServer.start(model=model, device="cpu", state_dir=state_dir)
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    try:
        yield server
    finally:
        server.stop()


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


def concurrency(server: LocalServer, max_tokens: int, rounds: int, check_exact: bool) -> dict:
    """One request x16 against 16 concurrent requests x1; medians over interleaved rounds."""
    import mint

    sc = mint.ServiceClient(base_url=server.base_url, api_key=API_KEY)
    try:
        sampler = sc.create_sampling_client(base_model=server.model_name)
        prompt = mint.ModelInput.from_ints(PROMPT)

        async def one():
            return [await sampler.sample_async(prompt=prompt, num_samples=16, sampling_params=params(max_tokens, 0))]

        async def many():
            return await asyncio.gather(*[sampler.sample_async(prompt=prompt, num_samples=1, sampling_params=params(max_tokens, i)) for i in range(16)])

        def rate(fn) -> tuple[float, list]:
            t = time.perf_counter()
            results = asyncio.run(fn())
            return tokens_of(results) / (time.perf_counter() - t), results

        rate(one)  # warm-up
        ones, manys = [], []
        for _ in range(rounds):
            ones.append(rate(one)[0])
            rate_many, together = rate(many)
            manys.append(rate_many)
        out = {"one_x16": statistics.median(ones), "x1_16": statistics.median(manys)}
        out["ratio"] = out["x1_16"] / out["one_x16"]
        if check_exact:
            alone = [sampler.sample(prompt=prompt, num_samples=1, sampling_params=params(max_tokens, i)).result() for i in range(16)]
            out["identical"] = all(
                [(s.tokens, s.logprobs) for s in a.sequences] == [(s.tokens, s.logprobs) for s in b.sequences] for a, b in zip(alone, together)
            )
        return out
    finally:
        sc.holder.close()


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

    def raw() -> float:
        t = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(
                input_ids=ids, attention_mask=mask, do_sample=True, top_k=0, top_p=1.0, temperature=1.0,
                max_new_tokens=max_tokens, min_new_tokens=max_tokens, pad_token_id=0,
            )
        return (out.shape[1] - width) * len(rows) / (time.perf_counter() - t)

    sc = mint.ServiceClient(base_url=server.base_url, api_key=API_KEY)
    try:
        sampler = sc.create_sampling_client(base_model=server.model_name)

        async def served():
            return await asyncio.gather(
                *[sampler.sample_async(prompt=mint.ModelInput.from_ints(p), num_samples=4, sampling_params=params(max_tokens, i)) for i, p in enumerate(prompts)]
            )

        def mint_rate() -> float:
            t = time.perf_counter()
            return tokens_of(asyncio.run(served())) / (time.perf_counter() - t)

        raw()
        mint_rate()  # warm-up
        ours, theirs = [], []
        for _ in range(rounds):
            ours.append(mint_rate())
            theirs.append(raw())
        out = {"mint": statistics.median(ours), "raw_generate": statistics.median(theirs)}
        out["ratio"] = out["mint"] / out["raw_generate"]
        return out
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
    """The GRPO scaffold, 2 steps of 4 groups x 4 answers; wall time of the whole script."""
    from mcp_server.render import ScaffoldOptions, render_scaffold

    script = work / "train.py"
    script.write_text(render_scaffold(ScaffoldOptions(kind="grpo", base_model=server.model_name)))
    data = work / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in GRPO_ROWS))
    env = dict(os.environ, MINT_BASE_URL=server.base_url, MINT_API_KEY=API_KEY, TINKER_TELEMETRY="0")
    cmd = [
        sys.executable, str(script), "--data", str(data), "--steps", "2", "--groups-per-batch", "4", "--group-size", "4",
        "--max-tokens", str(max_tokens), "--save-every", "0", "--log-dir", str(work / "log"),
    ]
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=work, timeout=1800)
    wall = time.perf_counter() - t
    if out.returncode != 0:
        raise RuntimeError(f"grpo run failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    steps = [line for line in out.stdout.splitlines() if line.startswith("METRIC step=")]
    step_s = [float(f.split("=", 1)[1]) for line in steps for f in line.split() if f.startswith("step_s=")]
    return {"wall_s": wall, "step_s": step_s}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", type=Path, help="a copy of the code to compare with (e.g. main)")
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--skip", nargs="*", default=[], choices=["concurrency", "mixed", "grpo"])
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
    rounds = 1 if args.quick else 3
    print(f"# mint-local scheduler benchmark, {time.strftime('%Y-%m-%d %H:%M')}, {platform.machine()} {os.cpu_count()} CPUs, torch {torch.__version__}")
    print(f"load average at start: {os.getloadavg()}")

    if "concurrency" not in args.skip:
        print("\n## 16 concurrent requests x num_samples=1 vs one request x num_samples=16 (same prompt, stop=[])")
        for variant, max_tokens in (("tiny", 256), ("tiny-30m", 48)):
            for label, code in codes:
                # The code before the scheduler runs 16 requests one after another: one round is enough.
                n = rounds if label == "scheduler" else 1
                with server_for(code, variant, work / f"{label}-{variant}") as server:
                    r = concurrency(server, max_tokens, n, check_exact=label == "scheduler")
                exact = f"; identical to each request alone: {r['identical']}" if "identical" in r else ""
                print(
                    f"{variant:8s} {label:9s} max_tokens={max_tokens}: one x16 {r['one_x16']:.0f} tokens/s, 16 x1 {r['x1_16']:.0f} tokens/s, "
                    f"ratio {r['ratio']:.2f} (median of {n}){exact}"
                )

    if "mixed" not in args.skip:
        print("\n## 8 prompts (5-50 tokens) x num_samples=4 concurrent vs transformers generate of the same 32 rows (one batch)")
        for variant, max_tokens in (("tiny", 128), ("tiny-30m", 48)):
            with server_for(None, variant, work / f"mixed-{variant}") as server:
                r = mixed_prompts(server, folders[variant], max_tokens, rounds)
            print(f"{variant:8s} max_tokens={max_tokens}: mint-local {r['mint']:.0f} tokens/s, raw generate {r['raw_generate']:.0f} tokens/s, ratio {r['ratio']:.2f}")

    if "grpo" not in args.skip:
        print("\n## GRPO scaffold on the ~30M model: 2 steps x 4 groups x 4 answers, max_tokens 64")
        for label, code in codes:
            run_dir = work / f"grpo-{label}"
            run_dir.mkdir()
            with server_for(code, "tiny-30m", run_dir / "state") as server:
                r = grpo_run(server, run_dir, 64)
            print(f"{label:9s}: wall {r['wall_s']:.1f} s (script start to exit), steps {', '.join(f'{s:.1f}' for s in r['step_s'])} s")
    print(f"\nload average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
