import asyncio

import mint
from mint import types


async def rollouts(sampling_client: mint.SamplingClient, prompts):
    params = types.SamplingParams(max_tokens=64)
    results = await asyncio.gather(  # expect: MINT022
        *[sampling_client.sample_async(prompt=p, num_samples=4, sampling_params=params) for p in prompts]
    )
    tasks = []
    for p in prompts:
        tasks.append(asyncio.create_task(sampling_client.sample_async(prompt=p, num_samples=4, sampling_params=params)))
    more = await asyncio.gather(*tasks)  # expect: MINT022

    async def one(p):
        return await sampling_client.sample_async(prompt=p, num_samples=4, sampling_params=params)

    third = await asyncio.gather(*(one(p) for p in prompts))  # expect: MINT022
    return results, more, third
