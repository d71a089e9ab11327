import numpy as np
from mint import types


def shifted(tokens, weights):
    input_tokens = tokens[:-1]
    target_tokens = np.array(tokens[1:], dtype=np.int64)
    return types.Datum(
        model_input=types.ModelInput.from_ints(input_tokens),
        loss_fn_inputs={"target_tokens": types.TensorData.from_numpy(target_tokens), "weights": weights[1:]},
    )


def prompt_and_completion(prompt_tokens, completion_tokens, advantages, logprobs):
    # RL: the model input is the prompt plus all but the last sampled token; targets are shifted.
    full = prompt_tokens + completion_tokens
    return types.Datum(
        model_input=types.ModelInput.from_ints(full[:-1]),
        loss_fn_inputs={"target_tokens": full[1:], "advantages": advantages, "logprobs": logprobs},
    )
