import mint


def resume_unsafely(service_client: mint.ServiceClient, path):
    # no fresh-client call to copy the base model and rank from: reported, not rewritten
    return service_client.create_training_client_from_state(path)  # expect: MINT024


async def resume_async(service_client, path):
    training_client = await service_client.create_training_client_from_state_with_optimizer_async(path)  # expect: MINT024
    return training_client
