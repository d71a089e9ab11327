import asyncio

import mint
from mint import types


async def rollouts(sampling_client: mint.SamplingClient, prompts, prompt, model, batches):
    params = types.SamplingParams(max_tokens=64)
    semaphore = asyncio.Semaphore(32)

    async def one(p):
        async with semaphore:
            return await sampling_client.sample_async(prompt=p, num_samples=4, sampling_params=params)

    results = await asyncio.gather(*[one(p) for p in prompts])
    # one group of 8 samples is bounded
    group = await asyncio.gather(*[sampling_client.sample_async(prompt=prompt, num_samples=1, sampling_params=params) for _ in range(8)])
    # gathering non-sampling work is not this rule's business
    scores = await asyncio.gather(*[model.score(b) for b in batches])
    return results, group, scores
