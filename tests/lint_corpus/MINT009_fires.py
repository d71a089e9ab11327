from mint import types


def build(inp, tgt, mask):
    return types.Datum(
        model_input=types.ModelInput.from_ints(inp),
        loss_fn_inputs={"target_tokens": tgt, "mask": [1] * len(tgt)},  # expect: MINT009
    )


def build_dict(inp, tgt, ref):
    return types.Datum(model_input=types.ModelInput.from_ints(inp), loss_fn_inputs=dict(target_tokens=tgt, ref_logprobs=ref.tolist()))  # expect: MINT009
