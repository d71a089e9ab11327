"""Which TRL a script was written for, when the installed TRL rejects one of its arguments.

A script written for an older TRL stops at its config (`GRPOConfig(max_prompt_length=...)`: TypeError)
before any step runs. That is not a difference of objective: parity cannot run the source side, so
the verdict is inconclusive, and the user needs the argument's name, the TRL that still accepted it
and the exact command that installs that TRL into the interpreter the server runs on.

LAST_ACCEPTED was measured, not remembered: the dataclass fields of each `*Config` in TRL's
wheels 0.20.0, 0.24.0, 0.26.2, 0.27.2, 0.28.0, 0.29.1, 1.0.0, 1.4.0, 1.8.0, 1.12.0 and 1.16.0,
compared release to release. A value is the last of those releases whose config still declares
the field (a later patch release may accept it too). Fields that only moved to a base class (bf16,
logging_steps ...) are still accepted and are not listed.
"""

import importlib.metadata
import re
from pathlib import Path

from mint_migrate.errors import OutsideWorkspace
from mint_migrate.workspace import read_text_checked

_DPO_028 = ("max_prompt_length", "max_completion_length", "ref_adapter_name", "model_adapter_name", "reference_free",
            "rpo_alpha", "force_use_ref_model", "generate_during_eval", "label_pad_token_id", "use_logits_to_keep",
            "base_model_attribute_name", "tools")  # fmt: skip
_RLOO_024 = ("cliprange", "kl_coef", "num_ppo_epochs", "rloo_k", "response_length", "total_episodes",
             "num_mini_batches", "local_rollout_forward_batch_size", "missing_eos_penalty", "normalize_reward",
             "stop_token", "stop_token_id", "token_level_kl", "num_sample_generations", "exp_name")  # fmt: skip

LAST_ACCEPTED: dict[tuple[str, str], str] = {
    ("GRPOConfig", "max_prompt_length"): "0.27.2",
    ("GRPOConfig", "use_liger_loss"): "0.27.2",
    ("GRPOConfig", "vllm_guided_decoding_regex"): "0.27.2",
    ("GRPOConfig", "wandb_log_unique_prompts"): "0.26.2",
    ("RLOOConfig", "max_prompt_length"): "0.28.0",
    ("RLOOConfig", "vllm_guided_decoding_regex"): "0.27.2",
    ("RLOOConfig", "wandb_log_unique_prompts"): "0.26.2",
    ("RLOOConfig", "normalize_advantage"): "0.20.0",
    ("RLOOConfig", "whiten_rewards"): "0.20.0",
    ("RLOOConfig", "reward_model_path"): "0.20.0",
    **{("RLOOConfig", name): "0.24.0" for name in _RLOO_024},
    **{("DPOConfig", name): "0.28.0" for name in _DPO_028},
    ("DPOConfig", "use_liger_loss"): "0.27.2",
    ("DPOConfig", "padding_value"): "0.24.0",
    ("ModelConfig", "torch_dtype"): "0.26.2",
    ("ModelConfig", "trust_remote_code"): "1.4.0",
}

_REJECTED = re.compile(r"(\w+)\.__init__\(\) got an unexpected keyword argument '(\w+)'")
_PIN = re.compile(r"^\s*trl\s*(==|~=|<=)\s*([0-9][0-9A-Za-z.]*)", re.M | re.I)


def rejected_argument(message: str) -> tuple[str, str] | None:
    """(class, argument) when `message` is a constructor rejecting a keyword argument."""
    found = _REJECTED.search(message)
    return (found.group(1), found.group(2)) if found else None


def installed_trl() -> str | None:
    try:
        return importlib.metadata.version("trl")
    except importlib.metadata.PackageNotFoundError:
        return None


def pinned_trl(script: Path) -> str | None:
    """The TRL version the script's own requirements pin (requirements*.txt, pyproject.toml beside it)."""
    candidates = [*sorted(script.parent.glob("requirements*.txt")), script.parent / "pyproject.toml"]
    for path in candidates:
        try:
            found = _PIN.search(read_text_checked(path, errors="replace").replace('"', "\n"))
        except (OSError, OutsideWorkspace):
            continue
        if found:
            return found.group(2)
    return None


def written_for(script: Path, cls: str, argument: str) -> tuple[str | None, str]:
    """(the TRL version to install, how that version was found)."""
    pinned = pinned_trl(script)
    if pinned:
        return pinned, "the version the script's requirements pin"
    last = LAST_ACCEPTED.get((cls, argument))
    if last:
        return last, f"the last TRL release whose {cls} declares {argument}"
    return None, ""
