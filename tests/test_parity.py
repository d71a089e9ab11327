"""`mint-migrate parity`: the source's own framework and the migrated train.py, one real step each.

Every check here runs TRL (or the hand-written loop) on the CPU and train.py against mint-local,
on the same rows and the same tiny model. The broken migrations are real edits of a migrated
train.py, each one a bug ports really have; the check must fail them with the right cause.

The source side of a script is cached by content (parity.source_side), so each fixture's TRL run
happens once per module and the broken variants only re-run train.py.
"""

import json
import math
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mint_migrate.errors import MintMigrateError
from mint_migrate.migrate import migrate
from mint_migrate.parity.check import check_parity
from mint_migrate.parity.compare import Vocab, explain_tokens
from mint_migrate.report import with_section

FIXTURES = Path(__file__).parent / "fixtures" / "parity"
SFT_CHAT = FIXTURES / "trl_sft_chat" / "sft_chat.py"
SFT_TEXT = FIXTURES / "trl_sft_text" / "sft_text.py"
SFT_ASSISTANT = FIXTURES / "trl_sft_assistant_only" / "sft_assistant_only.py"
DPO = FIXTURES / "trl_dpo" / "dpo.py"
ALPACA = FIXTURES / "pytorch_alpaca" / "train_alpaca.py"
GRPO = FIXTURES / "trl_grpo" / "grpo.py"
GRPO_OLDER = FIXTURES / "trl_grpo_older" / "grpo_older.py"
VERL_GRPO = FIXTURES / "verl_grpo" / "run_grpo.sh"
OPENRLHF_GRPO = FIXTURES / "openrlhf_grpo" / "train_grpo_ray.sh"
TINKER_SFT = FIXTURES / "tinker_sft" / "sft_tinker.py"


@pytest.fixture(scope="module", autouse=True)
def parity_cache(tmp_path_factory):
    """One source-side cache for the module (and the CLI subprocesses it starts)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MINT_MIGRATE_CACHE", str(tmp_path_factory.mktemp("parity-cache")))
        patch.setenv("TINKER_TELEMETRY", "0")
        yield


def migrated(source: Path, out: Path) -> Path:
    """The engine's migration of `source`, written to `out`."""
    out.mkdir(parents=True, exist_ok=True)  # the workspace root: writes open it, they never create it
    migrate(source, [], output_dir=str(out), workspace=out, overwrite=True)
    return out / "train.py"


def set_constant(train: Path, name: str, value: str) -> Path:
    """train.py with one module constant set (the way a user edits it)."""
    text, count = re.subn(rf"^{name} = .*$", f"{name} = {value}", train.read_text(encoding="utf-8"), flags=re.M)
    assert count == 1, f"{name} is not a constant of the generated train.py"
    train.write_text(text, encoding="utf-8")
    return train


def break_with(train: Path, code: str) -> Path:
    """train.py with `code` added at module level, before main() runs: a deliberate bug."""
    text = train.read_text(encoding="utf-8")
    marker = '\nif __name__ == "__main__":'
    assert text.count(marker) == 1
    train.write_text(text.replace(marker, "\n" + code.strip() + "\n\n" + marker), encoding="utf-8")
    return train


def errors(report) -> list:
    return [f for f in report.findings if f.severity == "error"]


# --- TRL SFT, conversational (`messages`) ------------------------------------------------------------------


@pytest.mark.slow
def test_trl_sft_messages_passes_as_migrated(tmp_path):
    # TRL trains every token of `messages` data (no assistant_only_loss): the migration says
    # TRAIN_ON = "conversation", which does the same, so parity passes with no edit and no argument.
    train = migrated(SFT_CHAT, tmp_path)
    assert 'TRAIN_ON = "conversation"' in train.read_text(encoding="utf-8")
    report = check_parity(SFT_CHAT, train=train, rows=4)
    assert report.passed, report.findings
    assert report.verdict == "passed" and report.tokens_equal and report.positions_equal


@pytest.mark.slow
def test_trl_sft_messages_passes_when_train_py_trains_every_token(tmp_path):
    # TRL trains every token of `messages` data (no assistant_only_loss): TRAIN_ON = "all" matches it.
    train = set_constant(migrated(SFT_CHAT, tmp_path), "TRAIN_ON", '"all"')
    report = check_parity(SFT_CHAT, train=train, rows=4)
    assert report.passed, report.findings
    assert report.source_runner == "trl.SFTTrainer" and report.kind == "sft"
    assert report.sequences_compared == 4 and report.tokens_equal and report.positions_equal
    assert report.weight_constant == pytest.approx(1.0, rel=1e-5)
    assert report.loss_relative_error < 1e-4
    # The step-0 loss of a random tiny model over a 2k vocabulary is about ln(2048).
    assert report.source_loss == pytest.approx(math.log(2048), rel=0.1)


