import concurrent.futures

import mint
from mint import types


def setup(service_client: mint.ServiceClient, training_client: mint.TrainingClient, batch):
    rest = service_client.create_rest_client()
    adam = types.AdamParams(learning_rate=2e-4)
    future = training_client.forward_backward(batch, "cross_entropy")
    return rest, adam, future.result()


def step_with_a_deadline(training_client: mint.TrainingClient, batch, adam):
    # 0.22.0's training calls return an AwaitableConcurrentFuture: .future() is the
    # concurrent.futures.Future underneath, so the stdlib helpers work on it
    fb = training_client.forward_backward(batch, "cross_entropy").future()
    op = training_client.optim_step(adam).future()
    concurrent.futures.wait([fb, op], timeout=600)
    return fb.result().metrics["loss:sum"], op.done()


async def step_async(training_client: mint.TrainingClient, batch):
    fut = await training_client.forward_backward_async(batch, "cross_entropy")
    return fut.future().result().metrics


def internal(holder):
    # the class exists inside 0.22.0; only the top-level export is 0.38
    from tinker.lib.public_interfaces.rest_client import RestClient

    return RestClient(holder)
