"""Uses tinker's name for the SDK."""

import os

import mint as tinker
from tinker import types

client = tinker.ServiceClient(base_url=os.environ.get("MINT_BASE_URL"))
params = types.SamplingParams(max_tokens=8)