@pytest.mark.slow
def test_trl_sft_messages_with_the_prompt_masked_is_reported(tmp_path):
    train = set_constant(migrated(SFT_CHAT, tmp_path), "TRAIN_ON", '"completion"')
    report = check_parity(SFT_CHAT, train=train, rows=4)
    assert not report.passed and report.tokens_equal and not report.positions_equal
    [kind] = {(f.check, f.cause) for f in errors(report)}
    assert kind == ("positions", "masking")
    finding = errors(report)[0]
    assert "the source trains" in finding.message and "assistant_only_loss" in finding.message
    assert finding.fix == 'Set TRAIN_ON = "all" in train.py.'
    assert finding.source_value != 0 and finding.mint_value == 0


@pytest.mark.slow
def test_chat_template_applied_twice_is_reported(tmp_path):
    train = set_constant(migrated(SFT_CHAT, tmp_path), "TRAIN_ON", '"all"')
    break_with(
        train,
        # The prompt helpers live in mint_run.py beside train.py: the bug goes into the one they call.
        '''
import mint_run

_chat_text_once = mint_run.chat_text


def _chat_text_twice(tokenizer, messages, *, add_generation_prompt):
    once = _chat_text_once(tokenizer, messages, add_generation_prompt=add_generation_prompt)
    return _chat_text_once(tokenizer, [{"role": "user", "content": once}], add_generation_prompt=add_generation_prompt)


mint_run.chat_text = _chat_text_twice
''',
    )
    report = check_parity(SFT_CHAT, train=train, rows=4)
    assert not report.passed and not report.tokens_equal
    causes = {f.cause for f in errors(report)}
    assert causes == {"template_twice"}, report.findings
    finding = errors(report)[0]
    assert finding.mint_value > finding.source_value  # more template tokens on the MinT side
    assert "Apply the chat template once" in finding.fix


# --- TRL SFT, chat with assistant_only_loss=True (LoRA): the usual chat set-up ----------------------------------


def test_the_tiny_models_template_is_one_trl_trains_assistant_turns_with():
    """TRL's own checks, as SFTTrainer runs them for assistant_only_loss: generation markers (else it
    looks for a known template to swap in and stops), prefix preservation, and the end-of-turn token
    inside the trained span. The rendered text is the Qwen-style one mint-local always had."""
    from transformers import AutoTokenizer
    from trl.chat_template_utils import (
        has_generation_markers,
        is_chat_template_prefix_preserving,
        is_chat_template_stop_token_trained,
    )

    from mint_local.tiny_model import ensure_tiny_model

    tokenizer = AutoTokenizer.from_pretrained(str(ensure_tiny_model("tiny")))
    assert has_generation_markers(tokenizer.chat_template)
    assert is_chat_template_prefix_preserving(tokenizer)
    assert is_chat_template_stop_token_trained(tokenizer)
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello there"}]  # fmt: skip
    out = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    assert tokenizer.decode(out["input_ids"]) == (
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nhello there<|im_end|>\n"
    )
    trained = [t for t, m in zip(out["input_ids"], out["assistant_masks"], strict=True) if m]
    assert tokenizer.decode(trained) == "hello there<|im_end|>\n"  # what train.py's answer tokens are


@pytest.mark.slow
def test_trl_sft_with_assistant_only_loss_passes_as_migrated(tmp_path):
    # No argument but the two scripts: the bundled model's template is one TRL accepts as it is.
    report = check_parity(SFT_ASSISTANT, train=migrated(SFT_ASSISTANT, tmp_path), keep=tmp_path / "records")
    assert report.passed and report.verdict == "passed", report.findings
    assert report.source_runner == "trl.SFTTrainer"
    source = json.loads((tmp_path / "records" / "source_record.json").read_text())
    assert source["config"]["assistant_only_loss"] is True
    for sequence in source["sequences"]:  # TRL masked the prompt itself: only the assistant's turn trains
        assert sequence["weights"][0] == 0 and sequence["weights"][-1] > 0
    assert report.sequences_compared == 8 and report.tokens_equal and report.positions_equal
    assert report.weight_constant == pytest.approx(1.0, rel=1e-5)
    assert report.loss_relative_error < 1e-4
    assert any("peft_config not applied" in note for note in report.notes)


# --- TRL SFT, plain-text prompt / completion -----------------------------------------------------------------


@pytest.mark.slow
def test_trl_sft_plain_text_passes_as_migrated(tmp_path):
    report = check_parity(SFT_TEXT, train=migrated(SFT_TEXT, tmp_path), rows=8)
    assert report.passed, report.findings
    assert report.sequences_compared == 8 and report.tokens_equal and report.positions_equal
    assert report.weight_constant == pytest.approx(1.0, rel=1e-5)
    assert report.loss_relative_error < 1e-4


