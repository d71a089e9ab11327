import mint


def main(service_client: mint.ServiceClient, checkpoint):
    # the fresh client's rank is only known after the resume line: not safe to rewrite
    training_client = service_client.create_training_client_from_state(checkpoint)
    rank = 16
    fresh = service_client.create_lora_training_client(base_model="Qwen/Qwen3-0.6B", rank=rank)
    return training_client, fresh


def elsewhere(service_client: mint.ServiceClient, checkpoint):
    # no fresh-client call in this function to copy from
    return service_client.create_training_client_from_state_with_optimizer(checkpoint)
