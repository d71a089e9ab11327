import mint


async def step(training_client: mint.TrainingClient, batch, adam):
    result = await training_client.forward_backward_async(batch, "cross_entropy")
    loss = result.metrics["loss:sum"]  # expect: MINT006
    saved = (await training_client.save_state_async("step-1")).path  # expect: MINT006
    return loss, saved
