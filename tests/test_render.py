"""render.py: options and plans -> a parseable train.py per kind, and the mint_run.py beside it (no server needed)."""

import ast
import builtins
import json
from pathlib import Path

import libcst
import pytest

from mint_migrate.errors import MintMigrateError, OutsideWorkspace, WouldOverwrite
from mint_migrate.plan import MigrationPlan, MintChoices, Setting, Settings
from mint_migrate.render import (
    COMPANION,
    DEFAULT_LOSS_FN_CONFIGS,
    ScaffoldOptions,
    ScaffoldRenderError,
    check_parses,
    py_literal,
    render_companion,
    render_plan,
    render_prepare_data,
    render_scaffold,
    scaffold,
    scaffold_variants,
)

VARIANTS = scaffold_variants()
COMMON_FLAGS = [
    "--base-model", "--data", "--steps", "--smoke", "--dry-run", "--resume", "--save-every", "--log-dir",
    "--learning-rate", "--lora-rank", "--seed", "--parity-dump",
]  # fmt: skip
GRPO_FLAGS = [
    "--loss-fn", "--loss-fn-config", "--groups-per-batch", "--group-size", "--max-tokens", "--temperature",
    "--normalize-advantages", "--reward",
]  # fmt: skip
THROUGHPUT_FLAGS = [
    "--max-concurrent-requests", "--stream-minibatches-per-step", "--min-accepted-groups", "--tail-grace-seconds",
    "--overlap",
]  # fmt: skip
KIND_FLAGS = {
    "sft": ["--batch-size", "--max-length"],
    "grpo": [*GRPO_FLAGS, "--minibatches", "--updates-per-batch"],
    "grpo-throughput": [*GRPO_FLAGS, *THROUGHPUT_FLAGS],
    "dpo": ["--beta", "--batch-size", "--max-length", "--reference-path"],
    "distill": ["--teacher-path", "--batch-size", "--samples-per-prompt", "--max-tokens", "--temperature"],
}


