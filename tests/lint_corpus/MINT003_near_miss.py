# `.loss` on a Hugging Face model output is fine; only the SDK's ForwardBackwardOutput lacks it.
import mint
import torch


def train_step(training_client: mint.TrainingClient, batch):
    fb = training_client.forward_backward(batch, "cross_entropy").result()
    return fb.metrics["loss:sum"]


def hf_step(model, inputs):
    outputs = model(**inputs)
    outputs.loss.backward()
    out2 = model.forward(inputs["input_ids"], inputs["labels"])
    return out2.loss, torch.tensor(0.0)