@pytest.mark.slow
def test_prompt_not_masked_is_reported(tmp_path):
    train = set_constant(migrated(SFT_TEXT, tmp_path), "TRAIN_ON", '"all"')
    report = check_parity(SFT_TEXT, train=train, rows=8)
    assert not report.passed
    assert {(f.check, f.cause) for f in errors(report)} == {("positions", "masking")}
    finding = errors(report)[0]
    assert "the prompt is not masked" in finding.message
    assert finding.fix.startswith('Set TRAIN_ON = "completion"')
    assert finding.source_value == 0 and finding.mint_value != 0 and finding.position == 0


@pytest.mark.slow
def test_eos_dropped_is_reported(tmp_path):
    train = break_with(
        migrated(SFT_TEXT, tmp_path),
        """
_prompt_and_answer = prompt_and_answer_tokens


def prompt_and_answer_tokens(tokenizer, prompt, answer):
    prompt_ids, answer_ids = _prompt_and_answer(tokenizer, prompt, answer)
    return prompt_ids, [t for t in answer_ids if t != tokenizer.eos_token_id]
""",
    )
    report = check_parity(SFT_TEXT, train=train, rows=8)
    assert not report.passed
    assert {(f.check, f.cause) for f in errors(report)} == {("tokens", "eos")}
    assert len(errors(report)) == 8  # every row, each with its position
    assert all("drops the EOS token" in f.message and f.position is not None for f in errors(report))


@pytest.mark.slow
def test_summed_loss_against_a_token_mean_is_reported(tmp_path):
    train = set_constant(migrated(SFT_TEXT, tmp_path), "LOSS_NORMALIZATION", '"sum"')
    report = check_parity(SFT_TEXT, train=train, rows=8)
    assert not report.passed and report.tokens_equal and report.positions_equal
    [finding] = errors(report)
    assert (finding.check, finding.cause) == ("weights", "normalisation")
    assert "sums the loss" in finding.message and finding.fix.startswith('Set LOSS_NORMALIZATION = "token_mean"')
    # The summed loss is the mean times the step's trained tokens: not one constant across steps.
    tokens = round(1 / finding.source_value)
    assert report.mint_loss == pytest.approx(report.source_loss * tokens, rel=1e-4)


# --- TRL DPO -------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_trl_dpo_passes_with_equal_answer_logprobs(tmp_path):
    report = check_parity(DPO, train=migrated(DPO, tmp_path), rows=4, keep=tmp_path / "records")
    assert report.passed, report.findings
    assert report.source_runner == "trl.DPOTrainer" and report.kind == "dpo"
    assert report.sequences_compared == 8  # chosen and rejected of 4 pairs
    # At step 0 policy == reference: both losses are ln 2.
    assert report.source_loss == pytest.approx(math.log(2), rel=1e-5)
    assert report.mint_loss == pytest.approx(math.log(2), rel=1e-5)
    # The per-token weight is beta * sigmoid(0) / pairs on each answer token: c = 2 * pairs / beta.
    assert report.weight_constant == pytest.approx(2 * 4 / 0.1, rel=1e-4)
    source = json.loads((tmp_path / "records" / "source_record.json").read_text())
    mint = json.loads((tmp_path / "records" / "mint_record.json").read_text())
    sums = {(s["row"], s["role"]): s["logprob_sum"] for s in source["sequences"]}
    assert len(sums) == 8
    for s in mint["sequences"]:
        assert s["logprob_sum"] == pytest.approx(sums[(s["row"], s["role"])], rel=1e-4)


@pytest.mark.slow
def test_dpo_beta_changed_in_the_port_is_reported(tmp_path):
    train = set_constant(migrated(DPO, tmp_path), "BETA", "0.5")
    report = check_parity(DPO, train=train, rows=4)
    assert not report.passed
    [finding] = errors(report)
    assert (finding.check, finding.cause) == ("settings", "setting")
    assert (finding.source_value, finding.mint_value) == (0.1, 0.5) and finding.fix == "Set BETA = 0.1 in train.py."


# --- TRL GRPO: the completions train.py sampled, scored by TRL's own trainer ------------------------------------


