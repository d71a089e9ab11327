import random

import mint
from mint import types


def sample(sampling_client, prompt, dataset):
    params = types.SamplingParams(max_tokens=32)
    response = sampling_client.sample(prompt=prompt, num_samples=4, sampling_params=params).result()
    picked = random.sample(dataset.samples, 2)
    return [s.tokens for s in response.sequences], picked
