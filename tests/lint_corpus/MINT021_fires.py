from mint import types


def unpacked(renderer, messages):
    tokens, weights = renderer.build_supervised_example(messages)
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": weights},  # expect: MINT021
    )


def sibling_fields(example):
    return types.Datum(
        model_input=types.ModelInput.from_ints(example["tokens"][:-1]),
        loss_fn_inputs={"target_tokens": example["tokens"][1:], "weights": example["weights"][:-1]},  # expect: MINT021
    )


def from_length(tokens):
    weights = [1.0] * len(tokens)
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": weights},  # expect: MINT021
    )