@pytest.mark.slow
def test_trl_grpo_advantages_and_weights_match(tmp_path):
    report = check_parity(GRPO, train=migrated(GRPO, tmp_path), rows=4, keep=tmp_path / "records")
    assert report.passed, report.findings
    assert report.source_runner == "trl.GRPOTrainer" and report.kind == "grpo"
    assert report.sequences_compared == 16 and report.tokens_equal and report.positions_equal  # 4 groups of 4
    # TRL divides by the sample std (n - 1), the scaffold by the population std (n): one constant.
    assert report.weight_constant == pytest.approx(math.sqrt(4 / 3), rel=1e-3)
    assert "sqrt(4/3)" in report.weight_constant_meaning
    source = json.loads((tmp_path / "records" / "source_record.json").read_text())
    mint = json.loads((tmp_path / "records" / "mint_record.json").read_text())
    completions = {tuple(s["tokens"]): s["advantage"] for s in source["sequences"]}
    assert len(completions) == 16  # TRL scored exactly the completions train.py sampled
    for s in mint["sequences"]:  # the same reward ranking: every advantage has the same sign on both sides
        assert s["advantage"] * completions[tuple(s["tokens"])] >= 0


@pytest.mark.slow
def test_grpo_advantages_not_scaled_by_the_group_std_is_reported(tmp_path):
    train = set_constant(migrated(GRPO, tmp_path), "NORMALIZE_ADVANTAGES", "False")
    report = check_parity(GRPO, train=train, rows=4)
    assert not report.passed and report.tokens_equal and report.positions_equal
    [finding] = errors(report)
    assert (finding.check, finding.cause) == ("weights", "normalisation")
    assert "scale_rewards='group'" in finding.message and finding.fix == "Set NORMALIZE_ADVANTAGES = True in train.py."


# --- inconclusive: a side that did not run is not a difference of objective ------------------------------------


@pytest.mark.slow
def test_an_argument_the_installed_trl_removed_is_inconclusive_with_the_trl_that_took_it(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "MIGRATION.md").write_text("# Migration\n")
    report = check_parity(GRPO_OLDER, train=migrated(GRPO_OLDER, tmp_path / "out"), rows=4)
    assert report.verdict == "inconclusive" and not report.passed
    [finding] = report.findings
    assert (finding.check, finding.cause) == ("run", "framework_version")
    assert "GRPOConfig(max_prompt_length=...)" in finding.message and "TRL 0.27.2 or earlier" in finding.message
    assert f"{sys.executable} -m pip install 'trl==0.27.2'" in finding.fix
    assert "remove max_prompt_length= from GRPOConfig(...)" in finding.fix
    assert report.sequences_compared == 0  # nothing compared, so nothing is said to differ
    from mint_migrate.parity.check import record_in_migration_md

    record_in_migration_md(report, tmp_path / "out")
    markdown = (tmp_path / "out" / "MIGRATION.md").read_text()
    assert "`mint-migrate parity` inconclusive" in markdown and "FAILED" not in markdown
    assert "trl==0.27.2" in markdown


@pytest.mark.slow
def test_a_module_the_source_imports_and_this_interpreter_lacks_is_inconclusive_with_its_install(tmp_path):
    source = tmp_path / "loop.py"
    source.write_text("import torch\nimport parity_test_absent_module\n", encoding="utf-8")
    train = tmp_path / "train.py"
    train.write_text('# "--parity-dump"\n', encoding="utf-8")  # never reached: the source runs first
    report = check_parity(source, train=train, rows=2, fresh=True)
    assert report.verdict == "inconclusive"
    [finding] = report.findings
    assert finding.cause == "framework_missing" and "imports parity_test_absent_module" in finding.message
    assert finding.fix.endswith(f"{sys.executable} -m pip install 'parity_test_absent_module'")


def test_the_install_hint_names_this_interpreter_and_the_ranges_pyproject_installs():
    """Outside a checkout `mint-migrate[parity]` means nothing to pip: the hint names real packages,
    with the ranges this project's own extras install."""
    import tomllib

    from mint_migrate.parity.source_side import REQUIREMENTS, pip_install

    extras = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert REQUIREMENTS["trl"] in extras["parity"]
    assert REQUIREMENTS["peft"] in extras["dev"]
    assert pip_install(REQUIREMENTS["trl"]) == f"{sys.executable} -m pip install 'trl>=1.16,<2'"


def test_a_rejected_argument_is_read_and_the_scripts_own_pin_wins(tmp_path):
    from mint_migrate.parity.trl_versions import rejected_argument, written_for

    message = "GRPOConfig.__init__() got an unexpected keyword argument 'max_prompt_length'"
    assert rejected_argument(message) == ("GRPOConfig", "max_prompt_length")
    assert rejected_argument("CUDA out of memory") is None
    script = tmp_path / "grpo.py"
    script.write_text("")
    assert written_for(script, "GRPOConfig", "max_prompt_length")[0] == "0.27.2"
    assert written_for(script, "GRPOConfig", "no_such_argument") == (None, "")
    (tmp_path / "requirements.txt").write_text("torch\ntrl==0.24.0\n")
    assert written_for(script, "GRPOConfig", "max_prompt_length") == ("0.24.0", "the version the script's requirements pin")


