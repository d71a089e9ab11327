"""mint_migrate/sdk_facts.py against the installed SDK, and every reader of it against the module.

A fact the SDK contradicts fails here (LossFnType, inspect.signature, pydantic fields, the
version pins); a module that keeps its own copy of a fact instead of importing it fails the
second half, so a change to the facts reaches render, lint, choices, the CLI, the MCP schema,
mint-local and the generated docs at once.
"""

import asyncio
import importlib.metadata
import inspect
import os
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from mint_migrate import sdk_facts

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def sdk():
    import mint  # importing creates no client: nothing leaves the machine

    return mint


# --- the facts are true for the installed SDK -----------------------------------------------------


def test_versions_are_the_installed_ones(sdk):
    assert importlib.metadata.version("mindlab-toolkit") == sdk_facts.MINDLAB_TOOLKIT_VERSION == sdk.__version__
    assert importlib.metadata.version("tinker") == sdk_facts.TINKER_VERSION == sdk.__tinker_version__


def test_loss_names_are_the_sdk_loss_fn_type(sdk):
    assert typing.get_args(sdk.types.LossFnType) == sdk_facts.LOSS_NAMES
    assert tuple(n for n in sdk_facts.LOSS_NAMES if n != "cross_entropy") == sdk_facts.RL_LOSSES
    assert not set(sdk_facts.LATER_SDK_LOSSES) & set(sdk_facts.LOSS_NAMES)
    assert set(sdk_facts.LOSS_FN_CONFIG_KEYS) == set(sdk_facts.LOSS_NAMES)
    # forward_backward's loss_fn parameter is that type
    hints = typing.get_type_hints(sdk.TrainingClient.forward_backward)
    assert typing.get_args(hints["loss_fn"]) == sdk_facts.LOSS_NAMES


def test_loss_fn_config_defaults_use_only_accepted_keys():
    for loss, config in sdk_facts.loss_fn_config_defaults().items():
        assert loss in sdk_facts.RL_LOSSES
        assert set(config or {}) <= set(sdk_facts.LOSS_FN_CONFIG_KEYS[loss]), loss
    copy = sdk_facts.loss_fn_config_defaults()
    copy["ppo"]["clip_low_threshold"] = 0.0
    assert sdk_facts.loss_fn_config_defaults()["ppo"] == sdk_facts.PPO_CLIP == {
        "clip_low_threshold": 0.8, "clip_high_threshold": 1.2
    }


def _methods(sdk, name: str) -> list:
    found = [getattr(cls, name) for cls in (sdk.ServiceClient, sdk.TrainingClient, sdk.SamplingClient) if hasattr(cls, name)]
    if not found:
        found = [getattr(sdk.types, name)]
    return found


def test_keyword_sets_are_the_sdk_signatures(sdk):
    for name, keywords in sdk_facts.KEYWORDS.items():
        params: set[str] = set()
        for target in _methods(sdk, name):
            if inspect.isclass(target):
                params |= set(target.model_fields)
            else:
                params |= {p for p in inspect.signature(target).parameters if p != "self"}
        assert params == keywords, f"{name}: the SDK has {sorted(params)}, sdk_facts says {sorted(keywords)}"


def test_client_and_optimizer_defaults(sdk):
    rank = inspect.signature(sdk.ServiceClient.create_lora_training_client).parameters["rank"].default
    assert rank == sdk_facts.DEFAULT_LORA_RANK
    for switch in sdk_facts.LORA_SWITCHES:
        assert inspect.signature(sdk.ServiceClient.create_lora_training_client).parameters[switch].default is True
    assert {k: f.default for k, f in sdk.types.AdamParams.model_fields.items()} == sdk_facts.ADAM_DEFAULTS
    assert set(sdk.types.SamplingParams.model_fields) == sdk_facts.SAMPLING_PARAMS_FIELDS


