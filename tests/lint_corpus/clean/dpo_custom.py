"""A correct DPO step: reference logprobs outside the Datum, forward_backward_custom(...).result()."""

import mint
import torch
import torch.nn.functional as F
from mint import types


def make_datum(tokens, weights):
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": weights[1:]},
    )


def make_dpo_loss(reference_logprobs, weights, beta):
    def loss_fn(data, logprobs_list):
        terms = []
        for i in range(0, len(logprobs_list), 2):
            w_c, w_r = torch.tensor(weights[i][1:]), torch.tensor(weights[i + 1][1:])
            chosen = (logprobs_list[i] * w_c).sum() - (torch.tensor(reference_logprobs[i]) * w_c).sum()
            rejected = (logprobs_list[i + 1] * w_r).sum() - (torch.tensor(reference_logprobs[i + 1]) * w_r).sum()
            terms.append(-F.logsigmoid(beta * (chosen - rejected)))
        loss = torch.stack(terms).mean()
        return loss, {"dpo_loss": loss.item()}

    return loss_fn


def train_step(service_client: mint.ServiceClient, training_client: mint.TrainingClient, pairs, reference, adam):
    data, weights, refs = [], [], []
    for chosen, rejected in pairs:
        for tokens, w in (chosen, rejected):
            data.append(make_datum(tokens, w))
            weights.append(w)
            logprobs = reference.compute_logprobs(types.ModelInput.from_ints(tokens)).result()
            refs.append(logprobs[1:])
    result = training_client.forward_backward_custom(data, make_dpo_loss(refs, weights, beta=0.1)).result()
    training_client.optim_step(adam).result()
    return result.metrics
