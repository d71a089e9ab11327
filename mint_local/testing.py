"""Helpers for testing against mint-local: datum builders and direct torch reference values.

Importing this module is cheap (the SDK, torch and transformers load on first use), so a
pytest conftest can take TEST_API_KEY from here without slowing every test session.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

TEST_API_KEY = "sk-mint-local-test"
TEXT = "The student solved the math problem: 12 apples plus 30 apples equals 42 apples. #### 42"


def ce_datum(tokens: list[int], weights: list[float] | None = None) -> Any:
    """Next-token datum: input tokens[:-1] predicts target tokens[1:]."""
    import mint

    targets = tokens[1:]
    return mint.Datum(
        model_input=mint.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": targets, "weights": weights if weights is not None else [1.0] * len(targets)},
    )


def rl_datum(tokens: list[int], sampling_logprobs: list[float], advantages: list[float], **extra: list[float]) -> Any:
    import mint

    return mint.Datum(
        model_input=mint.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "logprobs": sampling_logprobs, "advantages": advantages, **extra},
    )


def logprobs_of(output: Any, i: int = 0) -> Any:
    import torch

    return torch.tensor(output.loss_fn_outputs[i]["logprobs"].data, dtype=torch.float64)


def elementwise_of(output: Any, i: int = 0) -> Any:
    import torch

    return torch.tensor(output.loss_fn_outputs[i]["elementwise_loss"].data, dtype=torch.float64)


@functools.lru_cache(maxsize=2)
def reference_model(model_dir: str) -> Any:
    """The served base model loaded directly with transformers, for reference computations."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(Path(model_dir)), dtype=torch.float32)
    model.eval()
    return model


def torch_target_logprobs(model_dir: str, tokens: list[int]) -> Any:
    import torch

    model = reference_model(model_dir)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([tokens[:-1]])).logits[0].double()
    return torch.log_softmax(logits, dim=-1).gather(-1, torch.tensor(tokens[1:])[:, None]).squeeze(-1)


def checkpoint_dir(state_dir: str | Path, tinker_path: str) -> Path:
    """Folder of a checkpoint in a mint-local state directory (see mint_local.checkpoints)."""
    run_id, kind, name = tinker_path.removeprefix("tinker://").split("/")
    return Path(state_dir) / "runs" / run_id / kind / name
