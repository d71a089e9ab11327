from mint import types

params = types.SamplingParams(max_new_tokens=128, temperature=0.7)  # expect: MINT002
params = types.SamplingParams(max_tokens=128, repetition_penalty=1.1)  # expect: MINT002
