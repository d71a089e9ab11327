"""Benchmark mint-local against raw torch, each figure with its baseline measured in this run.

    python bench/bench_mint_local.py            # everything (~2-4 minutes on 2 CPU cores)
    python bench/bench_mint_local.py --quick    # fewer repeats

Figures (issue 3, "Benchmarks"):
  1. cold start: `python -m mint_local serve` launched -> first forward_backward finished
     through the SDK (tiny model, already cached); baselines: a fresh interpreter's bare
     `import torch` (the floor any torch server pays) and `import torch, transformers, peft`
     (what a server built on transformers' model code pays before its first step).
  2. 20-step LoRA SFT loop through the SDK vs the same loop in raw torch in this process
     (same model folder, LoRA rank, targets, data, AdamW, thread count), on the tiny model
     and on the ~30M-parameter model.
  3. peak RSS of the server process on the tiny model after training and sampling.
  4. sampling tokens/s through the SDK vs raw `model.generate` with the same LoRA model.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mint_local.launcher import LocalServer  # noqa: E402

API_KEY = "sk-mint-local-bench"
RANK = 16
BATCH, SEQ_LEN = 4, 64
STEPS = 20
LR = 1e-3


def sft_batch(vocab: int, seed: int = 0) -> list[list[int]]:
    import random

    rng = random.Random(seed)
    return [[rng.randrange(10, vocab - 10) for _ in range(SEQ_LEN + 1)] for _ in range(BATCH)]


def close(service_client) -> None:
    """Stop a ServiceClient's heartbeat and telemetry before its server goes away."""
    service_client.holder.close()


def sdk_sft_step(server: LocalServer, seqs: list[list[int]]):
    """One LoRA SFT step through the SDK, as a closure (plus the client to close afterwards)."""
    import mint

    sc = mint.ServiceClient(base_url=server.base_url, api_key=API_KEY)
    tc = sc.create_lora_training_client(base_model=server.model_name, rank=RANK, seed=0)
    data = [
        mint.Datum(model_input=mint.ModelInput.from_ints(s[:-1]), loss_fn_inputs={"target_tokens": s[1:], "weights": [1.0] * SEQ_LEN})
        for s in seqs
    ]

    def step() -> float:
        fb = tc.forward_backward(data, "cross_entropy")
        op = tc.optim_step(mint.AdamParams(learning_rate=LR))
        op.result()
        return fb.result().metrics["loss:sum"]

    return step, sc


def raw_sft_step(model_dir: Path, seqs: list[list[int]], threads: int):
    """The same step with no server: peft LoRA on the same targets, summed token loss, AdamW."""
    import torch
    from peft import LoraConfig, inject_adapter_in_model
    from transformers import AutoModelForCausalLM

    from mint_local.engine import LORA_ALPHA, _linear_module_groups

    torch.set_num_threads(threads)
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    model.eval()
    model.requires_grad_(False)
    groups = _linear_module_groups(model)
    targets = groups["attn"] + groups["mlp"] + groups["unembed"]
    torch.manual_seed(0)
    inject_adapter_in_model(LoraConfig(r=RANK, lora_alpha=LORA_ALPHA, target_modules=targets), model, "bench")
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=LR, betas=(0.9, 0.95), eps=1e-12, weight_decay=0.0, foreach=True)
    inp = torch.tensor([s[:-1] for s in seqs])
    tgt = torch.tensor([s[1:] for s in seqs])

    def step() -> float:
        logits = model(input_ids=inp).logits.float()
        lp = logits.gather(-1, tgt[..., None]).squeeze(-1) - torch.logsumexp(logits, -1)
        loss = -lp.sum()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return float(loss.detach())

    return step


def interleaved(a, b, steps: int = STEPS, warmup: int = 2) -> tuple[list[float], list[float]]:
    """Time a() and b() alternately, so load from other processes hits both alike."""
    times_a, times_b = [], []
    for i in range(steps + warmup):
        for fn, times in ((a, times_a), (b, times_b)):
            t = time.perf_counter()
            fn()
            if i >= warmup:
                times.append(time.perf_counter() - t)
    return times_a, times_b


def server_threads(server: LocalServer) -> int:
    for line in server.log_path.read_text().splitlines():
        if " CPU threads" in line:
            return int(line.split(" CPU threads")[0].rsplit(" ", 1)[-1])
    raise RuntimeError("thread count not found in the server log")


def server_params(server: LocalServer) -> int:
    for line in server.log_path.read_text().splitlines():
        if " parameters) on " in line:
            return int(line.split(" parameters) on ")[0].rsplit(", ", 1)[-1].replace(",", ""))
    raise RuntimeError("parameter count not found in the server log")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("VmHWM not found")


def cold_start(state_dir: Path) -> dict[str, float]:
    import mint

    t0 = time.perf_counter()
    server = LocalServer.start(model="tiny", device="cpu", state_dir=state_dir)
    t_listen = time.perf_counter()
    sc = None
    try:
        sc = mint.ServiceClient(base_url=server.base_url, api_key=API_KEY)
        tc = sc.create_lora_training_client(base_model=server.model_name, rank=RANK)
        datum = mint.Datum(model_input=mint.ModelInput.from_ints(list(range(10, 40))), loss_fn_inputs={"target_tokens": list(range(11, 41)), "weights": [1.0] * 30})
        tc.forward_backward([datum], "cross_entropy").result()
        t_done = time.perf_counter()
    finally:
        if sc is not None:
            close(sc)
        server.stop()
    return {"listening_s": t_listen - t0, "first_fwdbwd_s": t_done - t0}


IMPORT_FLOORS = {
    "torch": "import torch",
    "torch, transformers, peft": "import torch, transformers, peft; from transformers import AutoModelForCausalLM",
}


