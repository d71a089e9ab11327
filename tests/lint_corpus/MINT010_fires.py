import mint
from mint import types


def make_datum(tokens, weights, ref):
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": weights[1:], "ref_logprobs": ref},  # expect: MINT010
    )


def step(training_client: mint.TrainingClient, pairs, dpo_loss):
    data = []
    for tokens, weights, ref in pairs:
        data.append(make_datum(tokens, weights, ref))
    inline = [
        types.Datum(
            model_input=types.ModelInput.from_ints(t[:-1]),
            loss_fn_inputs={"target_tokens": t[1:], "weights": w[1:], "label": y},  # expect: MINT010
        )
        for t, w, y in pairs
    ]
    training_client.forward_backward_custom(data, dpo_loss).result()
    training_client.forward_backward_custom(inline, dpo_loss).result()