# --- beyond TRL: verl and OpenRLHF launchers, Tinker-SDK scripts ----------------------------------------------


def _framework_env_or_reason(framework: str):
    """The framework's env, or the inconclusive finding parity must give without it. The env is built
    once where PyPI is reachable (tests never reach it): `python -m mint_migrate.parity.framework_envs
    build verl|openrlhf`; without it these tests check the inconclusive verdict instead."""
    from mint_migrate.parity.framework_envs import ready_python

    return ready_python(framework)


def _assert_inconclusive_for_missing(report, framework: str) -> None:
    assert report.verdict == "inconclusive"
    [finding] = report.findings
    assert finding.cause == "framework_missing" and f"{framework} is not installed for parity" in finding.message
    assert f"{sys.executable} -m mint_migrate.parity.framework_envs build {framework}" in finding.fix


@pytest.mark.slow
def test_verl_grpo_launcher_is_scored_by_verls_own_advantage_and_policy_loss(tmp_path):
    report = check_parity(VERL_GRPO, train=migrated(VERL_GRPO, tmp_path), rows=4, keep=tmp_path / "records")
    if _framework_env_or_reason("verl") is None:
        return _assert_inconclusive_for_missing(report, "verl")
    assert report.passed and report.verdict == "passed", report.findings
    assert report.source_runner == "verl core_algos (grpo advantages, vanilla policy loss, token-mean)"
    assert report.sequences_compared == 16 and report.tokens_equal and report.positions_equal
    # verl divides by torch.std (n - 1), the scaffold by the population std: one constant.
    assert report.weight_constant == pytest.approx(math.sqrt(4 / 3), rel=1e-3)
    source = json.loads((tmp_path / "records" / "source_record.json").read_text())
    assert len(source["config"]["rewards"]) == 16  # length_reward.compute_score, verl's custom_reward_function
    assert any("algorithm.norm_adv_by_std_in_grpo" in note for note in report.notes)


@pytest.mark.slow
def test_verl_grpo_advantages_not_scaled_by_the_group_std_is_reported_in_verls_words(tmp_path):
    if _framework_env_or_reason("verl") is None:
        pytest.skip("needs the verl env (see _framework_env_or_reason); the inconclusive path is tested above")
    train = set_constant(migrated(VERL_GRPO, tmp_path), "NORMALIZE_ADVANTAGES", "False")
    report = check_parity(VERL_GRPO, train=train, rows=4)
    assert report.verdict == "failed" and report.tokens_equal and report.positions_equal
    [finding] = errors(report)
    assert (finding.check, finding.cause) == ("weights", "normalisation")
    assert "algorithm.norm_adv_by_std_in_grpo=True" in finding.message
    assert finding.fix == "Set NORMALIZE_ADVANTAGES = True in train.py."


@pytest.mark.slow
def test_verl_reinforce_plus_plus_is_scored_by_verls_estimator_and_a_grpo_port_is_told_apart(tmp_path):
    """verl's REINFORCE++ whitens returns over the whole batch; the scaffold's GRPO baseline centres each
    group. Same completions, same rewards, other advantages: the finding names the estimator."""
    if _framework_env_or_reason("verl") is None:
        pytest.skip("needs the verl env (see _framework_env_or_reason); the inconclusive path is tested above")
    shutil.copytree(VERL_GRPO.parent, tmp_path / "src")
    launcher = tmp_path / "src" / "run_reinforce_pp.sh"
    launcher.write_text(VERL_GRPO.read_text().replace("adv_estimator=grpo", "adv_estimator=reinforce_plus_plus"))
    report = check_parity(launcher, train=migrated(launcher, tmp_path / "out"), rows=4)
    assert report.source_runner.startswith("verl core_algos (reinforce_plus_plus advantages")
    assert report.verdict == "failed" and report.tokens_equal
    [finding] = errors(report)
    assert (finding.check, finding.cause) == ("advantages", "setting")
    assert "reinforce_plus_plus does not" in finding.message and "GRPO's baseline" in finding.message


@pytest.mark.slow
def test_openrlhf_grpo_launcher_is_scored_by_openrlhfs_policy_loss(tmp_path):
    report = check_parity(OPENRLHF_GRPO, train=migrated(OPENRLHF_GRPO, tmp_path), keep=tmp_path / "records")
    if _framework_env_or_reason("openrlhf") is None:
        return _assert_inconclusive_for_missing(report, "openrlhf")
    assert report.passed and report.verdict == "passed", report.findings
    assert report.source_runner == "openrlhf PolicyLoss (group_norm advantages)"
    # Groups whose rewards all tie train nothing on either side: at least one group of 4 is compared.
    assert report.sequences_compared >= 4 and report.sequences_compared % 4 == 0
    assert report.weight_constant == pytest.approx(math.sqrt(4 / 3), rel=1e-3)
    assert any("PPOExperienceMaker.compute_advantages_and_returns" in note for note in report.notes)


