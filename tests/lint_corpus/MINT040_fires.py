import os

import tinker  # expect: MINT040
from tinker import types

client = tinker.ServiceClient(base_url=os.environ.get("MINT_BASE_URL"))
params = types.SamplingParams(max_tokens=8)