def import_floor(code: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - t


def sampling_rates(server: LocalServer, model_dir: Path, threads: int, num_samples: int = 8, max_tokens: int = 64) -> tuple[float, float]:
    import mint
    import torch
    from peft import LoraConfig, inject_adapter_in_model
    from transformers import AutoModelForCausalLM

    from mint_local.engine import LORA_ALPHA, _linear_module_groups

    prompt = list(range(20, 36))
    sc = mint.ServiceClient(base_url=server.base_url, api_key=API_KEY)
    tc = sc.create_lora_training_client(base_model=server.model_name, rank=RANK, seed=0)
    sampler = tc.save_weights_and_get_sampling_client()
    params = mint.SamplingParams(max_tokens=max_tokens, stop=[], seed=0)
    closing = sc
    sampler.sample(prompt=mint.ModelInput.from_ints(prompt), num_samples=num_samples, sampling_params=params).result()
    runs = []
    for _ in range(3):
        t = time.perf_counter()
        out = sampler.sample(prompt=mint.ModelInput.from_ints(prompt), num_samples=num_samples, sampling_params=params).result()
        runs.append(sum(len(s.tokens) for s in out.sequences) / (time.perf_counter() - t))

    torch.set_num_threads(threads)
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    model.eval()
    groups = _linear_module_groups(model)
    inject_adapter_in_model(LoraConfig(r=RANK, lora_alpha=LORA_ALPHA, target_modules=groups["attn"] + groups["mlp"] + groups["unembed"]), model, "bench")
    ids = torch.tensor([prompt] * num_samples)
    raw = []
    with torch.inference_mode():
        for i in range(4):
            t = time.perf_counter()
            gen = model.generate(
                input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=True, max_new_tokens=max_tokens,
                min_new_tokens=max_tokens, top_k=0, top_p=1.0, temperature=1.0, pad_token_id=0,
            )
            if i:
                raw.append((gen.shape[1] - ids.shape[1]) * num_samples / (time.perf_counter() - t))
    close(closing)
    return statistics.median(runs), statistics.median(raw)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="one cold start instead of three")
    args = parser.parse_args()
    import tempfile

    import mint  # noqa: F401  (the client process is warm, as in a real script)
    import torch

    from mint_local.tiny_model import ensure_tiny_model

    tiny_dir, big_dir = ensure_tiny_model("tiny"), ensure_tiny_model("tiny-30m")
    work = Path(tempfile.mkdtemp(prefix="mint-local-bench-"))
    print(f"# mint-local benchmark, {time.strftime('%Y-%m-%d %H:%M')}, {platform.machine()} {os.cpu_count()} CPUs, torch {torch.__version__}")
    print(f"load average at start: {os.getloadavg()}")

    repeats = 1 if args.quick else 3
    floors: dict[str, list[float]] = {name: [] for name in IMPORT_FLOORS}
    starts = []
    for i in range(repeats):  # interleaved, so background load hits the baselines and the server alike
        for name, code in IMPORT_FLOORS.items():
            floors[name].append(import_floor(code))
        starts.append(cold_start(work / f"cold{i}"))
    first = [s["first_fwdbwd_s"] for s in starts]
    listen = [s["listening_s"] for s in starts]
    baselines = "; ".join(f"`import {name}` {min(t):.2f}/{statistics.median(t):.2f} s" for name, t in floors.items())
    print(
        f"\n## cold start (tiny, cached; best/median of {repeats}): listening {min(listen):.2f}/{statistics.median(listen):.2f} s, "
        f"first forward_backward done {min(first):.2f}/{statistics.median(first):.2f} s (target < 3 s); "
        f"baselines in a fresh interpreter: {baselines}"
    )

    for label, variant, folder in (("tiny", "tiny", tiny_dir), ("~30M", "tiny-30m", big_dir)):
        with LocalServer.start(model=variant, device="cpu", state_dir=work / variant) as server:
            seqs = sft_batch(vocab=2000)
            threads = server_threads(server)
            sdk_step, sc = sdk_sft_step(server, seqs)
            sdk, raw = interleaved(sdk_step, raw_sft_step(folder, seqs, threads))
            close(sc)
            if variant == "tiny":
                sample_sdk, sample_raw = sampling_rates(server, folder, threads)
                rss = peak_rss_mb(server.pid)
            n_params = server_params(server)
        med_sdk, med_raw = statistics.median(sdk), statistics.median(raw)
        print(f"\n## {STEPS}-step LoRA SFT ({label}: {n_params:,} parameters, rank {RANK}, batch {BATCH}x{SEQ_LEN} tokens, {threads} thread(s), SDK and raw steps interleaved)")
        print(
            f"SDK via mint-local: median {1000 * med_sdk:.1f} ms/step (best {1000 * min(sdk):.1f}, mean {1000 * statistics.mean(sdk):.1f}); "
            f"raw torch in-process: median {1000 * med_raw:.1f} ms/step (best {1000 * min(raw):.1f}, mean {1000 * statistics.mean(raw):.1f}); "
            f"ratio of medians {med_sdk / med_raw:.2f}x, of bests {min(sdk) / min(raw):.2f}x (target {'<= 3x' if label == 'tiny' else '<= 1.3x'})"
        )
    print(f"\n## peak server RSS (tiny, after SFT + sampling): {rss:.0f} MB (target < 600 MB)")
    print(f"\n## sampling (tiny, 8 samples x 64 tokens): SDK via mint-local {sample_sdk:.0f} tokens/s; "
          f"raw model.generate {sample_raw:.0f} tokens/s; ratio {sample_sdk / sample_raw:.2f}x")
    print(f"\nload average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
