"""A correct async GRPO step on MinT: bounded sampling, group advantages, two awaits."""

import asyncio
import os

import mint
from mint import types

GROUP_SIZE = 8
MAX_IN_FLIGHT = 32


def reward(text: str, answer: str) -> float:
    return 1.0 if text.strip().endswith(answer) else 0.0


class Trainer:
    def __init__(self, base_model: str, rank: int = 16):
        self.service_client = mint.ServiceClient(base_url=os.environ.get("MINT_BASE_URL"))
        self.base_model = base_model
        self.rank = rank
        self.training_client = None
        self.semaphore = asyncio.Semaphore(MAX_IN_FLIGHT)

    async def start(self):
        self.training_client = await self.service_client.create_lora_training_client_async(
            base_model=self.base_model, rank=self.rank
        )
        self.tokenizer = self.training_client.get_tokenizer()

    async def sample_group(self, sampler, prompt_tokens):
        params = types.SamplingParams(max_tokens=128, temperature=1.0, stop=[self.tokenizer.eos_token_id])
        async with self.semaphore:
            return await sampler.sample_async(
                prompt=types.ModelInput.from_ints(prompt_tokens), num_samples=GROUP_SIZE, sampling_params=params
            )

    async def step(self, problems, adam):
        sampler = await self.training_client.save_weights_and_get_sampling_client_async()
        prompts = [self.tokenizer.encode(p["question"]) for p in problems]
        responses = await asyncio.gather(*[self.sample_group(sampler, p) for p in prompts])
        data = []
        for problem, prompt_tokens, response in zip(problems, prompts, responses):
            rewards = [reward(self.tokenizer.decode(s.tokens), problem["answer"]) for s in response.sequences]
            mean = sum(rewards) / len(rewards)
            if all(r == mean for r in rewards):
                continue
            for sequence, r in zip(response.sequences, rewards):
                tokens = prompt_tokens + sequence.tokens
                n_prompt = len(prompt_tokens) - 1
                data.append(
                    types.Datum(
                        model_input=types.ModelInput.from_ints(tokens[:-1]),
                        loss_fn_inputs={
                            "target_tokens": tokens[1:],
                            "logprobs": [0.0] * n_prompt + list(sequence.logprobs),
                            "advantages": [0.0] * n_prompt + [r - mean] * len(sequence.tokens),
                        },
                    )
                )
        if not data:
            return None
        fb_future = await self.training_client.forward_backward_async(data, "importance_sampling")
        optim_future = await self.training_client.optim_step_async(adam)
        result = await fb_future
        await optim_future
        return result.metrics["loss:sum"]


async def main():
    trainer = Trainer("Qwen/Qwen3-4B-Instruct-2507")
    await trainer.start()
    adam = types.AdamParams(learning_rate=4e-5)
    problems = [{"question": "1+1=", "answer": "2"}]
    for step in range(3):
        loss = await trainer.step(problems, adam)
        print(f"METRIC step={step} loss={loss}")


if __name__ == "__main__":
    asyncio.run(main())
