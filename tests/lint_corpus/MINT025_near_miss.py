import mint


def resume(training_client: mint.TrainingClient, model, path):
    training_client.load_state_with_optimizer(path).result()
    model.load_state_dict({})
