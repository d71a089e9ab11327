import mint


def train_step(training_client: mint.TrainingClient, batch):
    fb = training_client.forward_backward(batch, "cross_entropy").result()
    print(fb.loss)  # expect: MINT003
    return training_client.forward(batch, "cross_entropy").result().loss  # expect: MINT003


async def train_step_async(training_client, batch):
    future = await training_client.forward_backward_async(batch, "cross_entropy")
    result = await future
    return result.loss  # expect: MINT003
