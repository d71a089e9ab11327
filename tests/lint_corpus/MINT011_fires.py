import mint
import tinker  # noqa: F401 - imported after mint on purpose
from tinker import types
from tinker.types import DimuonParams  # expect: MINT011

rest = tinker.RestClient()  # expect: MINT011


def setup(service_client, loss_fn, training_client: mint.TrainingClient, batch):
    handle = service_client.create_custom_loss(loss_fn, input_ranks=[1])  # expect: MINT011
    optimizer = types.OptimizerConfig()  # expect: MINT011
    coroutine = training_client.forward_backward(batch, "cross_entropy").coroutine()  # expect: MINT011
    return handle, optimizer, coroutine


def await_a_coroutine(training_client: mint.TrainingClient, batch):
    return training_client.optim_step(batch).coroutine()  # expect: MINT011