def constants(source: str) -> dict[str, object]:
    """Top-level NAME = <literal> assignments of a rendered script."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return found


def companion_imports(source: str) -> set[str]:
    """The names a train.py imports from mint_run.py."""
    tree = ast.parse(source)
    return {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "mint_run" for a in n.names}


def program(source: str) -> str:
    """What runs: a train.py and the mint_run.py it imports."""
    return source + "\n" + render_companion()


def function_names(source: str) -> set[str]:
    return {n.name for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


@pytest.mark.parametrize(("kind", "loss_fn", "throughput"), VARIANTS)
def test_every_kind_and_loss_renders_one_parseable_script_and_its_companion(kind, loss_fn, throughput):
    train_py = render_scaffold(ScaffoldOptions(kind=kind, loss_fn=loss_fn, throughput=throughput))
    libcst.parse_module(train_py)
    source = program(train_py)  # the flags and SDK calls below may live in either file
    tree = ast.parse(source)
    from_imports = {(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert ("mint", "types") in from_imports and companion_imports(train_py)
    # Only mint-migrate's companion beside it: no jinja left, nothing imported from this project.
    assert "{{" not in source and "{%" not in source
    assert not any(m and m.startswith(("mint_migrate", "mint_local", "scaffolds")) for m, _ in from_imports)
    for flag in COMMON_FLAGS + KIND_FLAGS[kind + "-throughput" * throughput]:
        assert f'"{flag}"' in source, f"{kind} lacks {flag}"
    if kind == "grpo" and not throughput:
        assert not any(f'"{flag}"' in source for flag in THROUGHPUT_FLAGS)
    assert "def main(" in source and 'if __name__ == "__main__":' in source
    assert "METRIC" in source and "done=1" in source
    # Pinned-SDK traps stay out of every scaffold.
    keywords = {n.arg for n in ast.walk(tree) if isinstance(n, ast.keyword)}
    attributes = {
        (n.value.id, n.attr) for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
    }
    assert "stop_token_ids" not in keywords
    assert ("result", "loss") not in attributes and ("response", "samples") not in attributes
    called = {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    assert not {"create_training_client_from_state", "create_training_client_from_state_with_optimizer"} & called
    assert called & {"load_state_with_optimizer", "load_state_with_optimizer_async"}
    assert "load_state" not in called and "load_state_async" not in called
    if loss_fn:
        assert constants(source)["LOSS_FN"] == loss_fn


@pytest.mark.parametrize(("kind", "loss_fn", "throughput"), VARIANTS)
def test_rendered_scripts_use_every_name_they_import_and_keep_lines_short(kind, loss_fn, throughput):
    train_py = render_scaffold(ScaffoldOptions(kind=kind, loss_fn=loss_fn, throughput=throughput))
    for source in (train_py, render_companion()):
        check_imports_used_and_lines_short(source, kind)


def check_imports_used_and_lines_short(source: str, kind: str) -> None:
    tree = ast.parse(source)
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            imported |= {a.asname or a.name for a in node.names}
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    used |= {n.value.id for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
    assert imported - used == set(), f"{kind}: unused imports"
    too_long = [i for i, line in enumerate(source.splitlines(), 1) if len(line) > 120]
    assert not too_long, f"{kind}: lines over 120 characters: {too_long}"


@pytest.mark.parametrize(("kind", "loss_fn", "throughput"), VARIANTS)
def test_every_name_a_scaffold_calls_is_defined_imported_or_builtin(kind, loss_fn, throughput):
    """A helper a scaffold calls but no partial defines would be a NameError mid-run."""
    train_py = render_scaffold(ScaffoldOptions(kind=kind, loss_fn=loss_fn, throughput=throughput))
    companion = ast.parse(render_companion())
    provided = {n.name for n in companion.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    assert companion_imports(train_py) <= provided, f"{kind} imports what {COMPANION} does not define"
    check_names_defined(ast.parse(train_py), kind)
    check_names_defined(companion, COMPANION)


def check_names_defined(tree: ast.Module, kind: str) -> None:
    known = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            known.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            known |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            known.add(node.id)
        elif isinstance(node, ast.arg):
            known.add(node.arg)
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert called - known == set(), f"{kind}: called but never defined"


def test_default_grpo_reads_like_a_recipe_and_the_throughput_variant_keeps_the_machinery():
    grpo = render_scaffold(ScaffoldOptions(kind="grpo"))
    names = function_names(grpo)
    # The recipe, top to bottom: sample groups -> reward -> centred advantages -> datums -> train -> checkpoint.
    recipe = ["sample_groups", "score_groups", "advantages", "group_datums", "train_on", "main"]
    assert all(name in names for name in recipe)
    positions = [grpo.index(f"def {name}(") for name in recipe]
    assert positions == sorted(positions), "the core loop is not in reading order"
    assert "asyncio" not in grpo and "class RolloutEngine" not in grpo and "sample_many_async" not in grpo
    assert "save_weights_and_get_sampling_client" in grpo and "stop=stop_tokens(tokenizer)" in grpo
    assert "has_signal" in grpo and "save_checkpoint(training_client" in grpo
    # The plumbing lives in mint_run.py: the recipe file stays short (it was 782 lines with it).
    assert len(grpo.splitlines()) <= 450, len(grpo.splitlines())

    fast = render_scaffold(ScaffoldOptions(kind="grpo", throughput=True))
    for helper in ("resolve_api_result_async", "sample_one_async", "iter_sample_many_async"):
        assert helper in companion_imports(fast), helper
    assert "main_async" in function_names(fast)
    # Dead helpers are gone: a scaffold imports only what it calls (checked above), and defines
    # nothing it does not call (test_every_function_a_scaffold_defines_is_used).
    assert "sample_many_async" not in companion_imports(fast) and "gather_with_limit_async" not in fast
    assert "class RolloutEngine" in fast and "asyncio.Semaphore" in fast and "asyncio.Queue" in fast
    assert "asyncio.run(main_async(" in fast
    distill = render_scaffold(ScaffoldOptions(kind="distill"))
    assert {"resolve_api_result_async", "sample_many_async"} <= companion_imports(distill)
    assert "main_async" in function_names(distill)
    assert "mintx.forward_backward_reverse_kl" in distill and "save_weights_for_sampler" in distill


@pytest.mark.parametrize(("kind", "loss_fn", "throughput"), VARIANTS)
def test_every_function_a_scaffold_defines_is_used(kind, loss_fn, throughput):
    source = render_scaffold(ScaffoldOptions(kind=kind, loss_fn=loss_fn, throughput=throughput))
    tree = ast.parse(source)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    used |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    top_level = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    assert top_level - used - {"main"} == set()


def test_the_companion_is_one_text_for_every_kind_and_each_of_its_helpers_is_used():
    """mint_run.py does not depend on the options, and nothing in it is dead: each function is
    imported by some scaffold or called inside mint_run.py itself."""
    companion = render_companion()
    assert render_companion.__wrapped__() == companion  # rendered afresh: the same text
    for kind, loss_fn, throughput in VARIANTS:
        options = ScaffoldOptions(kind=kind, loss_fn=loss_fn, throughput=throughput, header=["x"], steps=3)
        assert scaffold(options, output_path=None, workspace=Path("."), overwrite=False).companion_source == companion
    tree = ast.parse(companion)
    imported = set().union(*(companion_imports(render_scaffold(ScaffoldOptions(kind=k, loss_fn=f, throughput=t)))
                             for k, f, t in VARIANTS))
    imported |= companion_imports(render_prepare_data(ScaffoldOptions(kind="grpo")))
    inside = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    assert defined - imported - inside == set()


def test_dpo_keeps_reference_logprobs_out_of_the_datum():
    source = render_scaffold(ScaffoldOptions(kind="dpo", beta=0.25))
    assert "forward_backward_custom(" in source and "compute_logprobs(" in source
    assert constants(source)["BETA"] == 0.25
    # The only loss_fn_inputs keys the custom-loss path accepts.
    keys = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.keyword) and node.arg == "loss_fn_inputs" and isinstance(node.value, ast.Dict):
            keys |= {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    assert keys == {"target_tokens", "weights"}


def test_sft_shifts_inputs_targets_and_weights_together():
    source = render_scaffold(ScaffoldOptions(kind="sft"))
    assert "model_input=types.ModelInput.from_ints(tokens[:-1])" in source
    assert '"target_tokens": tokens[1:], "weights": [w * scale for w in weights[1:]]' in source
    assert 'result.metrics["loss:sum"]' in source


def test_options_become_the_argument_defaults():
    source = render_scaffold(
        ScaffoldOptions(
            kind="grpo",
            base_model="Qwen/Qwen3-8B",
            loss_fn="ppo",
            loss_fn_config={"clip_low_threshold": 0.7, "clip_high_threshold": 1.3},
            learning_rate=3e-5,
            lora_rank=8,
            group_size=16,
            groups_per_batch=32,
            max_tokens=512,
            temperature=0.8,
            steps=100,
            save_every=10,
        )
    )
    c = constants(source)
    assert c["BASE_MODEL"] == "Qwen/Qwen3-8B" and c["LOSS_FN"] == "ppo"
    assert c["LEARNING_RATE"] == 3e-5 and c["LORA_RANK"] == 8 and c["STEPS"] == 100 and c["SAVE_EVERY"] == 10
    assert c["GROUP_SIZE"] == 16 and c["GROUPS_PER_BATCH"] == 32 and c["MAX_TOKENS"] == 512 and c["TEMPERATURE"] == 0.8
    configs = c["LOSS_FN_CONFIGS"]
    assert configs["ppo"] == {"clip_low_threshold": 0.7, "clip_high_threshold": 1.3}
    assert configs["cispo"] == DEFAULT_LOSS_FN_CONFIGS["cispo"] and configs["importance_sampling"] is None


def test_lora_learning_rate_defaults_carry_the_lora_guidance():
    for kind in ("sft", "grpo", "dpo", "distill"):
        source = render_scaffold(ScaffoldOptions(kind=kind))
        assert "10x a full fine-tune's" in source, kind  # mint_facts.LORA_LR_RULE
        assert 1e-5 <= constants(source)["LEARNING_RATE"] <= 5e-4, kind


def test_hostile_values_stay_literals():
    nasty = 'x"\nimport os; os.system("echo pwned")  # \\'
    source = render_scaffold(ScaffoldOptions(kind="sft", base_model=nasty, header=["line one\n", "two\r\nthree"]))
    assert constants(source)["BASE_MODEL"] == nasty
    top_level_calls = [ast.unparse(n) for n in ast.parse(source).body if isinstance(n, ast.Expr)
                       and isinstance(n.value, ast.Call)]
    assert top_level_calls == ["sys.path.insert(0, str(HERE))"]  # only the one that finds mint_run.py
    header = source.splitlines()[1:3]
    assert header == ["# line one", "# two three"]


def test_py_literal_round_trips():
    for value in ["a\"b'c\\n", 1, 2.5e-5, None, True, [1, "x"], {"a": 0.8, "b": None}, {"k": {"x": 1.0}}]:
        assert ast.literal_eval(py_literal(value)) == value
    with pytest.raises(ValueError):
        py_literal(float("nan"))


def test_wrong_loss_for_the_kind_is_a_user_error():
    with pytest.raises(MintMigrateError, match="sft trains with cross_entropy"):
        render_scaffold(ScaffoldOptions(kind="sft", loss_fn="ppo"))
    with pytest.raises(MintMigrateError, match="grpo needs an RL loss"):
        render_scaffold(ScaffoldOptions(kind="grpo", loss_fn="cross_entropy"))


def test_a_render_that_does_not_parse_raises():
    with pytest.raises(ScaffoldRenderError, match="mint-migrate bug"):
        check_parses("def broken(:\n", "a test scaffold")


def test_scaffold_writes_only_inside_the_workspace_and_never_over_a_file(tmp_path):
    result = scaffold(ScaffoldOptions(kind="dpo"), output_path="out/train.py", workspace=tmp_path, overwrite=False)
    written, companion = tmp_path / "out" / "train.py", tmp_path / "out" / COMPANION
    assert result.path == str(written) and written.read_text() == result.source
    assert result.companion_path == str(companion) and companion.read_text() == result.companion_source
    with pytest.raises(WouldOverwrite):
        scaffold(ScaffoldOptions(kind="dpo"), output_path="out/train.py", workspace=tmp_path, overwrite=False)
    # The companion counts as much as train.py: neither is written over unasked, nor one without the other.
    companion.write_text("# edited by hand")
    with pytest.raises(WouldOverwrite):
        scaffold(ScaffoldOptions(kind="dpo"), output_path="out/other.py", workspace=tmp_path, overwrite=False)
    assert not (tmp_path / "out" / "other.py").exists() and companion.read_text() == "# edited by hand"
    again = scaffold(ScaffoldOptions(kind="sft"), output_path="out/train.py", workspace=tmp_path, overwrite=True)
    assert "cross_entropy" in written.read_text() and again.kind == "sft"
    with pytest.raises(OutsideWorkspace):
        scaffold(ScaffoldOptions(kind="sft"), output_path="../elsewhere.py", workspace=tmp_path, overwrite=False)
    only_source = scaffold(ScaffoldOptions(kind="grpo"), output_path=None, workspace=tmp_path, overwrite=False)
    assert only_source.path is None and "def sample_groups" in only_source.source
    assert only_source.companion_path is None and "def load_rows" in only_source.companion_source


def plan_for(kind: str, algorithm: str, **choices) -> MigrationPlan:
    return MigrationPlan(
        framework="trl",
        algorithm=algorithm,
        settings=Settings(base_model=Setting(value="Qwen/Qwen3-4B-Instruct-2507", source="train.py:12")),
        mint=MintChoices(
            kind=kind,
            base_model="Qwen/Qwen3-4B-Instruct-2507",
            learning_rate_reason="TRL learning_rate 1e-06 (train.py:20) x 40 for LoRA",
            **choices,
        ),
        inputs=["examples/trl_grpo.py", "configs/grpo.yaml"],
    )


def test_render_plan_grpo_takes_every_choice_and_says_where_it_came_from():
    plan = plan_for(
        "grpo",
        "grpo",
        loss_fn="cispo",
        loss_fn_config={"clip_low_threshold": 0.0, "clip_high_threshold": 5.0},
        learning_rate=4e-5,
        lora_rank=8,
        group_size=6,
        groups_per_batch=12,
        max_tokens=300,
        temperature=0.9,
        steps=50,
    )
    source = render_plan(plan)
    c = constants(source)
    assert c["LOSS_FN"] == "cispo" and c["LOSS_FN_CONFIGS"]["cispo"] == {
        "clip_low_threshold": 0.0,
        "clip_high_threshold": 5.0,
    }
    assert (c["LEARNING_RATE"], c["LORA_RANK"], c["GROUP_SIZE"], c["GROUPS_PER_BATCH"]) == (4e-5, 8, 6, 12)
    assert (c["MAX_TOKENS"], c["TEMPERATURE"], c["STEPS"]) == (300, 0.9, 50)
    head = source.split('"""', 1)[0]
    assert "Migrated from examples/trl_grpo.py, configs/grpo.yaml (trl, grpo) by mint-migrate" in head
    assert "see MIGRATION.md" in head and "x 40 for LoRA" in head


