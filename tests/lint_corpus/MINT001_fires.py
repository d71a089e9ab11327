import mint
from mint import types

params = types.SamplingParams(max_tokens=64, stop_token_ids=[151645])  # expect: MINT001
both = mint.SamplingParams(max_tokens=8, stop=["\n"], stop_token_ids=[2])  # expect: MINT001
