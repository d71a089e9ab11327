"""tinker-cookbook 0.4.1's loops and recipes, unmodified, train against mint-local.

Each recipe runs as its README runs it (`python -m tinker_cookbook.recipes... key=value`), from
the stand-in workspace, with small batch settings so the tier fits a 2-core machine.
"""

from __future__ import annotations

import json
import math
import shutil

import pytest

pytest.importorskip("tinker_cookbook", reason="the cookbook tier needs tinker-cookbook (.venv-cookbook): make test-cookbook")

from .conftest import metrics, run_recipe  # noqa: E402


def _losses(rows: list[dict], key: str) -> dict[int, float]:
    return {r["step"]: r[key] for r in rows if key in r}


def test_sl_loop_trains_and_resumes_to_identical_losses(small_workspace, cookbook_env, tmp_path):
    workspace = small_workspace  # sl_loop trains one whole epoch: 64 conversations, batches of 16
    args = ["model_name=Qwen/Qwen3-8B", "batch_size=16", "lora_rank=8", "max_length=256", "save_every=2", "learning_rate=1e-3"]
    full = tmp_path / "full"
    run_recipe("tinker_cookbook.recipes.sl_loop", *args, f"log_path={full}", cwd=workspace, env=cookbook_env)
    nll = _losses(metrics(full), "train_mean_nll")
    assert sorted(nll) == [0, 1, 2, 3] and all(math.isfinite(v) for v in nll.values())
    assert nll[3] < nll[0]

    # An interrupted run: its log as it stood after the step-2 checkpoint. sl_loop resumes
    # through create_training_client_from_state_with_optimizer and must repeat steps 2-3 exactly.
    resumed = tmp_path / "resumed"
    resumed.mkdir()
    checkpoints = [json.loads(line) for line in (full / "checkpoints.jsonl").read_text().splitlines()]
    at_two = [c for c in checkpoints if c.get("batch") == 2]
    assert at_two and at_two[0]["state_path"].startswith("tinker://")
    (resumed / "checkpoints.jsonl").write_text(json.dumps(at_two[0]) + "\n")
    out = run_recipe("tinker_cookbook.recipes.sl_loop", *args, f"log_path={resumed}", cwd=workspace, env=cookbook_env)
    assert "Resuming from batch 2" in out
    again = _losses(metrics(resumed), "train_mean_nll")
    assert sorted(again) == [2, 3]
    assert again == {2: nll[2], 3: nll[3]}


def test_rl_loop_samples_grades_and_trains(workspace, cookbook_env, tmp_path):
    log = tmp_path / "rl"
    run_recipe(
        "tinker_cookbook.recipes.rl_loop",
        "model_name=Qwen/Qwen3-8B", "batch_size=32", "group_size=2", "max_tokens=16", "lora_rank=8", f"log_path={log}",
        cwd=workspace, env=cookbook_env,
    )  # fmt: skip
    rows = metrics(log)
    assert len(rows) == 2  # 64 stand-in problems / batch_size 32
    assert all("reward/total" in r or any(k.startswith("reward") for k in r) for r in rows), rows[0].keys()


def test_dpo_recipe_learns_the_preferred_answers(workspace, cookbook_env, tmp_path):
    log = tmp_path / "dpo"
    run_recipe(
        "tinker_cookbook.recipes.preference.dpo.train",
        "model_name=Qwen/Qwen3-8B", "batch_size=16", "learning_rate=1e-3", "max_steps=4", "max_length=256",
        f"log_path={log}", "behavior_if_log_dir_exists=delete",
        cwd=workspace, env=cookbook_env,
    )  # fmt: skip
    loss = _losses(metrics(log), "dpo_loss")
    assert len(loss) == 4
    assert abs(loss[0] - math.log(2)) < 1e-3  # policy == reference at the start: -log sigmoid(0)
    assert loss[3] < loss[0]


def test_guess_number_rl_environment(workspace, cookbook_env, tmp_path):
    """A multi-turn RL environment that needs no dataset download."""
    log = tmp_path / "guess"
    run_recipe(
        "tinker_cookbook.recipes.multiplayer_rl.guess_number.train",
        "model_name=Qwen/Qwen3-4B-Instruct-2507", "batch_size=4", "group_size=2", "max_tokens=8", "max_steps=2",
        "eval_every=0", f"log_path={log}", "behavior_if_log_dir_exists=delete",
        cwd=workspace, env=cookbook_env,
    )  # fmt: skip
    assert len([r for r in metrics(log) if any(k.startswith("env/") for k in r)]) == 2


def test_on_policy_distillation_with_the_default_max_tokens(workspace, cookbook_env, tmp_path):
    """The recipe's default max_tokens (4,096) used to be a 400 at mint-local's old 2,048 context."""
    log = tmp_path / "distill"
    run_recipe(
        "tinker_cookbook.recipes.distillation.on_policy_distillation",
        "model_name=Qwen/Qwen3-8B-Base", "teacher_model=Qwen/Qwen3-8B", "dataset=deepmath", "groups_per_batch=2",
        "group_size=2", "lora_rank=8", "max_steps=1", "eval_every=0", f"log_path={log}", "behavior_if_log_dir_exists=delete",
        cwd=workspace, env=cookbook_env, timeout=1500,
    )  # fmt: skip
    rows = metrics(log)
    assert rows and any(k.startswith("teacher_kl") or "kl" in k for k in rows[0]), rows[0].keys()


def test_weights_download_and_merge_match_the_server(use_cookbook_env, workspace, tmp_path):
    """weights.download() through the plain tinker SDK (the 302 fix), the archive's root layout,
    and build_hf_model: the merged model scores text as the server does."""
    import tinker
    import torch
    from transformers import AutoModelForCausalLM

    from tinker_cookbook.tokenizer_utils import get_tokenizer
    from tinker_cookbook.weights import build_hf_model, download

    sc = tinker.ServiceClient()
    tc = sc.create_lora_training_client(base_model="Qwen/Qwen3-8B", rank=4)
    tokens = get_tokenizer("Qwen/Qwen3-8B").encode("Sam has 12 apples and buys 30 more. #### 42")
    datum = tinker.Datum(
        model_input=tinker.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)},
    )
    for _ in range(3):
        tc.forward_backward([datum], "cross_entropy").result()
        tc.optim_step(tinker.AdamParams(learning_rate=5e-2)).result()
    served = torch.tensor(tc.forward([datum], "cross_entropy").result().loss_fn_outputs[0]["logprobs"].data)
    path = tc.save_weights_for_sampler("export").result().path

    adapter = download(tinker_path=path, output_dir=str(tmp_path / "adapter"))
    assert {"adapter_model.safetensors", "adapter_config.json"} <= {p.name for p in (tmp_path / "adapter").iterdir()}
    build_hf_model(base_model="Qwen/Qwen3-8B", adapter_path=adapter, output_path=str(tmp_path / "merged"))
    merged = AutoModelForCausalLM.from_pretrained(str(tmp_path / "merged"), dtype=torch.float32)
    with torch.no_grad():
        logits = merged(input_ids=torch.tensor([tokens[:-1]])).logits[0]
    local = torch.log_softmax(logits.double(), -1).gather(-1, torch.tensor(tokens[1:])[:, None]).squeeze(-1)
    assert torch.allclose(local.float(), served, atol=5e-5), (local - served).abs().max()
    shutil.rmtree(tmp_path / "merged")
