"""Every migration (all fixtures and examples): no setting dropped silently, MIGRATION.md and train.py
agree on every value, the chosen LoRA rate never trips the linter, and the rendered scripts lint clean."""

import re

import pytest

from mint_migrate.analyze.choices import LORA_LR_FLOOR
from mint_migrate.lint import lint_source
from mint_migrate.lint.training_rules import LORA_LR_FLOOR as LINT_FLOOR
from mint_migrate.migrate import migrate
from tests.test_migrate import all_inputs
from tests.test_render import constants

INPUTS = all_inputs()
IDS = [name for name, _, _ in INPUTS]


def constant_at(values: dict, dotted: str):
    """LEARNING_RATE, or a dotted path into a dict constant: DATA.source, LOSS_FN_CONFIGS.ppo."""
    name, *keys = dotted.split(".")
    value = values[name]
    for key in keys:
        value = value[key]
    return value


def section(report: str, title: str) -> str:
    start = report.index(f"## {title}")
    end = report.find("\n## ", start + 1)
    return report[start : end if end != -1 else len(report)]


@pytest.fixture(scope="module")
def migrations(tmp_path_factory):
    root = tmp_path_factory.mktemp("migrations")
    return {name: migrate(source, configs, output_dir=None, workspace=root, overwrite=False)
            for name, source, configs in INPUTS}


@pytest.mark.parametrize("name", IDS)
def test_every_stated_setting_is_applied_in_train_py_or_listed_with_its_reason(name, migrations):
    result = migrations[name]
    plan, values = result.plan, constants(result.train_py)
    uses = {use.key: use for use in plan.setting_uses}
    stated = [key for key in type(plan.settings).model_fields if getattr(plan.settings, key) is not None]
    assert sorted(uses) == sorted(stated), "a stated setting has no record of what became of it"
    cannot_move = section(result.report, "What cannot move as-is")
    for key in stated:
        use = uses[key]
        if use.applied and use.constant:
            assert constant_at(values, use.constant) == use.value, (key, use.constant)
        elif use.applied:
            assert not use.value, f"{key} is applied without a constant, which only a no-op may be"
        else:
            items = [i for i in plan.ledger if i.setting == key and i.disposition == "not_carried"]
            assert use.note and items, key
            for item in items:
                assert f"**{item.key}**" in cannot_move and item.reason in cannot_move, key
        assert any(i.setting == key for i in plan.ledger), f"{key} is stated but not in the ledger"


@pytest.mark.parametrize("name", IDS)
def test_the_ledger_accounts_for_every_stated_setting(name, migrations):
    """Each ledger item names its line and its fate; a constant it names is one train.py has, holding
    the stated value when the item says carried; what is not carried is in "What cannot move"."""
    result = migrations[name]
    plan, values = result.plan, constants(result.train_py)
    cannot_move = section(result.report, "What cannot move as-is")
    ledger = section(result.report, "Ledger: every setting the inputs state")
    assert plan.ledger
    for item in plan.ledger:
        assert item.source and item.disposition, item
        assert f"| {item.key}" in ledger, item.key
        if item.disposition == "not_carried":
            assert f"**{item.key}**" in cannot_move and item.reason in cannot_move, item.key
        if item.constant and item.constant[0].isupper():
            root = item.constant.split(".")[0].split("/")[0]
            assert root in values, (item.key, item.constant)
            kept = constant_at(values, item.constant) if "/" not in item.constant else None
            if item.disposition == "carried" and isinstance(kept, int | float) and not isinstance(kept, bool):
                assert float(kept) == float(item.value), (item.key, item.constant)


@pytest.mark.parametrize("name", IDS)
def test_migration_md_and_train_py_agree_on_every_value(name, migrations):
    result = migrations[name]
    values = constants(result.train_py)
    table = section(result.report, "MinT choices").split("### train.py's defaults", 1)[1]
    rows = re.findall(r"^\| ([A-Z_]+) \| `(.*)` \|$", table, re.M)
    assert len(rows) >= 8
    for constant, shown in rows:
        assert shown == str(values[constant]).replace("|", "\\|"), constant
    for constant, shown in re.findall(r"`([A-Z_.]+) = ([^`]*)`", section(result.report, "Settings read")):
        assert shown == str(constant_at(values, constant)), constant
    mint = result.plan.mint
    assert values["LEARNING_RATE"] == mint.learning_rate and values["LORA_RANK"] == mint.lora_rank
    assert values["BASE_MODEL"] == mint.base_model
    assert f"**learning rate:** `{mint.learning_rate:g}`" in result.report


def test_the_lora_rate_floor_is_the_linters():
    assert LORA_LR_FLOOR == LINT_FLOOR


def shape(result) -> tuple:
    """What decides the code of a rendered train.py (everything else is a constant's value)."""
    plan = result.plan
    reward = plan.reward.style if plan.reward is not None and plan.reward.status == "user" else None
    return plan.mint.kind, plan.mint.throughput, reward, plan.data is not None