@pytest.mark.slow
def test_a_framework_env_that_was_never_built_makes_the_check_inconclusive_before_anything_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("MINT_MIGRATE_ENVS", str(tmp_path / "no-envs"))
    train = tmp_path / "train.py"
    train.write_text('# "--parity-dump" "--groups-per-batch"\n', encoding="utf-8")  # never run: the env is checked first
    report = check_parity(VERL_GRPO, train=train, rows=2)
    _assert_inconclusive_for_missing(report, "verl")
    assert "mint_s" not in report.timings


@pytest.mark.slow
def test_a_verl_ppo_launcher_with_a_critic_is_inconclusive_not_failed(tmp_path):
    """GAE advantages come from verl's critic, which train.py does not have: nothing to compare on one
    batch, so parity says so before sampling anything."""
    shutil.copytree(VERL_GRPO.parent, tmp_path / "src")
    launcher = tmp_path / "src" / "run_ppo.sh"
    launcher.write_text(VERL_GRPO.read_text().replace("algorithm.adv_estimator=grpo", "algorithm.adv_estimator=gae")
                        .replace("algorithm.norm_adv_by_std_in_grpo=True", "critic.optim.lr=1e-5"))  # fmt: skip
    train = tmp_path / "train.py"
    train.write_text('# "--parity-dump" "--groups-per-batch"\n', encoding="utf-8")
    report = check_parity(launcher, train=train, rows=2)
    assert report.verdict == "inconclusive"
    [finding] = report.findings
    assert finding.cause == "not_supported" and "algorithm.adv_estimator=gae" in finding.message
    assert "critic" in finding.message and "mint_s" not in report.timings


@pytest.mark.slow
def test_tinker_script_runs_itself_against_mint_local_and_its_summed_loss_is_matched(tmp_path):
    # The Tinker script sends its own datums; cross_entropy sums them. The migration averages over
    # the step's tokens (a real difference, with its fix); with the fix, the objectives match.
    train = migrated(TINKER_SFT, tmp_path)
    report = check_parity(TINKER_SFT, train=train, rows=4)
    assert report.verdict == "failed" and report.tokens_equal and report.positions_equal
    assert report.source_runner == "tinker TrainingClient.forward_backward (the script's own datums)"
    [finding] = errors(report)
    assert finding.cause == "normalisation" and finding.fix == 'Set LOSS_NORMALIZATION = "sum" in train.py.'
    report = check_parity(TINKER_SFT, train=set_constant(train, "LOSS_NORMALIZATION", '"sum"'), rows=4)
    assert report.passed and report.verdict == "passed", report.findings
    assert report.weight_constant == pytest.approx(1.0, rel=1e-5) and report.loss_relative_error < 1e-4


# --- a hand-written PyTorch loop (Stanford Alpaca style) -----------------------------------------------------


@pytest.mark.slow
def test_alpaca_style_loop_passes(tmp_path):
    # The data step for this loop is its own prompt template: the rows train.py reads are rendered
    # with the loop's render_prompt, the completion is the output.
    sys.path.insert(0, str(ALPACA.parent))
    try:
        from train_alpaca import DATA_PATH, render_prompt
    finally:
        sys.path.remove(str(ALPACA.parent))
    examples = json.loads(DATA_PATH.read_text())
    converted = tmp_path / "rows.jsonl"
    converted.write_text("".join(json.dumps({"prompt": render_prompt(e), "completion": e["output"]}) + "\n" for e in examples))
    train = migrated(ALPACA, tmp_path / "out")
    report = check_parity(ALPACA, train=train, rows=4, data=DATA_PATH, mint_data=converted)
    assert report.passed, report.findings
    assert report.source_runner.startswith("pytorch loop")
    assert report.sequences_compared == 4 and report.positions_equal
    assert report.weight_constant == pytest.approx(1.0, rel=1e-5)
    assert report.loss_relative_error < 1e-4
    assert any("meta-llama/Llama-2-7b-hf -> the shared tiny model" in note for note in report.notes)


# --- front ends ----------------------------------------------------------------------------------------------


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).parent / "mint-migrate"), "parity", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900, env=dict(os.environ))


