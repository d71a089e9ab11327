"""Where a prefix-cached prompt parts from a whole prefill, op by op, in-process (issue 27).

On an H200 (Dec 4) a conversation sampled with the prefix cache differed from the same one
without it, so CUDA's prefix cache became opt-in. This probe isolates the cause on one device
and dtype, without servers, in under a minute on the 0.5B shape:

  1. ops: is a matmul row's result independent of the other rows in its tile (the packed
     forward's premise), and is the same call deterministic;
  2. prefill: a 1,000-token prompt prefilled whole against its first 768 tokens prefilled, cut
     into prefix-cache blocks, restored and continued (and continued without the restore copy):
     the logits, and the first layer whose keys or values differ, for the restored positions and
     for the new ones;
  3. attention: each SDPA backend on a decode-shaped call (one query row over a cache buffer's
     slice, GQA) and a prefill-shaped one (a block of queries with a mask), 20 calls each: are
     they deterministic, and what does a call cost;
  4. decoder: a 3-turn conversation through a Decoder with the prefix cache against each turn
     served alone with nothing cached (what tests/test_mint_local_scheduler.py proves on the CPU).

    python bench/gpu_exactness.py                             # CUDA, the 0.5B shape, bf16
    python bench/gpu_exactness.py --device cpu --size tiny    # the CPU (exact: the differential tests)
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402, N812 - torch's own spelling
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

from bench.gpu_check import SHAPES, VARIANT, build_model  # noqa: E402
from mint_local import sampling  # noqa: E402
from mint_local.engine import BASE_WEIGHTS, Engine  # noqa: E402


def log(msg: str) -> None:
    print(msg, flush=True)


def gap(a: torch.Tensor, b: torch.Tensor) -> str:
    if torch.equal(a, b):
        return "identical"
    return f"differ, max |diff| {(a.float() - b.float()).abs().max().item():.3e}"


def ops(engine: Engine) -> None:
    """The packed forward's premise: a row's floats depend only on that row."""
    weight = engine.model.model.layers[0].self_attn.q_proj.weight
    g = torch.Generator(device="cpu").manual_seed(0)
    x = torch.randn(sampling.PREFILL_TILE, weight.shape[1], generator=g).to(engine.device, engine.dtype)
    perm = torch.randperm(x.shape[0], generator=g).to(engine.device)
    y = F.linear(x, weight)
    log(f"[ops] linear, the same call twice: {gap(y, F.linear(x, weight))}")
    log(f"[ops] linear, rows permuted within a {x.shape[0]}-row tile: {gap(y[perm], F.linear(x[perm], weight))}")
    alone = torch.zeros_like(x)
    alone[5] = x[5]
    log(f"[ops] linear, one row beside zero rows vs beside others: {gap(y[5], F.linear(alone, weight)[5])}")
    log(f"[ops] linear, 16-row vs 32-row tile (decode vs prefill shapes): {gap(y[:16], F.linear(x[:16], weight))}")


def prefill(engine: Engine, length: int = 1000, cut: int = 768) -> None:
    lm, tile, block = engine.lm, sampling.PREFILL_TILE, engine.lm.prefix_block
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(10, engine.vocab_size - 10, (length,), generator=g).tolist()

    def run(tokens: list[int], cache):
        seg = sampling.Segment([tokens], cache, [None])
        return lm.forward_packed([seg], tile, engine.routing)[0], seg.cache

    whole_logits, whole = run(prompt, lm.new_cache())
    _, first = run(prompt[:cut], lm.new_cache())
    restored = type(first).from_blocks(first.blocks(0, cut, block))
    restored_logits, restored = run(prompt[cut:], restored)
    continued_logits, continued = run(prompt[cut:], first)
    log(f"[prefill] {length} tokens whole vs {cut} cached + {length - cut}: last logits, restored from blocks: {gap(whole_logits, restored_logits)}")
    log(f"[prefill] ... continued on the same cache (no restore copy): {gap(whole_logits, continued_logits)}")
    for label, cache in (("restored", restored), ("continued", continued)):
        for span, (a, b) in (("cached positions", (0, cut)), ("new positions", (cut, length))):
            bad = next((i for i, (w, c) in enumerate(zip(whole.layers, cache.layers, strict=True)) if not torch.equal(w[:, :, a:b], c[:, :, a:b])), None)
            where = "every layer identical" if bad is None else f"first differs at layer {bad}: {gap(whole.layers[bad][:, :, a:b], cache.layers[bad][:, :, a:b])}"
            log(f"[prefill] {label}, keys/values of {span} {a}..{b}: {where}")


BACKENDS = {b.name.lower(): b for b in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH)}


def attention(engine: Engine, calls: int = 20) -> None:
    c = engine.model.config
    heads, kv_heads, dim = c.num_attention_heads, c.num_key_value_heads, c.head_dim
    g = torch.Generator().manual_seed(3)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g).to(engine.device, engine.dtype)

    buffer = rand(1, 2 * kv_heads, 1024, dim)  # a RowCache layer: keys then values, capacity 1024
    keys, values = buffer[:, :kv_heads, :913], buffer[:, kv_heads:, :913]
    mask = torch.ones(64, 896, dtype=torch.bool, device=engine.device).tril(832)
    shapes = {
        "decode (1 query, 913 keys)": (rand(1, heads, 1, dim), keys, values, None),
        "prefill piece (64 queries, 896 keys, mask)": (rand(1, heads, 64, dim), keys[:, :, :896], values[:, :, :896], mask),
    }
    for label, (q, k, v, m) in shapes.items():
        choice = SDPBackend(torch._fused_sdp_choice(q, k, v, attn_mask=m, scale=dim**-0.5, enable_gqa=heads != kv_heads))
        log(f"[attention] {label}: torch's own choice {choice.name.lower()}")
        for name, backend in BACKENDS.items():
            try:
                with sdpa_kernel([backend]):
                    outs = []
                    if engine.device.type == "cuda":
                        torch.cuda.synchronize()
                    t = time.perf_counter()
                    for _ in range(calls):
                        outs.append(F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=dim**-0.5, enable_gqa=heads != kv_heads))
                    if engine.device.type == "cuda":
                        torch.cuda.synchronize()
                    us = (time.perf_counter() - t) / calls * 1e6
            except RuntimeError as e:
                log(f"[attention] {label}, {name}: not available ({str(e).splitlines()[0][:80]})")
                continue
            distinct = len({o.float().cpu().numpy().tobytes() for o in outs})
            log(f"[attention] {label}, {name}: {'deterministic' if distinct == 1 else f'{distinct} different results in {calls} calls'}, {us:.0f} us a call")


def decoder(engine: Engine, turns: int = 3) -> None:
    decoder = engine.new_decoder(prefix_cache_bytes=4 << 30)
    g = torch.Generator().manual_seed(2)
    prompt = torch.randint(10, engine.vocab_size - 10, (800,), generator=g).tolist()
    for turn in range(turns):
        params = SimpleNamespace(stop=[], max_tokens=32, temperature=1.0, top_k=-1, top_p=1.0, seed=turn)
        request = (BASE_WEIGHTS, prompt, 1, params, False, 0)
        got: dict = {}
        decoder.add(engine.sample_request(*request, report=got.update))
        while decoder.pending():
            decoder.step()
        alone, again = engine.sample(*request), engine.sample(*request)
        a, b = got["sequences"][0], alone["sequences"][0]
        same = next((i for i, (x, y) in enumerate(zip(a["tokens"], b["tokens"], strict=True)) if x != y), len(a["tokens"]))
        diff = max(abs(x - y) for x, y in zip(a["logprobs"][:same], b["logprobs"][:same], strict=False)) if same else 0.0
        log(
            f"[decoder] turn {turn} ({len(prompt)} tokens, {decoder.prefix.reused_tokens} reused so far): cached == alone: {got == alone} "
            f"(tokens equal up to {same}, logprobs there up to {diff:.2e}); alone twice equal: {alone == again}"
        )
        prompt = prompt + a["tokens"] + torch.randint(10, engine.vocab_size - 10, (24,), generator=g).tolist()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--size", default="0.5b", choices=sorted(SHAPES))
    parser.add_argument("--dtype", default="auto", help="auto (bf16 on CUDA, float32 on the CPU), float32 or bfloat16")
    parser.add_argument("--sections", default="ops,prefill,attention,decoder")
    parser.add_argument(
        "--backend",
        action="append",
        help="run the decoder section with these attention backends in this order, comma-separated; "
        "'default' leaves torch's choice; repeat to run it several times (default: once, torch's choice)",
    )
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    if args.device == "cuda" and not torch.cuda.is_available():
        log("no CUDA device (run on a GPU machine, or --device cpu --size tiny)")
        return 2
    started = time.perf_counter()
    build_model(args.size)
    with tempfile.TemporaryDirectory() as state:
        engine = Engine(VARIANT.format(size=args.size), device=args.device, dtype=args.dtype, state_dir=state, threads=1 if args.device == "cpu" else None)
        log(f"# {engine.device} {engine.dtype}, {engine.num_parameters / 1e6:.0f}M parameters, torch {torch.__version__}")
        with torch.inference_mode():
            for name, section in (("ops", ops), ("prefill", prefill), ("attention", attention)):
                if name in sections:
                    section(engine)
        for backends in args.backend or ["default"] if "decoder" in sections else []:
            log(f"[decoder] attention backends: {backends}")
            chosen = [BACKENDS[b] for b in backends.split(",")] if backends != "default" else None
            with sdpa_kernel(chosen, set_priority=True) if chosen else contextlib.nullcontext():
                decoder(engine)
    log(f"total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
