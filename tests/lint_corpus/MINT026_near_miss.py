import mint


def refresh(service_client: mint.ServiceClient, training_client: mint.TrainingClient, step):
    sampler = training_client.save_weights_and_get_sampling_client()
    path = training_client.save_weights_for_sampler(f"step-{step}").result().path
    durable = service_client.create_sampling_client(model_path=path)
    return sampler, durable