def test_generated_train_py_lints_clean_and_the_chosen_rate_never_trips_mint023(migrations):
    # Every shape of generated script, linted whole: no finding, so no MINT023 on the chosen rate.
    representatives = {}
    for name, result in migrations.items():
        representatives.setdefault(shape(result), (name, result))
    assert len(representatives) >= 8
    for name, result in representatives.values():
        report = lint_source(result.train_py, "train.py")
        assert report.parse_error is None
        assert [(f.id, f.line, f.message) for f in report.findings] == [], name
    # The linter does see train.py's rate: the same script with a full fine-tune's rate is flagged.
    name, result = representatives[shape(migrations["verl_grpo_gsm8k_launch"])]
    low = re.sub(r"^LEARNING_RATE = .*$", "LEARNING_RATE = 1e-06", result.train_py, count=1, flags=re.M)
    assert [f.id for f in lint_source(low, "train.py").findings] == ["MINT023"]
    # And every rate a migration chose passes the rule, in the same code path (one probe per rate).
    rates = {constants(result.train_py)["LEARNING_RATE"] for result in migrations.values()}
    assert min(rates) >= LORA_LR_FLOOR
    for rate in sorted(rates):
        probe = re.sub(r"^LEARNING_RATE = .*$", f"LEARNING_RATE = {rate!r}", low, count=1, flags=re.M)
        assert lint_source(probe, "train.py").findings == [], rate


def test_a_full_fine_tune_rate_that_x10_is_still_below_the_floor_is_raised_and_says_why(migrations):
    plan = migrations["openrlhf_dpo_legacy_deepspeed"].plan  # --learning_rate 5e-7, full fine-tune
    assert plan.settings.learning_rate.value == 5e-7 and plan.mint.learning_rate == 1e-5
    assert "x10" in plan.mint.learning_rate_reason and "MINT023" in plan.mint.learning_rate_reason


def test_schedule_settings_become_train_py_constants(migrations):
    """Epochs, warmup + decay, PPO mini-batches and update epochs, and the loss's normalisation."""
    verl = constants(migrations["verl_grpo_gsm8k_launch"].train_py)
    assert verl["EPOCHS"] == 15.0 and verl["MINIBATCHES"] == 4  # 1024 prompts / ppo_mini_batch_size 256
    assert verl["LOSS_NORMALIZATION"] == "token_mean" and verl["NORMALIZE_ADVANTAGES"] is True
    ppo = constants(migrations["verl_ppo_gae_yaml"].train_py)
    assert ppo["UPDATES_PER_BATCH"] == 2 and ppo["EPOCHS"] == 4.0  # ppo_epochs: 2, total_epochs: 4
    sft = constants(migrations["trl_sft_lora_constants"].train_py)
    assert sft["LR_SCHEDULE"] == {"type": "cosine", "warmup_steps": 0, "warmup_ratio": 0.03, "min_lr_ratio": 0.0}
    assert sft["LOSS_NORMALIZATION"] == "token_mean"
    dapo = constants(migrations["verl_dapo_recipe_hydra"].train_py)
    assert dapo["LR_SCHEDULE"]["warmup_steps"] == 10 and dapo["STEPS"] == 400
    loop = constants(migrations["pytorch_sft_loop_accum"].train_py)
    assert loop["LR_SCHEDULE"]["type"] == "cosine" and loop["LR_SCHEDULE"]["warmup_steps"] == 100
    assert loop["TRAIN_ON"] == "all" and loop["DATA"]["fields"] == {"prompt": "instruction", "completion": "output"}
    assert loop["DATA"]["prompt_template"] == "{}\n"
    trl_grpo = constants(migrations["trl_grpo_reward_funcs"].train_py)
    assert trl_grpo["LOSS_NORMALIZATION"] == "token_mean"  # loss_type="dapo"
    drgrpo = migrations["openrlhf_ppo_ray_group_norm"].plan.schedule
    assert drgrpo.minibatches == 8 and drgrpo.normalize_advantages  # 128 prompts x 8 / 128 per optim step


def test_reward_placeholders_are_said_in_the_plan_the_report_and_train_py(migrations):
    result = migrations["verl_dapo_recipe_hydra"]  # verl's built-in scorer for the data source
    assert result.plan.reward.status == "placeholder" and "verl.utils.reward_score" in result.plan.reward.reason
    assert constants(result.train_py)["REWARD"] is None
    assert "**REWARD_PLACEHOLDER**" in section(result.report, "What cannot move as-is")
    assert "**placeholder:**" in section(result.report, "Reward")
    builtin = migrations["trl_grpo_trl_cli"].plan.reward  # --reward_funcs accuracy_reward (trl.rewards)
    assert builtin.status == "placeholder" and "trl.rewards" in builtin.reason


def test_the_reward_rows_of_the_side_by_side_say_how_train_py_calls_it(migrations):
    report = migrations["example_verl_run_grpo_gsm8k"].report
    assert "reward_fn(prompt, completion, row)" not in report
    assert "called unchanged from train.py (REWARD, the verl signature)" in report
    assert "`compute_score(data_source, solution_str, ground_truth, extra_info)`" in section(report, "Reward")
