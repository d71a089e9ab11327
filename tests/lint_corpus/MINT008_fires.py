import argparse

import mint

parser = argparse.ArgumentParser()
parser.add_argument("--loss-fn", default="gspo")
args = parser.parse_args()
LOSS = "dpo"


def step(training_client: mint.TrainingClient, batch):
    training_client.forward_backward(batch, "grpo")  # expect: MINT008
    training_client.forward_backward(batch, loss_fn=args.loss_fn)  # expect: MINT008
    training_client.forward_backward(batch, LOSS)  # expect: MINT008
