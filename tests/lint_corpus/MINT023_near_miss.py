import argparse

from mint import types

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=2e-4)
args = parser.parse_args()


def schedule(step, total):
    return args.lr * (1 - step / total)


adam = types.AdamParams(learning_rate=args.lr)
adam = types.AdamParams(learning_rate=4e-5)
adam = types.AdamParams(learning_rate=1e-5)
adam = types.AdamParams(learning_rate=schedule(3, 10))
torch_lr = 1e-6  # a full fine-tune elsewhere, not a MinT optimizer
