"""The source side of an RL launcher whose trainer needs a cluster (verl, OpenRLHF): its own reward,
advantage and policy-loss code, run on the CPU on the batch train.py sampled.

    python -m mint_migrate.parity.rl_source --job JOB.json --out RECORD.json

verl's and OpenRLHF's trainers start Ray actors, vLLM engines and DeepSpeed / FSDP workers; none of
that runs here, and none of it shapes the objective. What does is plain torch in modules of their
own, and that is what runs, unchanged: the source's reward function on each completion, the
framework's advantage estimator on the groups, and its policy loss with its aggregation mode on
the same tokens. The loss is differentiated against the per-token log-probabilities, so each
token's weight is measured (-dL/dlogp, the same reading the TRL harness takes), never derived by
hand. At step 0 the policy is the sampler (ratio 1), so the log-probabilities' values do not move
the loss; they are train.py's sampled ones.

The job (written by parity.check) holds train.py's groups ({prompt, completions, row} with token
ids), the launcher's settings (its ledger: key as the source writes it -> value), the reward
function's file and name, and the model folder for decoding. This runs in the framework's own
environment (parity.framework_envs), so it imports nothing from the server but this package.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

# verl's keys, as a launcher writes them, and their defaults in verl 0.9's ppo_trainer.yaml.
_VERL = {
    "adv_estimator": ("algorithm.adv_estimator", "gae"),
    "norm_adv_by_std_in_grpo": ("algorithm.norm_adv_by_std_in_grpo", True),
    "gamma": ("algorithm.gamma", 1.0),
    "lam": ("algorithm.lam", 1.0),
    "loss_agg_mode": ("actor_rollout_ref.actor.loss_agg_mode", "token-mean"),
    "policy_loss": ("actor_rollout_ref.actor.policy_loss.loss_mode", "vanilla"),
    "clip_ratio": ("actor_rollout_ref.actor.clip_ratio", 0.2),
    "clip_ratio_low": ("actor_rollout_ref.actor.clip_ratio_low", None),
    "clip_ratio_high": ("actor_rollout_ref.actor.clip_ratio_high", None),
    "clip_ratio_c": ("actor_rollout_ref.actor.clip_ratio_c", 3.0),
    "n": ("actor_rollout_ref.rollout.n", 1),
}
# OpenRLHF's command-line flags (0.11) and their defaults.
_OPENRLHF = {
    "advantage_estimator": ("advantage_estimator", "gae"),
    "n_samples_per_prompt": ("n_samples_per_prompt", 1),
    "eps_clip": ("eps_clip", 0.2),
    "eps_clip_low_high": ("eps_clip_low_high", None),
    "dual_clip": ("dual_clip", None),
    "policy_loss_type": ("policy_loss_type", "ppo"),
    "no_std_norm": ("no_std_norm", False),
}


class Unsupported(Exception):
    """The launcher asks for something parity cannot run here; the message says what and why."""


def setting(settings: dict[str, Any], table: dict, name: str) -> Any:
    key, default = table[name]
    for candidate in (key, f"--{key}", key.replace("_", "-"), f"--{key.replace('_', '-')}"):
        if candidate in settings:
            return _value(settings[candidate], default)
    return default


def _value(value: Any, default: Any) -> Any:
    """A launcher's word as the type the framework reads (`True`, `0.2`, `none`)."""
    if isinstance(value, str):
        low = value.strip().strip("'\"")
        if low.lower() in ("true", "false"):
            return low.lower() == "true"
        if low.lower() in ("none", "null", "~"):
            return None
        for kind in (int, float):
            try:
                return kind(low)
            except ValueError:
                pass
        return low
    if value is None and default is True:  # a bare `--flag` on a command line
        return True
    return value


# --- the batch: train.py's completions as the framework's padded tensors ------------------------------


def batch(groups: list[dict]):
    """(prompts, completions, group index per completion, response mask [B, L])."""
    import torch

    prompts, completions, index = [], [], []
    for g, group in enumerate(groups):
        for completion in group["completions"]:
            prompts.append(group["prompt"])
            completions.append(completion)
            index.append(g)
    width = max(len(c) for c in completions)
    mask = torch.zeros(len(completions), width, dtype=torch.float32)
    for i, completion in enumerate(completions):
        mask[i, : len(completion)] = 1.0
    return prompts, completions, index, mask