@pytest.mark.parametrize(
    ("kind", "algorithm", "choices", "expected"),
    [
        ("sft", "sft", {"batch_size": 64, "max_length": 4096}, {"BATCH_SIZE": 64, "MAX_LENGTH": 4096}),
        ("dpo", "dpo", {"beta": 0.3, "batch_size": 16, "max_length": 512}, {"BETA": 0.3, "BATCH_SIZE": 16}),
        ("distill", "distillation", {"batch_size": 5, "group_size": 3, "max_tokens": 64},
         {"BATCH_SIZE": 5, "SAMPLES_PER_PROMPT": 3, "MAX_TOKENS": 64}),
    ],
)  # fmt: skip
def test_render_plan_other_kinds(kind, algorithm, choices, expected):
    plan = plan_for(kind, algorithm, loss_fn="cross_entropy", learning_rate=1e-4, lora_rank=32, **choices)
    c = constants(render_plan(plan))
    for name, value in expected.items():
        assert c[name] == value, name
    assert c["LEARNING_RATE"] == 1e-4 and c["LORA_RANK"] == 32


def test_render_plan_with_unusable_choices_is_a_user_error_not_a_crash():
    plan = plan_for("grpo", "grpo", loss_fn="ppo", learning_rate=1e-5, lora_rank=8, group_size=1)
    with pytest.raises(MintMigrateError, match="group_size >= 2"):
        render_plan(plan)
    plan = plan_for("dpo", "dpo", loss_fn="cross_entropy", learning_rate=-1.0, lora_rank=8)
    with pytest.raises(MintMigrateError, match="learning_rate"):
        render_plan(plan)


def test_render_plan_without_mint_choices_says_what_to_do():
    plan = MigrationPlan(framework="unknown", algorithm="other", inputs=["x.py"])
    with pytest.raises(MintMigrateError, match="Scaffold a kind directly"):
        render_plan(plan)


def test_scaffold_result_is_json_serialisable(tmp_path):
    result = scaffold(ScaffoldOptions(kind="sft"), output_path=None, workspace=tmp_path, overwrite=False)
    assert json.loads(result.model_dump_json())["kind"] == "sft"
