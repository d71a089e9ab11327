import mint
from mint import types


def step(training_client: mint.TrainingClient, sampling_client: mint.SamplingClient, batch, prompt, adam):
    fb_future = training_client.forward_backward(batch, "cross_entropy")
    optim_future = training_client.optim_step(adam)
    fb = fb_future.result()
    optim_future.result()
    path = training_client.save_state("final").result().path
    params = types.SamplingParams(max_tokens=8)
    pending = sampling_client.sample(prompt=prompt, num_samples=2, sampling_params=params)
    if pending.done():
        pass
    first = pending.result().sequences[0]
    fb_future = fb_future.result()
    return fb.metrics, path, first, fb_future.metrics


def accelerate_style(accelerator, out_dir):
    state = accelerator.save_state(out_dir)
    return state.path
