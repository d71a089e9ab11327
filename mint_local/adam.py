"""AdamW for LoRA adapters: torch.optim.AdamW's update, op for op, with its settings per step.

Why not torch.optim.AdamW: constructing any torch optimizer imports torch._dynamo (about 1 s
on a 2-core machine), which would land on every server's first create_model. This is the same
algorithm as torch's foreach AdamW without amsgrad (decoupled weight decay, bias correction,
eps added outside the square root), and the tests compare it with torch.optim.AdamW. Each
optim_step brings its own hyper-parameters (tinker's AdamParams), so none are stored here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class AdamSettings:
    learning_rate: float
    beta1: float
    beta2: float
    eps: float
    weight_decay: float


class AdamW:
    def __init__(self, params: list[torch.nn.Parameter]) -> None:
        self.params = params
        # Per parameter, as torch keeps it: a parameter without a gradient is skipped and its
        # step count does not advance. Moments are created on a parameter's first update.
        self.steps = [0] * len(params)
        self.exp_avg: list[torch.Tensor | None] = [None] * len(params)
        self.exp_avg_sq: list[torch.Tensor | None] = [None] * len(params)

    @torch.no_grad()
    def step(self, s: AdamSettings) -> None:
        idx = [i for i, p in enumerate(self.params) if p.grad is not None]
        if not idx:
            return
        for i in idx:
            if self.exp_avg[i] is None:
                self.exp_avg[i] = torch.zeros_like(self.params[i], memory_format=torch.preserve_format)
                self.exp_avg_sq[i] = torch.zeros_like(self.params[i], memory_format=torch.preserve_format)
            self.steps[i] += 1
        params = [self.params[i] for i in idx]
        grads = [self.params[i].grad for i in idx]
        exp_avgs = [self.exp_avg[i] for i in idx]
        exp_avg_sqs = [self.exp_avg_sq[i] for i in idx]
        if s.weight_decay:
            torch._foreach_mul_(params, 1 - s.learning_rate * s.weight_decay)
        torch._foreach_lerp_(exp_avgs, grads, 1 - s.beta1)
        torch._foreach_mul_(exp_avg_sqs, s.beta2)
        torch._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - s.beta2)
        step_sizes = [-(s.learning_rate / (1 - s.beta1 ** self.steps[i])) for i in idx]
        denoms = torch._foreach_sqrt(exp_avg_sqs)
        torch._foreach_div_(denoms, [(1 - s.beta2 ** self.steps[i]) ** 0.5 for i in idx])
        torch._foreach_add_(denoms, s.eps)
        torch._foreach_addcdiv_(params, exp_avgs, denoms, step_sizes)

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def state_dict(self) -> dict[str, Any]:
        return {"format": "mint-local-adamw-1", "steps": list(self.steps), "exp_avg": list(self.exp_avg), "exp_avg_sq": list(self.exp_avg_sq)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore moments saved by state_dict() (or by torch.optim.AdamW, as earlier mint-local
        versions wrote them); raises ValueError when they do not fit."""
        if "param_groups" in state:
            state = _from_torch(state, len(self.params))
        if state.get("format") != "mint-local-adamw-1":
            raise ValueError("unknown optimizer state format")
        moments = (state["exp_avg"], state["exp_avg_sq"])
        if any(len(m) != len(self.params) for m in (state["steps"], *moments)):
            raise ValueError(f"optimizer state holds {len(state['steps'])} parameters, this adapter has {len(self.params)}")
        for m in moments:
            for t, p in zip(m, self.params, strict=True):
                if t is not None and t.shape != p.shape:
                    raise ValueError(f"optimizer moment of shape {list(t.shape)} for a parameter of shape {list(p.shape)}")
        self.steps = [int(n) for n in state["steps"]]
        # Copies: the moments are updated in place and must never be shared with the source.
        self.exp_avg = [None if t is None else t.to(p.device, p.dtype, copy=True) for t, p in zip(state["exp_avg"], self.params, strict=True)]
        self.exp_avg_sq = [None if t is None else t.to(p.device, p.dtype, copy=True) for t, p in zip(state["exp_avg_sq"], self.params, strict=True)]


def _from_torch(state: dict[str, Any], n: int) -> dict[str, Any]:
    per_param = [state["state"].get(i, {}) for i in range(n)]
    return {
        "format": "mint-local-adamw-1",
        "steps": [int(float(p.get("step", 0))) for p in per_param],
        "exp_avg": [p.get("exp_avg") for p in per_param],
        "exp_avg_sq": [p.get("exp_avg_sq") for p in per_param],
    }
