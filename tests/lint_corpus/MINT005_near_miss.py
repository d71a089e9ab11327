import asyncio

import mint
from mint import types


async def main(base_model: str, prompt, batch):
    service_client = mint.ServiceClient()
    training_client = await service_client.create_lora_training_client_async(base_model=base_model, rank=16)
    sampler = await training_client.save_weights_and_get_sampling_client_async()
    params = types.SamplingParams(max_tokens=16)
    response = await sampler.sample_async(prompt=prompt, num_samples=1, sampling_params=params)
    pending = sampler.sample(prompt=prompt, num_samples=1, sampling_params=params)
    wrapped = await asyncio.wrap_future(pending)
    # An APIFuture from a sync training call can be awaited.
    fb = await training_client.forward_backward(batch, "cross_entropy")
    return response.sequences, wrapped.sequences, fb.metrics