@pytest.mark.slow
def test_cli_parity_json_exit_codes_and_migration_md(tmp_path):
    train = migrated(SFT_TEXT, tmp_path)
    done = _cli(str(SFT_TEXT), "--train", str(train), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["passed"] and report["weight_constant"] == pytest.approx(1.0, rel=1e-5)
    markdown = (tmp_path / "MIGRATION.md").read_text()
    assert markdown.count("## Parity") == 1 and "`mint-migrate parity` passed" in markdown

    set_constant(train, "LOSS_NORMALIZATION", '"sum"')
    done = _cli(str(SFT_TEXT), "--train", str(train), cwd=tmp_path)
    assert done.returncode == 1
    assert "parity FAILED" in done.stdout and "LOSS_NORMALIZATION" in done.stdout
    markdown = (tmp_path / "MIGRATION.md").read_text()
    assert markdown.count("## Parity") == 1 and "`mint-migrate parity` FAILED" in markdown

    done = _cli(str(tmp_path / "missing.py"), "--json", cwd=tmp_path)
    assert done.returncode == 2 and "error" in json.loads(done.stdout)


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.slow
@pytest.mark.anyio
async def test_mcp_check_parity_and_smoke_run_with_parity(tmp_path):
    from mcp import Client

    from mint_migrate.server import create_server

    # The MCP tools run scripts only from inside the workspace: the source goes there first.
    shutil.copytree(SFT_TEXT.parent, tmp_path / "src")
    source = tmp_path / "src" / SFT_TEXT.name
    migrated(source, tmp_path / "out")
    async with Client(create_server(tmp_path), raise_exceptions=True) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["check_parity"].annotations.destructive_hint is False
        result = await client.call_tool("check_parity", {"source_path": "src/sft_text.py", "train_path": "out/train.py"})
        assert not result.is_error
        report = result.structured_content
        assert report["passed"] and report["kind"] == "sft" and report["tokens_equal"]
        assert "## Parity" in (tmp_path / "out" / "MIGRATION.md").read_text()

        result = await client.call_tool(
            "launch_smoke_run", {"script_path": "out/train.py", "steps": 2, "parity_source_path": "src/sft_text.py"}
        )
        verdict = result.structured_content
        assert verdict["passed"], verdict["errors"]
        assert verdict["parity"]["passed"] and verdict["parity"]["sequences_compared"] == 8


@pytest.mark.slow
@pytest.mark.anyio
async def test_mcp_check_parity_with_default_arguments_gives_each_verdict_honestly(tmp_path):
    """As an agent calls it, naming only the two scripts: the usual chat SFT passes, a script for an
    older TRL is inconclusive with the command that fixes it, a broken migration fails with its cause."""
    from mcp import Client

    from mint_migrate.server import create_server

    for fixture in (SFT_ASSISTANT, GRPO_OLDER, SFT_TEXT):
        shutil.copytree(fixture.parent, tmp_path / "src" / fixture.parent.name)
        migrated(tmp_path / "src" / fixture.parent.name / fixture.name, tmp_path / fixture.parent.name)
    set_constant(tmp_path / SFT_TEXT.parent.name / "train.py", "LOSS_NORMALIZATION", '"sum"')  # the bug
    async with Client(create_server(tmp_path), raise_exceptions=True) as client:

        async def check(fixture: Path) -> dict:
            result = await client.call_tool("check_parity", {
                "source_path": f"src/{fixture.parent.name}/{fixture.name}",
                "train_path": f"{fixture.parent.name}/train.py",
            })  # fmt: skip
            assert not result.is_error
            return result.structured_content

        report = await check(SFT_ASSISTANT)
        assert report["verdict"] == "passed" and report["passed"], report["findings"]
        assert report["source_runner"] == "trl.SFTTrainer" and report["weight_constant"] == pytest.approx(1.0)

        report = await check(GRPO_OLDER)
        assert report["verdict"] == "inconclusive" and not report["passed"]
        [finding] = report["findings"]
        assert finding["cause"] == "framework_version" and "GRPOConfig(max_prompt_length=...)" in finding["message"]
        assert f"{sys.executable} -m pip install 'trl==0.27.2'" in finding["fix"]
        markdown = (tmp_path / GRPO_OLDER.parent.name / "MIGRATION.md").read_text()
        assert "`mint-migrate parity` inconclusive" in markdown and "parity` FAILED" not in markdown

        report = await check(SFT_TEXT)
        assert report["verdict"] == "failed"
        [finding] = [f for f in report["findings"] if f["severity"] == "error"]
        assert finding["cause"] == "normalisation" and "sums the loss" in finding["message"]
        assert finding["fix"].startswith('Set LOSS_NORMALIZATION = "token_mean"')
        assert "`mint-migrate parity` FAILED" in (tmp_path / SFT_TEXT.parent.name / "MIGRATION.md").read_text()


@pytest.mark.slow
@pytest.mark.anyio
async def test_mcp_smoke_run_with_parity_runs_both_on_the_model_it_was_given(tmp_path):
    from mcp import Client

    from mint_local.tiny_model import ensure_tiny_model
    from mint_migrate.server import create_server

    model = tmp_path / "models" / "my-model"
    shutil.copytree(ensure_tiny_model("tiny"), model)
    shutil.copytree(SFT_TEXT.parent, tmp_path / "src")
    migrated(tmp_path / "src" / SFT_TEXT.name, tmp_path / "out")
    async with Client(create_server(tmp_path), raise_exceptions=True) as client:
        result = await client.call_tool("launch_smoke_run", {
            "script_path": "out/train.py", "steps": 1, "model": str(model), "parity_source_path": "src/sft_text.py",
        })  # fmt: skip
    verdict = result.structured_content
    assert verdict["passed"], verdict["errors"]
    assert verdict["parity"]["model"] == str(model)  # not the bundled tiny model
    assert verdict["parity"]["verdict"] == "passed", verdict["parity"]["findings"]


@pytest.mark.slow
def test_a_cancelled_check_stops_the_running_side_and_everything_it_started(tmp_path):
    """An MCP client that goes away sets `cancel`: the source side (here stuck before its first
    step, with a child of its own) stops at once, and the check returns saying so."""
    source = tmp_path / "loop.py"
    source.write_text(
        "import os, pathlib, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        "pathlib.Path(__file__).with_name('pids').write_text(f'{os.getpid()} {child.pid}')\n"
        "time.sleep(300)\n",
        encoding="utf-8",
    )
    train = tmp_path / "train.py"
    train.write_text('# "--parity-dump"\n', encoding="utf-8")
    cancel, found = threading.Event(), {}
    worker = threading.Thread(
        target=lambda: found.update(report=check_parity(source, train=train, rows=2, timeout_s=300, fresh=True,
                                                        cancel=cancel))
    )
    worker.start()
    deadline = time.monotonic() + 240  # the harness imports torch and transformers first
    while not (tmp_path / "pids").exists():
        assert time.monotonic() < deadline and worker.is_alive(), found
        time.sleep(0.1)
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    cancel.set()
    worker.join(60)
    assert not worker.is_alive(), "check_parity kept running after cancel"
    report = found["report"]
    assert not report.passed and any("the caller went away" in f.message for f in report.findings)
    for pid in pids:
        state = Path(f"/proc/{pid}/stat")
        assert not state.exists() or state.read_text().split(") ")[1].split()[0] == "Z", pid


# --- fast: the pieces that need no run -----------------------------------------------------------------------


def test_bad_input_is_a_usage_error(tmp_path):
    with pytest.raises(MintMigrateError, match="not a file"):
        check_parity(tmp_path / "nope.py")
    launcher = tmp_path / "run.sh"
    launcher.write_text("accelerate launch sft.py\n")
    with pytest.raises(MintMigrateError, match="Python training script"):
        check_parity(launcher)
    with pytest.raises(MintMigrateError, match="--rows 0"):
        check_parity(SFT_TEXT, rows=0)


def test_token_differences_are_explained():
    from mint_local.tiny_model import ensure_tiny_model

    model_dir = ensure_tiny_model("tiny")
    vocab = Vocab(model_dir)
    text = vocab.tokenizer.encode("Question: what is 12 plus 30?\nAnswer: 42.").ids
    eos = vocab.eos
    assert explain_tokens([*text, eos], text, vocab, 3, "sequence").cause == "eos"
    assert explain_tokens(text, [*text, eos], vocab, 3, "sequence").cause == "eos"
    short = explain_tokens(text, text[:5], vocab, 0, "sequence")
    assert short.cause == "truncation" and (short.source_value, short.mint_value) == (len(text), 5)
    assert "side differs" in explain_tokens(text, text[-5:], vocab, 0, "sequence").message
    chat = vocab.tokenizer.encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nhello<|im_end|>\n").ids
    plain = vocab.tokenizer.encode("user\nhi\nassistant\nhello").ids
    assert explain_tokens(chat, plain, vocab, 1, "sequence").cause == "template_missing"


def test_migration_md_section_is_replaced_not_repeated():
    text = "# Migration\n\n## What cannot move as-is\n\n- x\n"
    once = with_section(text, "Parity", "passed")
    twice = with_section(once, "Parity", "FAILED")
    assert twice.count("## Parity") == 1 and "FAILED" in twice and "passed" not in twice
    assert twice.startswith(text.rstrip("\n"))
    middle = with_section("# M\n\n## Parity\n\nold\n\n## Next\n\nkeep\n", "Parity", "new")
    assert middle == "# M\n\n## Parity\n\nnew\n\n## Next\n\nkeep\n"
