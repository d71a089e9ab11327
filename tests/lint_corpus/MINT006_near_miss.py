import mint


async def step(training_client: mint.TrainingClient, batch, adam):
    fb_future = await training_client.forward_backward_async(batch, "cross_entropy")
    optim_future = await training_client.optim_step_async(adam)
    result = await fb_future
    await optim_future
    saved = await (await training_client.save_state_async("step-1")).result_async()
    return result.metrics["loss:sum"], saved.path
