import numpy as np
from mint import types


def build(inp, tgt, adv, old_logprobs):
    return types.Datum(
        model_input=types.ModelInput.from_ints(inp),
        loss_fn_inputs={
            "target_tokens": tgt,
            "advantages": [0.5] * len(tgt),
            "logprobs": list(old_logprobs),
            "mask": types.TensorData.from_numpy(np.ones(len(tgt), dtype=np.float32)),
        },
    )
