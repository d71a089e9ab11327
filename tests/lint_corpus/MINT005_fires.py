import mint
from mint import types


async def main(base_model: str, prompt):
    service_client = mint.ServiceClient()
    training_client = await service_client.create_lora_training_client(base_model=base_model, rank=16)  # expect: MINT005
    sampler = await training_client.save_weights_and_get_sampling_client()  # expect: MINT005
    params = types.SamplingParams(max_tokens=16)
    response = await sampler.sample(prompt=prompt, num_samples=1, sampling_params=params)  # expect: MINT005
    pending = sampler.sample(prompt=prompt, num_samples=1, sampling_params=params)
    again = await pending  # expect: MINT005
    return training_client, response, again