def load_reward(file: str | None, name: str | None):
    if not file:
        return None
    spec = importlib.util.spec_from_file_location("parity_source_reward", file)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(Path(file).parent))
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return getattr(module, name or "compute_score")


def _call(function, **kwargs):
    """`function` with the keyword arguments it declares (frameworks differ release to release)."""
    parameters = inspect.signature(function).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return function(**kwargs)
    return function(**{k: v for k, v in kwargs.items() if k in parameters})


def measured(loss_of, mask):
    """(loss, -dL/dlogp per token): the loss built on log-probabilities that carry gradients."""
    import torch

    log_prob = torch.zeros(mask.shape, dtype=torch.float32, requires_grad=True)
    loss = loss_of(log_prob, log_prob.detach())
    loss.backward()
    return float(loss.detach()), (-log_prob.grad).tolist()


# --- verl -------------------------------------------------------------------------------------------


def verl_step(job: dict) -> dict:
    import numpy as np
    import torch
    from omegaconf import OmegaConf
    from verl.trainer.config import AlgoConfig
    from verl.trainer.ppo import core_algos

    s = job["settings"]
    estimator = str(setting(s, _VERL, "adv_estimator"))
    if estimator == "gae":
        raise Unsupported(
            "algorithm.adv_estimator=gae: verl's PPO advantages come from its critic's value estimates (GAE); "
            "train.py has no critic, so there is no shared batch both sides can score. GRPO, REINFORCE++, RLOO and "
            "the other critic-free estimators are compared."
        )
    groups = job["groups"]
    prompts, completions, index, mask = batch(groups)
    tokenizer = _tokenizer(job["model"])
    # verl's reward managers decode the response without special tokens and score it at its last token.
    texts = [tokenizer.decode(c, skip_special_tokens=True) for c in completions]
    rows = [groups[g]["row"] for g in index]
    reward = load_reward(job.get("reward_file"), job.get("reward_name"))
    if reward is None:
        from verl.utils.reward_score import default_compute_score as reward
    scores = []
    for text, row in zip(texts, rows, strict=True):
        truth = (row.get("reward_model") or {}).get("ground_truth", row.get("answer"))
        score = _call(reward, data_source=row.get("data_source"), solution_str=text, ground_truth=truth,
                      extra_info=row.get("extra_info"))  # fmt: skip
        scores.append(float(score["score"] if isinstance(score, dict) else score))
    token_rewards = torch.zeros_like(mask)
    for i, completion in enumerate(completions):
        token_rewards[i, len(completion) - 1] = scores[i]
    algo = AlgoConfig(
        gamma=float(setting(s, _VERL, "gamma")), lam=float(setting(s, _VERL, "lam")), adv_estimator=estimator,
        norm_adv_by_std_in_grpo=bool(setting(s, _VERL, "norm_adv_by_std_in_grpo")),
    )  # fmt: skip
    advantage_fn = core_algos.get_adv_estimator_fn(estimator)
    advantages, _ = _call(
        advantage_fn, token_level_rewards=token_rewards, response_mask=mask, index=np.array([str(i) for i in index]),
        norm_adv_by_std_in_grpo=algo.norm_adv_by_std_in_grpo, config=algo,
    )  # fmt: skip
    mode = str(setting(s, _VERL, "policy_loss"))
    aggregation = str(setting(s, _VERL, "loss_agg_mode"))
    actor = OmegaConf.create({
        "clip_ratio": setting(s, _VERL, "clip_ratio"), "clip_ratio_low": setting(s, _VERL, "clip_ratio_low"),
        "clip_ratio_high": setting(s, _VERL, "clip_ratio_high"), "clip_ratio_c": setting(s, _VERL, "clip_ratio_c"),
        "global_batch_info": {}, "loss_agg_mode": aggregation,
        "policy_loss": {"loss_mode": mode},
    })  # fmt: skip
    policy_loss = core_algos.get_policy_loss_fn(mode)

    def loss_of(log_prob, old_log_prob):
        loss, _ = _call(policy_loss, old_log_prob=old_log_prob, log_prob=log_prob, advantages=advantages,
                        response_mask=mask, loss_agg_mode=aggregation, config=actor)  # fmt: skip
        return loss

    loss, weights = measured(loss_of, mask)
    runner = f"verl core_algos ({estimator} advantages, {mode} policy loss, {aggregation})"
    config = {"num_generations": len(groups[0]["completions"]), "adv_estimator": estimator,
              "scale_rewards": "group" if algo.norm_adv_by_std_in_grpo else "none", "loss_agg_mode": aggregation,
              "scale_setting": f"algorithm.norm_adv_by_std_in_grpo={algo.norm_adv_by_std_in_grpo}"}  # fmt: skip
    return record(runner, loss, prompts, completions, weights, [float(a) for a in advantages[:, 0]], scores, config)


