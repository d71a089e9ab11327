import os

import mint
import tinker
import tinker_cookbook  # noqa: F401 - a different package
from tinker import types

client = mint.ServiceClient(base_url=os.environ.get("MINT_BASE_URL"))
params = types.SamplingParams(max_tokens=8)
same = tinker.ServiceClient
