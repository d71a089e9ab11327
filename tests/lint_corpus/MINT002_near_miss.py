from mint import types

params = types.SamplingParams(max_tokens=128, temperature=0.7, top_p=0.95, top_k=50, seed=0, stop=["</s>"])
extra = {"max_tokens": 16}
more = types.SamplingParams(**extra)