# --- OpenRLHF -------------------------------------------------------------------------------------------


def import_openrlhf_loss():
    """openrlhf.models.loss, unchanged, without running openrlhf/models/__init__.py: that file imports
    the actor, which needs flash-attn (a CUDA build); the loss module needs only models/utils.py."""
    import types

    import openrlhf

    if "openrlhf.models" not in sys.modules:
        package = types.ModuleType("openrlhf.models")
        package.__path__ = [str(Path(openrlhf.__path__[0]) / "models")]
        sys.modules["openrlhf.models"] = package
        openrlhf.models = package
    return importlib.import_module("openrlhf.models.loss")


def openrlhf_step(job: dict) -> dict:
    import torch

    PolicyLoss = import_openrlhf_loss().PolicyLoss  # noqa: N806 - the framework's class

    s = job["settings"]
    estimator = str(setting(s, _OPENRLHF, "advantage_estimator"))
    if estimator == "gae":
        raise Unsupported(
            "--advantage_estimator gae: OpenRLHF's PPO advantages come from its critic's value estimates; train.py "
            "has no critic, so there is no shared batch both sides can score."
        )
    groups = job["groups"]
    prompts, completions, index, mask = batch(groups)
    tokenizer = _tokenizer(job["model"])
    reward = load_reward(job.get("reward_file"), job.get("reward_name") or "reward_func")
    if reward is None:
        raise Unsupported("no reward function: OpenRLHF scores with --remote_rm_url FILE.py (its reward_func) or a "
                          "reward model, and neither was found in the launcher.")
    # As OpenRLHF 0.11's SingleTurnAgentExecutor calls it: one sample at a time, the query being the
    # prompt and response tokens decoded with their special tokens, the prompt its templated text.
    key = str(_value(s.get("label_key", "answer"), "answer"))
    scores = []
    for p, c, g in zip(prompts, completions, index, strict=True):
        query = tokenizer.decode(list(p) + list(c), skip_special_tokens=False)
        out = _call(reward, queries=[query], prompts=[tokenizer.decode(p, skip_special_tokens=False)],
                    labels=[groups[g]["row"].get(key)])  # fmt: skip
        out = out.get("rewards", out.get("scores")) if isinstance(out, dict) else out
        scores.append(float(torch.as_tensor(out, dtype=torch.float32).flatten()[0]))
    rewards = torch.tensor(scores, dtype=torch.float32)
    advantages = _openrlhf_advantages(rewards, len(groups[0]["completions"]), estimator, mask,
                                      bool(setting(s, _OPENRLHF, "no_std_norm")))  # fmt: skip
    low_high = setting(s, _OPENRLHF, "eps_clip_low_high")
    eps = float(setting(s, _OPENRLHF, "eps_clip"))
    low, high = (low_high if isinstance(low_high, (list, tuple)) else (eps, eps))
    policy = _call(PolicyLoss, clip_eps_low=float(low), clip_eps_high=float(high),
                   dual_clip=setting(s, _OPENRLHF, "dual_clip"),
                   policy_loss_type=str(setting(s, _OPENRLHF, "policy_loss_type")))  # fmt: skip

    def loss_of(log_prob, old_log_prob):
        out = policy(log_prob, old_log_prob, advantages, action_mask=mask)
        return out[0] if isinstance(out, tuple) else out

    loss, weights = measured(loss_of, mask)
    runner = f"openrlhf PolicyLoss ({estimator} advantages)"
    config = {"num_generations": len(groups[0]["completions"]), "advantage_estimator": estimator,
              "scale_rewards": "group" if estimator == "group_norm" else "none",
              "scale_setting": f"--advantage_estimator {estimator}"}  # fmt: skip
    return record(runner, loss, prompts, completions, weights, [float(a) for a in advantages[:, 0]], scores, config)


