import mint


def refresh(training_client: mint.TrainingClient, step):
    return training_client.save_weights_and_get_sampling_client(name=f"step-{step}")  # expect: MINT026


async def refresh_async(training_client: mint.TrainingClient, step):
    return await training_client.save_weights_and_get_sampling_client_async(f"step-{step}")  # expect: MINT026
