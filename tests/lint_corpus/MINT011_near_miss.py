import mint
from mint import types


def setup(service_client: mint.ServiceClient, training_client: mint.TrainingClient, batch):
    rest = service_client.create_rest_client()
    adam = types.AdamParams(learning_rate=2e-4)
    future = training_client.forward_backward(batch, "cross_entropy")
    return rest, adam, future.result()


def internal(holder):
    # the class exists inside 0.22.0; only the top-level export is 0.38
    from tinker.lib.public_interfaces.rest_client import RestClient

    return RestClient(holder)
