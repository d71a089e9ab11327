"""SDK traps with safe fixes: stop_token_ids, .loss, .samples, await on sync calls."""

import mint
from mint import types


async def main(base_model: str, batch, prompt, adam):
    service_client = mint.ServiceClient()
    training_client = await service_client.create_lora_training_client_async(base_model=base_model, rank=16)
    fb = training_client.forward_backward(batch, "cross_entropy").result()
    training_client.optim_step(adam).result()
    print("loss", fb.metrics["loss:sum"], (fb.metrics["loss:sum"]))
    sampler = await training_client.save_weights_and_get_sampling_client_async()
    params = types.SamplingParams(max_tokens=32, stop=[151645], temperature=1.0)
    response = await sampler.sample_async(prompt=prompt, num_samples=4, sampling_params=params)
    for sequence in response.sequences:
        print(sequence.tokens)
    return training_client.forward(batch, "cross_entropy").result().metrics["loss:sum"]
