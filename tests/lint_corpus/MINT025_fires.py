import mint


def resume(training_client: mint.TrainingClient, path):
    training_client.load_state(path).result()  # expect: MINT025