def _openrlhf_advantages(rewards, n: int, estimator: str, mask, no_std_norm: bool):
    """OpenRLHF's reward shaping per group, then the return broadcast over the response (gamma 1).

    This is the one part that is not OpenRLHF's own function: its estimators live inside
    PPOExperienceMaker.compute_advantages_and_returns, a Ray actor's method that cannot be called
    without a cluster. The formulas follow that method in 0.11 (group_norm divides by the sample
    std plus 1e-9; rloo, reinforce_baseline and dr_grpo subtract a baseline); the note in the
    record says so."""
    grouped = rewards.reshape(-1, n)
    if estimator == "group_norm":
        grouped = (grouped - grouped.mean(-1, keepdim=True)) / (grouped.std(-1, keepdim=True) + 1e-9)
    elif estimator == "rloo":
        grouped = grouped - (grouped.sum(-1, keepdim=True) - grouped) / (n - 1)
    elif estimator in ("reinforce_baseline", "dr_grpo"):
        grouped = grouped - grouped.mean(-1, keepdim=True)
    elif estimator != "reinforce":
        raise Unsupported(f"--advantage_estimator {estimator}: not one parity knows how OpenRLHF 0.11 computes")
    advantages = grouped.reshape(-1, 1) * mask
    if estimator in ("reinforce", "reinforce_baseline"):  # whitened over the batch's tokens
        count = mask.sum()
        mean = (advantages * mask).sum() / count
        rstd = 1.0 if no_std_norm else (((advantages - mean).pow(2) * mask).sum() / count).clamp(min=1e-8).rsqrt()
        advantages = (advantages - mean) * rstd * mask
    return advantages


# --- the record -----------------------------------------------------------------------------------------


def _tokenizer(model: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model)


def record(runner, loss, prompts, completions, weights, advantages, scores, config) -> dict:
    """The source side's SideRecord (as a dict): full sequences, weights in MinT's next-token layout."""
    sequences = []
    for i, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
        tokens = list(prompt) + list(completion)
        # weights[t] trains tokens[t + 1]: the prompt's own predictions carry nothing.
        row_weights = [0.0] * (len(prompt) - 1) + [float(w) for w in weights[i][: len(completion)]]
        sequences.append({"role": "completion", "tokens": tokens, "weights": row_weights,
                          "advantage": advantages[i], "prompt_length": len(prompt)})  # fmt: skip
    return {"side": "source", "runner": runner, "kind": "grpo", "loss": loss,
            "loss_name": "the policy loss, aggregated as the launcher sets", "sequences": sequences,
            "config": {**config, "rewards": scores}}  # fmt: skip


STEPS = {"verl": verl_step, "openrlhf": openrlhf_step}
OBJECTIVE_SETTINGS = {"verl": _VERL, "openrlhf": _OPENRLHF}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--job", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    started = time.monotonic()
    job = json.loads(args.job.read_text(encoding="utf-8"))
    try:
        result = STEPS[job["framework"]](job)
        result["seconds"] = round(time.monotonic() - started, 3)
    except Unsupported as exc:
        result = {"unsupported": str(exc)}
    except BaseException as exc:  # noqa: BLE001 - every failure becomes a record the parent explains
        result = {"error": f"{type(exc).__name__}: {exc}", "traceback": "".join(traceback.format_exception(exc)[-8:])}
    args.out.write_text(json.dumps(result, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
