"""A correct MinT SFT loop: shifted tokens and weights, futures resolved, resume with optimizer."""

import argparse
import json
import os

import mint
import numpy as np
from mint import types
from transformers import AutoTokenizer


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-model", default="Qwen/Qwen3-4B-Instruct-2507")
    parser.add_argument("--rank", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=2e-4)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--data", default="train.jsonl")
    parser.add_argument("--resume")
    return parser.parse_args()


def load_tokenizer(base_model, training_client):
    try:
        return AutoTokenizer.from_pretrained(base_model, local_files_only=True)
    except OSError:
        return training_client.get_tokenizer()


def build_datum(tokenizer, prompt: str, completion: str) -> types.Datum:
    prompt_tokens = tokenizer.encode(prompt)
    completion_tokens = tokenizer.encode(completion) + [tokenizer.eos_token_id]
    tokens = prompt_tokens + completion_tokens
    weights = [0.0] * len(prompt_tokens) + [1.0] * len(completion_tokens)
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={
            "target_tokens": types.TensorData.from_numpy(np.array(tokens[1:], dtype=np.int64)),
            "weights": types.TensorData.from_numpy(np.array(weights[1:], dtype=np.float32)),
        },
    )


def main():
    args = parse_args()
    service_client = mint.ServiceClient(base_url=os.environ.get("MINT_BASE_URL"))
    training_client = service_client.create_lora_training_client(base_model=args.base_model, rank=args.rank)
    if args.resume:
        training_client.load_state_with_optimizer(args.resume).result()
    tokenizer = load_tokenizer(args.base_model, training_client)
    rows = [json.loads(line) for line in open(args.data, encoding="utf-8")]
    adam = types.AdamParams(learning_rate=args.learning_rate, eps=1e-8)
    for step in range(args.steps):
        batch = [build_datum(tokenizer, r["prompt"], r["completion"]) for r in rows[step * 8 : step * 8 + 8]]
        fb_future = training_client.forward_backward(batch, "cross_entropy")
        optim_future = training_client.optim_step(adam)
        fb = fb_future.result()
        optim_future.result()
        tokens = sum(len(d.model_input.to_ints()) for d in batch)
        print(f"METRIC step={step} loss={fb.metrics['loss:sum'] / max(tokens, 1):.4f} tokens={tokens}")
        if (step + 1) % 50 == 0:
            path = training_client.save_state(f"step-{step + 1}").result().path
            print(f"saved {path}")
    final = training_client.save_weights_for_sampler("final").result().path
    sampler = service_client.create_sampling_client(model_path=final)
    params = types.SamplingParams(max_tokens=64, stop=[tokenizer.eos_token_id], temperature=0.0)
    prompt = types.ModelInput.from_ints(tokenizer.encode("Hello"))
    response = sampler.sample(prompt=prompt, num_samples=1, sampling_params=params).result()
    print(tokenizer.decode(response.sequences[0].tokens))


if __name__ == "__main__":
    main()
