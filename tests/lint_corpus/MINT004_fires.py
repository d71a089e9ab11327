import asyncio

import mint
from mint import types


def sample(sampling_client, prompt):
    params = types.SamplingParams(max_tokens=32)
    response = sampling_client.sample(prompt=prompt, num_samples=4, sampling_params=params).result()
    return [s.tokens for s in response.samples]  # expect: MINT004


async def sample_async(service_client, prompt):
    sampler = service_client.create_sampling_client(base_model="Qwen/Qwen3-0.6B")
    params = types.SamplingParams(max_tokens=32)
    response = await sampler.sample_async(prompt=prompt, num_samples=4, sampling_params=params)
    return response.samples  # expect: MINT004
