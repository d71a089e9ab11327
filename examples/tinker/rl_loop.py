"""A GRPO loop on the Tinker API, the way the latest Tinker docs (tinker 0.38) write it.

mint-migrate reports the `import mint as tinker` bridge and each 0.38-only call to change.
"""

import asyncio

import tinker
from tinker import types

BASE_MODEL = "Qwen/Qwen3-4B-Instruct-2507"
LORA_RANK = 32
LEARNING_RATE = 4e-5
GROUP_SIZE = 8
MAX_TOKENS = 256

PROMPTS = [("What is 17 + 25?", "42"), ("What is 9 * 7?", "63")]


def reward(text: str, answer: str) -> float:
    return 1.0 if text.strip().endswith(answer) else 0.0


async def main() -> None:
    service_client = tinker.ServiceClient()
    training_client = await service_client.create_lora_training_client(base_model=BASE_MODEL, rank=LORA_RANK)
    tokenizer = training_client.get_tokenizer()
    params = types.SamplingParams(max_tokens=MAX_TOKENS, temperature=1.0, stop=["\n\n"])
    for step in range(50):
        sampler = await training_client.save_weights_and_get_sampling_client()
        datums = []
        for question, answer in PROMPTS:
            prompt = types.ModelInput.from_ints(tokenizer.encode(question))
            result = await sampler.sample(prompt=prompt, num_samples=GROUP_SIZE, sampling_params=params)
            scores = [reward(tokenizer.decode(s.tokens), answer) for s in result.sequences]
            mean = sum(scores) / len(scores)
            for seq, score in zip(result.sequences, scores):
                pad = prompt.length - 1
                datums.append(types.Datum(
                    model_input=prompt.append(types.EncodedTextChunk(tokens=seq.tokens[:-1])),
                    loss_fn_inputs={
                        "target_tokens": [0] * pad + seq.tokens,
                        "logprobs": [0.0] * pad + seq.logprobs,
                        "advantages": [0.0] * pad + [score - mean] * len(seq.tokens),
                    },
                ))
        fwd = training_client.forward_backward(datums, loss_fn="importance_sampling")
        opt = training_client.optim_step(types.AdamParams(learning_rate=LEARNING_RATE))
        result = await fwd
        await opt
        print(step, result.metrics["loss:sum"])
    await training_client.save_state("final", user_metadata={"recipe": "rl_loop"})


if __name__ == "__main__":
    asyncio.run(main())