def test_datum_input_keys(sdk):
    import tinker.types.datum

    assert set(tinker.types.datum._KEY_TO_TYPE) == sdk_facts.RAW_LIST_INPUT_KEYS
    datum = sdk.types.Datum(
        model_input=sdk.types.ModelInput.from_ints([1, 2]),
        loss_fn_inputs={"target_tokens": [2, 3], "weights": [1.0, 1.0], "advantages": [0.5, 0.5]},
    )
    with pytest.raises(ValueError) as raised:
        sdk.TrainingClient._get_custom_loss_forward_data(object(), [datum], "cross_entropy")
    for key in sdk_facts.CUSTOM_LOSS_INPUT_KEYS:
        assert key in str(raised.value)
    ok = sdk.types.Datum(model_input=datum.model_input, loss_fn_inputs={"target_tokens": [2, 3], "weights": [1.0, 1.0]})
    sdk.TrainingClient._get_custom_loss_forward_data(object(), [ok], "cross_entropy")


def test_default_base_url_is_what_import_mint_sets():
    env = {k: v for k, v in os.environ.items() if k not in ("MINT_BASE_URL", "TINKER_BASE_URL")}
    done = subprocess.run(
        [sys.executable, "-c", "import os, mint; print(os.environ['TINKER_BASE_URL'])"],
        capture_output=True, text=True, env={**env, "TINKER_TELEMETRY": "0"}, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == sdk_facts.MINT_DEFAULT_BASE_URL


def test_an_existing_tinker_base_url_survives_import_mint():
    """The default applies only when neither variable is set: the docs say so (cheatsheet, concept map)."""
    env = {k: v for k, v in os.environ.items() if k != "MINT_BASE_URL"}
    done = subprocess.run(
        [sys.executable, "-c", "import os, mint; print(os.environ['TINKER_BASE_URL'])"],
        capture_output=True, text=True, env={**env, "TINKER_BASE_URL": "http://127.0.0.1:9", "TINKER_TELEMETRY": "0"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "http://127.0.0.1:9"
    for path in (ROOT / "mint_api_cheatsheet.md", ROOT / "mint_migrate" / "concepts" / "tinker.yaml"):
        assert "existing TINKER_BASE_URL" in " ".join(path.read_text(encoding="utf-8").replace("`", "").split()), path


def test_sampling_clients_take_tinker_paths_only(sdk):
    """create_sampling_client(model_path=) checks the scheme client-side, before any request."""
    from tinker.lib.internal_client_holder import InternalClientHolder

    source = inspect.getsource(InternalClientHolder._create_sampling_session)
    assert f'model_path.startswith("{sdk_facts.CHECKPOINT_SCHEME}")' in source
    cheatsheet = " ".join((ROOT / "mint_api_cheatsheet.md").read_text(encoding="utf-8").split())
    assert "create_sampling_client(model_path=...)` checks the same way" in cheatsheet


# --- every reader uses the module, not a copy ------------------------------------------------------


def test_plan_and_render_read_the_facts():
    from mint_migrate import plan, render

    assert typing.get_args(plan.LossFn) == sdk_facts.LOSS_NAMES
    assert render.RL_LOSSES is sdk_facts.RL_LOSSES
    assert render.DEFAULT_BASE_MODEL is sdk_facts.DEFAULT_BASE_MODEL
    assert render.template_values(render.ScaffoldOptions(kind="grpo"))["loss_fn_configs"] == (
        sdk_facts.loss_fn_config_defaults()
    )


def test_choices_read_the_facts():
    from mint_migrate.analyze import choices

    assert choices.DEFAULT_MODEL is sdk_facts.DEFAULT_BASE_MODEL


def test_lint_reads_the_facts():
    from mint_migrate.lint import flow, sdk_rules

    assert sdk_rules.LOSS_NAMES is sdk_facts.LOSS_NAMES
    assert sdk_rules.SIGNATURES is sdk_facts.KEYWORDS
    assert sdk_rules.SAMPLING_PARAMS is sdk_facts.SAMPLING_PARAMS_FIELDS
    assert set(sdk_facts.LOSS_NAMES) | set(sdk_facts.LATER_SDK_LOSSES) <= flow.LOSS_LIKE_NAMES


def test_preflight_reads_the_facts():
    from mint_migrate import preflight

    assert preflight.PINNED_TINKER is sdk_facts.TINKER_VERSION
    assert preflight.PINNED_TOOLKIT is sdk_facts.MINDLAB_TOOLKIT_VERSION
    assert preflight.DOCUMENTED_MODELS is sdk_facts.MINT_DOCUMENTED_MODELS
    assert ".".join(map(str, preflight.MAX_COOKBOOK)) == sdk_facts.TINKER_COOKBOOK_MAX_VERSION


def test_cli_and_mcp_offer_the_rl_losses():
    from mint_migrate.cli import build_parser
    from mint_migrate.server import create_server

    for loss in sdk_facts.RL_LOSSES:
        assert build_parser().parse_args(["scaffold", "grpo", "--loss-fn", loss]).loss_fn == loss
    for later in sdk_facts.LATER_SDK_LOSSES:  # refused by the request model, as the MCP tool refuses it
        done = subprocess.run([sys.executable, "-m", "mint_migrate", "scaffold", "grpo", "--loss-fn", later, "--json"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and "loss_fn (--loss-fn): Input should be" in done.stdout, done.stdout
    tools = {t.name: t for t in asyncio.run(create_server(ROOT).list_tools())}
    prop = tools["scaffold_train_py"].input_schema["properties"]["loss_fn"]
    assert next(a["enum"] for a in prop["anyOf"] if "enum" in a) == list(sdk_facts.LOSS_NAMES)


def test_mint_local_losses_follow_the_facts():
    pytest.importorskip("torch")
    from mint_local import losses

    assert tuple(losses.SPECS) == tuple(losses.LOSS_FUNCTIONS) == sdk_facts.LOSS_NAMES
    for loss in sdk_facts.LOSS_NAMES:
        defaults = sdk_facts.loss_fn_config_defaults().get(loss) or {}
        assert losses.resolve_config(loss, None) == defaults, loss
        assert set(losses.SPECS[loss].config_defaults) == set(sdk_facts.LOSS_FN_CONFIG_KEYS[loss]), loss


@pytest.mark.slow
def test_training_futures_have_future_over_http(mint_env):
    """What the docs and MINT011 say about 0.22.0's futures, on the real SDK against mint-local."""
    import concurrent.futures

    import mint
    from mint import types
    from tinker.lib.public_interfaces.api_future import AwaitableConcurrentFuture

    service_client = mint.ServiceClient()
    try:
        training_client = service_client.create_lora_training_client(base_model=mint_env.model_name, rank=4)
        tokens = [5, 6, 7, 8]
        datum = types.Datum(
            model_input=types.ModelInput.from_ints(tokens[:-1]),
            loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0, 1.0, 1.0]},
        )
        fb = training_client.forward_backward([datum], "cross_entropy")
        op = training_client.optim_step(types.AdamParams(learning_rate=1e-4))
        assert isinstance(fb, AwaitableConcurrentFuture) and isinstance(op, AwaitableConcurrentFuture)
        underneath = fb.future()
        assert isinstance(underneath, concurrent.futures.Future)
        done, pending = concurrent.futures.wait([underneath, op.future()], timeout=120)
        assert not pending
        assert underneath.result().metrics["loss:sum"] == fb.result().metrics["loss:sum"] > 0
        assert not hasattr(fb, "coroutine")  # the 0.38 addition MINT011 still reports
    finally:
        service_client.holder.close()


# --- one fact, one place: what the agent-facing files say ------------------------------------------

AGENT_FACING = [ROOT / "SKILL.md", ROOT / "mint_api_cheatsheet.md", ROOT / "docs" / "rules.md",
                ROOT / "commands" / "migrate.md", *sorted((ROOT / "mint_migrate" / "concepts").glob("*.yaml")),
                *sorted((ROOT / "scaffolds").glob("*.j2"))]
FACTOR = re.compile(r"(?<![\w.])(?:x(\d+)|(\d+)(?:\s?-\s?(\d+))?x)(?![\w])")


def _texts() -> dict[str, str]:
    from mint_migrate.server import migration_prompt

    texts = {str(p.relative_to(ROOT)): " ".join(p.read_text(encoding="utf-8").split()) for p in AGENT_FACING}
    texts["the mint-migrate prompt"] = " ".join(migration_prompt("trl").split())
    return texts


def test_every_agent_facing_file_states_one_lora_learning_rate_factor():
    """A factor next to a learning rate is the policy's (10x), wherever an agent reads it; the LoRA
    primer's older 20-100x may be named only as that, the primer's."""
    stated = []
    for name, text in _texts().items():
        for match in FACTOR.finditer(text):
            window = text[max(0, match.start() - 160): match.end() + 160]
            if not re.search(r"learning rate|\bLR\b|\blr\b|LoRA rate", window):
                continue
            factor = match.group(0)
            stated.append(name)
            if factor in ("20-100x",) and "primer" in window:
                continue
            numbers = {g for g in match.groups() if g}
            assert numbers == {str(sdk_facts.LORA_LR_FACTOR)}, f"{name}: '{factor}' in ...{window}..."
    for must in ("SKILL.md", "mint_api_cheatsheet.md", "docs/rules.md", "the mint-migrate prompt"):
        assert must in stated or sdk_facts.LORA_LR_RULE in _texts()[must], must
    for name in ("SKILL.md", "mint_api_cheatsheet.md", "docs/rules.md", "the mint-migrate prompt"):
        assert sdk_facts.LORA_LR_RULE in _texts()[name], name


def test_migrate_and_lint_apply_the_lora_policy():
    from mint_migrate.analyze import choices
    from mint_migrate.lint import lint_source, training_rules

    assert choices.LORA_FACTOR == sdk_facts.LORA_LR_FACTOR and choices.LORA_LR_FLOOR == sdk_facts.LORA_LR_FLOOR
    assert training_rules.LORA_LR_FLOOR == sdk_facts.LORA_LR_FLOOR
    low = "from mint import types\nadam = types.AdamParams(learning_rate=2e-6)\n"
    [finding] = [f for f in lint_source(low).findings if f.id == "MINT023"]
    assert sdk_facts.LORA_LR_RULE in finding.message and "Try 2e-05" in finding.fix


def test_agent_facing_lists_of_losses_are_the_sdk_losses():
    """Where a file lists the built-in losses it lists all five, and never offers a later SDK's as one."""
    for name in ("SKILL.md", "mint_api_cheatsheet.md"):
        text = _texts()[name]
        for loss in sdk_facts.LOSS_NAMES:
            assert f"`{loss}`" in text or f'`"{loss}"`' in text, (name, loss)
    skill = _texts()["SKILL.md"]
    listed = skill[skill.index("The built-in losses are exactly"):][:200]
    assert re.findall(r"`(\w+)`", listed.split(". ")[0]) == list(sdk_facts.LOSS_NAMES)


def test_mint_local_imports_nothing_from_the_migration_tool():
    """The two products stand apart: what both need is in mint_facts."""
    code = (
        "import importlib, pkgutil, sys, mint_local\n"
        "for m in pkgutil.walk_packages(mint_local.__path__, 'mint_local.'):\n"
        "    if not m.name.endswith('__main__'):\n"
        "        importlib.import_module(m.name)\n"
        "print(sorted(n for n in sys.modules if n == 'mint_migrate' or n.startswith('mint_migrate.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TINKER_TELEMETRY": "0"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    import mint_local.losses as losses

    assert losses.PPO_CLIP is sdk_facts.PPO_CLIP and losses.DRO_BETA == sdk_facts.DRO_BETA


def test_resume_of_a_generated_train_py_is_documented_where_an_agent_reads():
    """--resume latest, --save-every and checkpoints.jsonl: the generated train.py's own resume."""
    from mint_migrate.render import ScaffoldOptions, render_companion, render_scaffold

    plumbing = render_companion() + render_scaffold(ScaffoldOptions(kind="sft"))
    for spelled in ("--resume", "--save-every", "checkpoints.jsonl", "latest"):
        assert spelled in plumbing, spelled  # what the docs describe exists
    for name in ("SKILL.md", "mint_api_cheatsheet.md", "commands/migrate.md"):
        text = _texts()[name]
        assert "--resume latest" in text and "--save-every" in text and "checkpoints.jsonl" in text, name
