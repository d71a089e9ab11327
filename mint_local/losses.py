"""Tinker's built-in losses as pure torch functions.

Semantics (tinker 0.22.0 docs, "losses"): every loss is computed per target token and the
per-token values are SUMMED over tokens and datums; nothing is ever divided by a token count
or a weight sum, so any normalisation must be folded into `weights` / `advantages` by the
caller. Position i of `model_input` predicts `target_tokens[i]`.

Each function takes the current policy's target log-probabilities `logprobs` (differentiable,
shape [N] or [N, K]) and the datum's other `loss_fn_inputs` as tensors, and returns the
elementwise loss with the same shape. `ratio` is exp(logprobs - sampling_logprobs).

    cross_entropy        -logp * w
    importance_sampling  -(ratio * A)
    ppo                  -min(ratio * A, clip(ratio, lo, hi) * A)
    cispo                -(sg(clip(ratio, lo, hi)) * logp * A)
    dro                  -(logp * A - 0.5 * beta * (logp - sampling_logp)^2)

For the RL losses an optional `weights` input multiplies the per-token loss (a mask).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from mint_facts import CISPO_CLIP, DRO_BETA, PPO_CLIP

from .errors import UserError

Tensor = torch.Tensor


@dataclass(frozen=True)
class LossSpec:
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    config_defaults: dict[str, float] = field(default_factory=dict)
    # Inputs that may carry a trailing K dimension ([N, K] targets, e.g. top-k distillation).
    two_dim_ok: tuple[str, ...] = ()


# What the server uses when loss_fn_config leaves a key out (values and reasons: mint_facts).
PPO_DEFAULTS = dict(PPO_CLIP)
CISPO_DEFAULTS = dict(CISPO_CLIP)
DRO_DEFAULTS = {"beta": DRO_BETA}

_RL_INPUTS = ("target_tokens", "logprobs", "advantages")

SPECS: dict[str, LossSpec] = {
    "cross_entropy": LossSpec(required=("target_tokens", "weights"), two_dim_ok=("target_tokens", "weights")),
    "importance_sampling": LossSpec(required=_RL_INPUTS, optional=("weights",)),
    "ppo": LossSpec(
        required=_RL_INPUTS,
        optional=("weights", "clip_low_threshold", "clip_high_threshold"),
        config_defaults=PPO_DEFAULTS,
    ),
    "cispo": LossSpec(
        required=_RL_INPUTS,
        optional=("weights", "clip_low_threshold", "clip_high_threshold"),
        config_defaults=CISPO_DEFAULTS,
    ),
    "dro": LossSpec(required=_RL_INPUTS, optional=("weights",), config_defaults=DRO_DEFAULTS),
}

INT_INPUTS = {"target_tokens"}


def cross_entropy(logprobs: Tensor, inputs: dict[str, Tensor], config: dict[str, float]) -> Tensor:
    return -logprobs * inputs["weights"]


def _ratio(logprobs: Tensor, inputs: dict[str, Tensor]) -> Tensor:
    return torch.exp(logprobs - inputs["logprobs"])


def _thresholds(inputs: dict[str, Tensor], config: dict[str, float]) -> tuple[Tensor | float, Tensor | float]:
    # Per-token thresholds in loss_fn_inputs win over the scalar loss_fn_config values.
    low = inputs.get("clip_low_threshold", config["clip_low_threshold"])
    high = inputs.get("clip_high_threshold", config["clip_high_threshold"])
    return low, high


def _clip(x: Tensor, low: Tensor | float, high: Tensor | float) -> Tensor:
    low_t = torch.as_tensor(low, dtype=x.dtype, device=x.device)
    high_t = torch.as_tensor(high, dtype=x.dtype, device=x.device)
    return torch.minimum(torch.maximum(x, low_t), high_t)


def _masked(loss: Tensor, inputs: dict[str, Tensor]) -> Tensor:
    weights = inputs.get("weights")
    return loss if weights is None else loss * weights


def importance_sampling(logprobs: Tensor, inputs: dict[str, Tensor], config: dict[str, float]) -> Tensor:
    return _masked(-(_ratio(logprobs, inputs) * inputs["advantages"]), inputs)


def ppo(logprobs: Tensor, inputs: dict[str, Tensor], config: dict[str, float]) -> Tensor:
    ratio = _ratio(logprobs, inputs)
    adv = inputs["advantages"]
    low, high = _thresholds(inputs, config)
    objective = torch.minimum(ratio * adv, _clip(ratio, low, high) * adv)
    return _masked(-objective, inputs)


def cispo(logprobs: Tensor, inputs: dict[str, Tensor], config: dict[str, float]) -> Tensor:
    ratio = _ratio(logprobs, inputs)
    low, high = _thresholds(inputs, config)
    weight = _clip(ratio, low, high).detach()
    return _masked(-(weight * logprobs * inputs["advantages"]), inputs)


def dro(logprobs: Tensor, inputs: dict[str, Tensor], config: dict[str, float]) -> Tensor:
    beta = config["beta"]
    objective = logprobs * inputs["advantages"] - 0.5 * beta * (logprobs - inputs["logprobs"]) ** 2
    return _masked(-objective, inputs)


LOSS_FUNCTIONS: dict[str, Callable[[Tensor, dict[str, Tensor], dict[str, float]], Tensor]] = {
    "cross_entropy": cross_entropy,
    "importance_sampling": importance_sampling,
    "ppo": ppo,
    "cispo": cispo,
    "dro": dro,
}


def resolve_config(loss_fn: str, config: dict[str, float] | None) -> dict[str, float]:
    """Validate `loss_fn` and `loss_fn_config`; return the config with defaults filled in."""
    spec = SPECS.get(loss_fn)
    if spec is None:
        raise UserError(
            f"unknown loss_fn {loss_fn!r}; tinker 0.22.0 / MinT support {', '.join(SPECS)}. DPO and other "
            "custom objectives go through training_client.forward_backward_custom(data, loss_fn)"
        )
    config = dict(config or {})
    unknown = sorted(set(config) - set(spec.config_defaults))
    if unknown:
        allowed = ", ".join(sorted(spec.config_defaults)) or "none"
        raise UserError(f"loss_fn_config keys {unknown} are not used by {loss_fn!r} (accepted keys: {allowed})")
    # Finite in float32, like every tensor input: a NaN threshold would make every ratio NaN.
    bad = sorted(k for k, v in config.items() if not torch.isfinite(torch.tensor(float(v), dtype=torch.float32)))
    if bad:
        raise UserError(f"loss_fn_config {bad} must be finite numbers (within float32's range), got {[config[k] for k in bad]}")
    return {**spec.config_defaults, **config}


def reverse_kl(student_logits: Tensor, reference_logits: Tensor, temperature: float) -> Tensor:
    """Per-position KL(student_T || reference_T) over the full vocabulary, shape [N]."""
    student = torch.log_softmax(student_logits.float() / temperature, dim=-1)
    reference = torch.log_softmax(reference_logits.float() / temperature, dim=-1)
    return (student.exp() * (student - reference)).sum(dim=-1)
