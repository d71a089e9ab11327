import mint


def resume(service_client: mint.ServiceClient, base_model, rank, path):
    training_client = service_client.create_lora_training_client(base_model=base_model, rank=rank)
    training_client.load_state_with_optimizer(path).result()
    return training_client
