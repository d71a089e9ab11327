"""What the check that undoes a poisoning optim_step costs (issue 26): after each step mint-local
runs a forward of the first 32 tokens of the last sequence trained on, besides checking weights
and Adam moments. Measured in-process on the Engine (tiny model, LoRA rank 16, 8 x 256-token
batches), alternating the full check and the weights-and-moments check in the same run.

    .venv/bin/python bench/bench_optim_check.py [--repeats 12]
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from mint_local import protocol as p
from mint_local.engine import Engine
from mint_local.inputs import prepare_batch
from mint_local.testing import TEXT


def weights_and_moments_only(engine: Engine, tm) -> bool:
    moments = [t for t in (*tm.optimizer.exp_avg, *tm.optimizer.exp_avg_sq) if t is not None]
    return all(bool(torch.isfinite(t).all()) for t in (*tm.params, *moments))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=12)
    args = parser.parse_args()
    engine = Engine("tiny", device="cpu", state_dir=tempfile.mkdtemp(prefix="bench-optim-check-"))
    engine.create_model("m", engine.name, p.LoraConfig(rank=16, seed=0), "s", None)
    encoded = engine.tokenizer.encode(TEXT)
    tokens = ((encoded.ids if hasattr(encoded, "ids") else encoded) * 20)[:257]
    datum = p.Datum.model_validate(
        {
            "model_input": {"chunks": [{"tokens": tokens[:-1]}]},
            "loss_fn_inputs": {"target_tokens": {"data": tokens[1:], "dtype": "int64"}, "weights": {"data": [1.0] * 256}},
        }
    )
    batch = prepare_batch(p.ForwardBackwardInput(data=[datum] * 8, loss_fn="cross_entropy"), vocab_size=engine.vocab_size, max_length=engine.max_context)
    adam = p.AdamParams(learning_rate=1e-4)
    full_check = Engine._usable
    times: dict[str, list[float]] = {"optim_step, full check": [], "optim_step, weights and moments only": [], "training step": []}
    for _ in range(args.repeats):
        for label, check in (("optim_step, full check", full_check), ("optim_step, weights and moments only", weights_and_moments_only)):
            Engine._usable = check
            engine.forward("m", batch, backward=True)
            started = time.perf_counter()
            engine.optim_step("m", adam)
            times[label].append(time.perf_counter() - started)
        Engine._usable = full_check
        started = time.perf_counter()
        engine.forward("m", batch, backward=True)
        engine.optim_step("m", adam)
        times["training step"].append(time.perf_counter() - started)
    median = {k: statistics.median(v[2:]) for k, v in times.items()}  # the first two warm up
    for label, value in median.items():
        print(f"{label}: median {value * 1000:.1f} ms")
    extra = median["optim_step, full check"] - median["optim_step, weights and moments only"]
    print(f"ratio {median['optim_step, full check'] / median['optim_step, weights and moments only']:.2f}x; the probe forward adds "
          f"{extra * 1000:.1f} ms, {100 * extra / median['training step']:.1f}% of a training step (forward_backward + optim_step)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
