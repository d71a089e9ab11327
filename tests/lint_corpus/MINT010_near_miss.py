import mint
from mint import types


def make_datum(tokens, weights):
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": weights[1:]},
    )


def step(training_client: mint.TrainingClient, pairs, make_dpo_loss, advantages):
    data = [make_datum(tokens, weights) for tokens, weights, _ in pairs]
    refs = [ref for _, _, ref in pairs]
    training_client.forward_backward_custom(data, make_dpo_loss(refs)).result()
    rl = [
        types.Datum(
            model_input=types.ModelInput.from_ints(t[:-1]),
            loss_fn_inputs={"target_tokens": t[1:], "logprobs": lp, "advantages": a},
        )
        for (t, _, lp), a in zip(pairs, advantages)
    ]
    training_client.forward_backward(rl, "importance_sampling").result()
