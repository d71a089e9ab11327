from mint import types


def same_tokens(tokens, weights):
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens),
        loss_fn_inputs={"target_tokens": tokens, "weights": weights},  # expect: MINT020
    )


def same_slice(example):
    input_tokens = example["tokens"][:-1]
    target_tokens = example["tokens"][:-1]
    model_input = types.ModelInput.from_ints(input_tokens)
    return types.Datum(model_input=model_input, loss_fn_inputs={"target_tokens": target_tokens})  # expect: MINT020


def backwards(tokens):
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[1:]),
        loss_fn_inputs={"target_tokens": tokens[:-1]},  # expect: MINT020
    )
