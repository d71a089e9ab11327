# vLLM's SamplingParams really has stop_token_ids; only the SDK's drops it.
import mint
from mint import types
from vllm import SamplingParams

params = types.SamplingParams(max_tokens=64, stop=[151645])
vllm_params = SamplingParams(max_tokens=64, stop_token_ids=[151645])
