import argparse
from dataclasses import dataclass

from mint import types

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=1e-6)
args = parser.parse_args()
LEARNING_RATE = 5e-6


@dataclass
class Config:
    learning_rate: float = 2e-6


adam = types.AdamParams(learning_rate=1e-6)  # expect: MINT023
adam = types.AdamParams(learning_rate=args.lr)  # expect: MINT023
adam = types.AdamParams(learning_rate=LEARNING_RATE)  # expect: MINT023
cfg = Config()
adam = types.AdamParams(learning_rate=cfg.learning_rate)  # expect: MINT023
