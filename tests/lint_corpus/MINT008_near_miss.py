import argparse

import mint

parser = argparse.ArgumentParser()
parser.add_argument("--loss-fn", default="importance_sampling", choices=["importance_sampling", "ppo", "cispo", "dro"])
args = parser.parse_args()


def step(training_client: mint.TrainingClient, model, batch):
    training_client.forward_backward(batch, loss_fn=args.loss_fn, loss_fn_config={"clip_low_threshold": 0.8})
    training_client.forward_backward(batch, "cross_entropy")
    model.forward(batch, "mean")
