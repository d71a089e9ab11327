import mint
from mint import types


def step(training_client: mint.TrainingClient, sampling_client: mint.SamplingClient, batch, prompt, dpo_loss):
    fb = training_client.forward_backward(batch, "cross_entropy")
    print(fb.metrics)  # expect: MINT007
    path = training_client.save_state("final").path  # expect: MINT007
    loss, metrics = training_client.forward_backward_custom(batch, dpo_loss)  # expect: MINT007
    params = types.SamplingParams(max_tokens=8)
    pending = sampling_client.sample(prompt=prompt, num_samples=2, sampling_params=params)
    first = pending.sequences[0]  # expect: MINT007
    outputs = fb["loss_fn_outputs"]  # expect: MINT007
    print(fb.future().metrics)  # expect: MINT007
    return path, loss, metrics, first, outputs
