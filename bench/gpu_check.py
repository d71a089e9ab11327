"""mint-local on a GPU, in one prepared run (issue 27, item 4): the built-in Qwen3 code path in
bf16 on CUDA with a ~0.5B Qwen3-shaped model built here (random weights, mint-local's own
tokenizer; no hub), through the real SDK. Under ~8 minutes on one GPU; prints every figure.

    python bench/gpu_check.py                           # on a machine with CUDA
    python bench/gpu_check.py --device cpu --size tiny  # a dry run of the script on the CPU

Figures, each beside its yardstick measured in this run:
  1. start-up: launch -> listening, and the first forward_backward;
  2. LoRA SFT through the SDK: `--steps` steps of forward_backward + optim_step (8 x 256 tokens);
  3. 16 concurrent num_samples=1 requests vs one num_samples=16 request at 64 tokens (ratio);
  4. multi-turn: 4 conversations x 4 turns re-sending a history from 800 tokens vs fresh prompts of
     the same lengths (ratio), and the conversation's tokens and logprobs against a server with
     the prefix cache off (must be identical; checked first, turn by turn);
  5. threads: the multi-turn workload beside two busy processes, default threads vs --threads 1.

Four servers run at once (default; --prefix-cache-mb 0; --prefix-cache-mb 8192; --threads 1): each
holds the model, about 1 GB in bf16 for the 0.5B shape. Exit status 0 when every check ran and the
exactness check held, 1 when a check failed, 2 when there is no CUDA device (with --device cuda).
On an H200 (Dec 4) the first version took ~4 minutes; give a lease's run a cap of ~6.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TINKER_TELEMETRY", "0")

from mint_local.launcher import LISTENING_PREFIX, LocalServer, LocalServerError  # noqa: E402
from mint_local.process import Supervised  # noqa: E402

API_KEY = "sk-mint-local-gpu-check"
# Qwen3-0.6B's layer shapes (28 layers, 16 heads of 128, 8 KV heads, MLP 3072) with mint-local's
# 2k-token vocabulary: ~0.44B parameters. "tiny" is the dry-run shape.
SHAPES = {
    "0.5b": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8, head_dim=128),
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16),
}
VARIANT = "gpu-check-{size}"
# The servers each run starts side by side: the default (on CUDA the prefix cache is off unless
# asked for); the prefix cache off and on (8 GB: room for the whole multi-turn workload, where 256
# MB holds ~2,300 positions of the 0.5B shape); one CPU thread (the yardstick for the threads).
SERVERS = (
    ("default", ()),
    ("cache-off", ("--prefix-cache-mb", "0")),
    ("cache-on", ("--prefix-cache-mb", "8192")),
    ("threads-1", ("--threads", "1")),
)

# Run in each server process: register the shape as a built-in variant (so it runs on qwen3.py,
# the code path mint-local owns), then serve.
_SERVE = textwrap.dedent(
    """
    import json
    import sys
    from mint_local import tiny_model
    name, shape = sys.argv[1], json.loads(sys.argv[2])
    tiny_model.VARIANTS[name] = tiny_model.TinySpec(name="qwen3-" + name, vocab_target=2048, **shape)
    from mint_local.cli import main
    main(sys.argv[3:])
    """
)


def log(msg: str) -> None:
    print(msg, flush=True)


def build_model(size: str) -> Path:
    from mint_local import tiny_model

    name = VARIANT.format(size=size)
    tiny_model.VARIANTS[name] = tiny_model.TinySpec(name="qwen3-" + name, vocab_target=2048, **SHAPES[size])
    t = time.perf_counter()
    folder = tiny_model.ensure_tiny_model(name)
    log(f"model folder {folder} ready in {time.perf_counter() - t:.1f} s")
    return folder


def start_server(size: str, device: str, work: Path, label: str, *flags: str) -> tuple[LocalServer, float]:
    """A server of the registered shape: (server, seconds from launch to listening)."""
    script = work / "serve_variant.py"
    script.write_text(_SERVE)
    state, log_path = work / f"state-{label}", work / f"{label}.log"
    state.mkdir(parents=True, exist_ok=True)
    # Keep the caller's PYTHONPATH behind the repository: on a GPU machine the SDK and the server's
    # web stack may come from a folder of carried wheels named there.
    cmd = [
        sys.executable, str(script), VARIANT.format(size=size), json.dumps(SHAPES[size]), "serve", "--port", "0",
        "--model", VARIANT.format(size=size), "--device", device, "--state-dir", str(state), *flags,
    ]  # fmt: skip
    t = time.perf_counter()
    with open(log_path, "a", encoding="utf-8") as err:
        proc = Supervised(cmd, env=dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))), stderr=err, name="mint-local")
    for line in proc.lines(deadline=time.monotonic() + 300):
        if line.startswith(LISTENING_PREFIX):
            base_url = line[len(LISTENING_PREFIX) :].strip()
            with urllib.request.urlopen(f"{base_url}/api/v1/get_server_capabilities", timeout=30) as resp:
                model_name = json.loads(resp.read())["supported_models"][0]["model_name"]
            return LocalServer(proc, base_url, model_name, state, log_path, owns_state_dir=False), time.perf_counter() - t
    proc.stop()
    raise LocalServerError(f"{label} server did not start:\n" + log_path.read_text()[-3000:])


@contextlib.contextmanager
def burners(count: int, seconds: float):
    code = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(count)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def sft(server: LocalServer, steps: int) -> dict[str, float]:
    import mint

    rng = random.Random(0)
    sc = mint.ServiceClient(base_url=server.base_url, api_key=API_KEY)
    try:
        tc = sc.create_lora_training_client(base_model=server.model_name, rank=16, seed=0)
        seqs = [[rng.randrange(10, 2000) for _ in range(257)] for _ in range(8)]
        data = [mint.Datum(model_input=mint.ModelInput.from_ints(s[:-1]), loss_fn_inputs={"target_tokens": s[1:], "weights": [1.0] * 256}) for s in seqs]
        t = time.perf_counter()
        first = tc.forward_backward(data, "cross_entropy").result()
        first_s = time.perf_counter() - t
        tc.optim_step(mint.AdamParams(learning_rate=1e-4)).result()
        times, losses = [], [first.metrics["loss:sum"]]
        for _ in range(steps):
            t = time.perf_counter()
            out = tc.forward_backward(data, "cross_entropy")
            tc.optim_step(mint.AdamParams(learning_rate=1e-4)).result()
            losses.append(out.result().metrics["loss:sum"])
            times.append(time.perf_counter() - t)
        ok = losses[-1] < losses[0]
        return {"first_fb_s": first_s, "step_s": statistics.median(times), "loss_first": losses[0], "loss_last": losses[-1], "ok": ok}
    finally:
        sc.holder.close()


def concurrency(server: LocalServer, rounds: int) -> dict[str, float]:
    import mint

    sc = mint.ServiceClient(base_url=server.base_url, api_key=API_KEY)
    try:
        sampler = sc.create_sampling_client(base_model=server.model_name)
        prompt = mint.ModelInput.from_ints(list(range(20, 36)))

        def params(seed: int):
            return mint.SamplingParams(max_tokens=64, stop=[], seed=seed)

        async def one():
            return [await sampler.sample_async(prompt=prompt, num_samples=16, sampling_params=params(0))]

        async def many():
            return await asyncio.gather(*[sampler.sample_async(prompt=prompt, num_samples=1, sampling_params=params(i)) for i in range(16)])

        def rate(run) -> float:
            t = time.perf_counter()
            results = asyncio.run(run())
            return sum(len(s.tokens) for r in results for s in r.sequences) / (time.perf_counter() - t)

        rate(one)  # warm-up (kernels, allocator)
        ones, manys = [], []
        for _ in range(rounds):
            ones.append(rate(one))
            manys.append(rate(many))
        return {"one": statistics.median(ones), "many": statistics.median(manys)}
    finally:
        sc.holder.close()


def conversations(server: LocalServer, fresh: bool, seed: int, turns: int = 4, history: int = 800, count: int = 4) -> tuple[float, list]:
    """`count` conversations at once, `turns` turns each (32 sampled tokens + a 24-token message
    per turn): (wall seconds, each conversation's sampled (tokens, logprobs) per turn)."""
    import mint

    sc = mint.ServiceClient(base_url=server.base_url, api_key=API_KEY)
    try:
        sampler = sc.create_sampling_client(base_model=server.model_name)

        async def one(c: int) -> list:
            rng = random.Random(seed * 100 + c)
            tokens = [rng.randrange(10, 2000) for _ in range(history)]
            outs = []
            for turn in range(turns):
                prompt = [rng.randrange(10, 2000) for _ in tokens] if fresh else tokens
                out = await sampler.sample_async(
                    prompt=mint.ModelInput.from_ints(prompt), num_samples=1, sampling_params=mint.SamplingParams(max_tokens=32, stop=[], seed=turn)
                )
                seq = out.sequences[0]
                outs.append((seq.tokens, seq.logprobs))
                tokens = tokens + seq.tokens + [rng.randrange(10, 2000) for _ in range(24)]
            return outs

        async def run() -> list:
            return list(await asyncio.gather(*[one(c) for c in range(count)]))

        t = time.perf_counter()
        outs = asyncio.run(run())
        return time.perf_counter() - t, outs
    finally:
        sc.holder.close()


def fmt(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def differences(a: list, b: list) -> str:
    """Where two conversations' (tokens, logprobs) per turn first part, and by how much."""
    for turn, ((ta, la), (tb, lb)) in enumerate(zip(a, b, strict=True)):
        if ta != tb or la != lb:
            same = next((i for i, (x, y) in enumerate(zip(ta, tb, strict=False)) if x != y), min(len(ta), len(tb)))
            gap = max((abs(x - y) for x, y in zip(la[:same], lb[:same], strict=False)), default=0.0)
            return f"first difference in turn {turn} (turn 0 runs no cached prefix): tokens equal up to {same}, logprobs there differ by up to {gap:.2e}"
    return "no difference"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--size", default="0.5b", choices=sorted(SHAPES))
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    import torch

    started = time.perf_counter()
    log(f"# mint-local GPU check, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()} {os.cpu_count()} CPUs, torch {torch.__version__}")
    if args.device == "cuda":
        if not torch.cuda.is_available():
            log("no CUDA device: torch.cuda.is_available() is False (run this on a GPU machine, or `--device cpu --size tiny` for a dry run)")
            return 2
        log(f"device: {torch.cuda.get_device_name(0)}, {torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB, CUDA {torch.version.cuda}")
    failures: list[str] = []
    work = Path(tempfile.mkdtemp(prefix="mint-local-gpu-check-"))
    build_model(args.size)
    servers: dict[str, LocalServer] = {}
    try:
        for label, flags in SERVERS:
            servers[label], launch_s = start_server(args.size, args.device, work, label, *flags)
            banner = [line for line in servers[label].log_path.read_text().splitlines() if "serving" in line]
            log(f"[1] {label} server: listening {launch_s:.1f} s after launch; {banner[-1].split('mint-local: ', 1)[-1] if banner else ''}")
        main_server = servers["default"]

        r = sft(main_server, args.steps)
        log(
            f"[2] LoRA SFT, 8 x 256 tokens, rank 16: first forward_backward {r['first_fb_s']:.2f} s, then median step "
            f"{r['step_s'] * 1000:.0f} ms over {args.steps}; loss {r['loss_first']:.1f} -> {r['loss_last']:.1f}"
        )
        if not r["ok"]:
            failures.append("SFT loss did not go down")

        c = concurrency(main_server, args.rounds)
        log(f"[3] 64 tokens: one x16 {c['one']:.0f} tok/s, 16 x1 {c['many']:.0f} tok/s: ratio {c['many'] / c['one']:.2f} (target >= 0.8)")

        # Exactness first (two short conversations): the figure that decides the CUDA default.
        _, cached = conversations(servers["cache-on"], False, 99, count=1)
        _, uncached = conversations(servers["cache-off"], False, 99, count=1)
        _, again = conversations(servers["cache-off"], False, 99, count=1)
        log(f"[4] one conversation, cache off, twice on one server: identical: {uncached == again}")
        log(f"[4] one conversation with and without the prefix cache: tokens and logprobs identical: {cached == uncached}; {differences(cached[0], uncached[0])}")
        if cached != uncached:
            failures.append("prefix-cached sampling differs from uncached")
        # Then both workloads on both servers in every round (history first, then fresh prompts
        # of the same lengths), after one unmeasured conversation of each kind (kernel shapes).
        runs: dict[str, dict[str, list[float]]] = {label: {"history": [], "fresh": []} for label in ("cache-on", "cache-off")}
        for label in runs:
            conversations(servers[label], False, 50, count=1)
            conversations(servers[label], True, 50, count=1)
        for i in range(args.rounds):
            for label, times in runs.items():
                times["history"].append(conversations(servers[label], False, i)[0])
                times["fresh"].append(conversations(servers[label], True, i)[0])
        for label, times in runs.items():
            h, f = statistics.median(times["history"]), statistics.median(times["fresh"])
            log(
                f"[4] {label}: multi-turn, 4 x 4 turns from 800 tokens: history {h:.2f} s, fresh prompts {f:.2f} s: {f / h:.2f}x "
                f"(target >= 2 with the cache on); rounds: history {fmt(times['history'])}, fresh {fmt(times['fresh'])}"
            )

        with burners(2, 300):
            time.sleep(2.0)
            beside = {label: conversations(servers[label], False, 7)[0] for label in ("default", "threads-1")}
        log(f"[5] beside 2 busy processes: default threads {beside['default']:.2f} s, --threads 1 {beside['threads-1']:.2f} s: {beside['default'] / beside['threads-1']:.2f}x")
    except Exception as e:  # noqa: BLE001 - report what failed, with the server logs, and go on to stop them
        failures.append(f"{type(e).__name__}: {e}")
        for label, server in servers.items():
            log(f"--- {label} server log (tail) ---\n" + "\n".join(server.log_path.read_text().splitlines()[-15:]))
    finally:
        for server in servers.values():
            server.stop()
    log(f"total {time.perf_counter() - started:.0f} s; " + ("all checks passed" if not failures else "FAILED: " + "; ".join(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
