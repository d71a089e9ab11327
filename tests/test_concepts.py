"""Concept maps: every framework loads and validates, lookups find what people type, errors help."""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from mint_migrate import concepts
from mint_migrate.concepts import ConceptTable, frameworks, map_concept, resolve_framework
from mint_migrate.errors import UnknownName
from mint_migrate.frameworks import FRAMEWORK_NAMES

ROOT = Path(__file__).resolve().parent.parent
CONCEPT_FILES = sorted((ROOT / "mint_migrate" / "concepts").glob("*.yaml"))
CLI = str(Path(sys.executable).parent / "mint-migrate")
FRAMEWORKS = sorted(FRAMEWORK_NAMES)  # every registered framework has a concept map


def test_all_six_frameworks_have_a_map():
    assert frameworks() == FRAMEWORKS
    assert sorted(p.stem for p in CONCEPT_FILES) == FRAMEWORKS


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_each_map_is_complete(framework):
    table = map_concept(framework)
    assert isinstance(table, ConceptTable) and table.framework == framework
    assert 10 <= len(table.concepts) <= 25, f"{framework}: {len(table.concepts)} concepts"
    ids = [c.id for c in table.concepts]
    assert len(ids) == len(set(ids))
    for c in table.concepts:
        assert re.fullmatch(r"[a-z0-9_]+", c.id), c.id
        for field in (c.source, c.mint, c.explanation, c.before, c.after):
            assert field.strip(), f"{framework}.{c.id} has an empty field"
        assert c.pitfalls and all(p.strip() for p in c.pitfalls), f"{framework}.{c.id} has no pitfalls"
        ast.parse(c.after)  # the MinT side is real Python (its SDK use is checked in test_docs_sdk_usage)
        assert len(c.after.splitlines()) <= 30, f"{framework}.{c.id}: keep the after example short"


def test_the_data_files_validate_against_the_schema():
    for path in CONCEPT_FILES:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        concepts._FrameworkFile.model_validate(data)


def test_an_alias_naming_two_concepts_is_refused():
    data = yaml.safe_load((ROOT / "mint_migrate" / "concepts" / "verl.yaml").read_text(encoding="utf-8"))
    data["concepts"][1]["aliases"].append(data["concepts"][0]["aliases"][0])
    with pytest.raises(ValidationError, match="names both"):
        concepts._FrameworkFile.model_validate(data)


# What people type that is NOT written in the YAML (every declared id, source and alias is checked
# by test_every_id_source_and_alias_finds_its_own_concept): each case exercises a lookup rule.
LOOKUPS = [
    # (framework, what a user types, expected concept id)
    ("trl", "grpoconfig", "grpo_config"),  # case and separators do not matter
    ("trl", "GRPO_Config", "grpo_config"),
    ("trl", "grpo-config", "grpo_config"),
    ("openrlhf", "--PRETRAIN", "pretrain"),
    ("openrlhf", "--n-samples-per-prompt", "n_samples_per_prompt"),
    ("verl", "ACTOR_ROLLOUT_REF.ROLLOUT.N", "rollout_n"),
    ("verl", "actor_rollout_ref.rollout.n=5", "rollout_n"),  # a hydra override with its value
    ("verl", "++actor_rollout_ref.rollout.n=8", "rollout_n"),  # ... with + / ++ prefixes
    ("verl", "+actor_rollout_ref.actor.optim.lr=1e-6", "actor_lr"),
    ("verl", "rollout.n=16", "rollout_n"),  # a trailing part of a dotted key, with a value
    ("torchforge", "policy.sampling_params.n=4", "sampling_keys"),
    ("verl", "algorithm.adv_estimator=grpo", "adv_estimator"),  # an undeclared value: the key itself
    ("verl", "algorithm.adv_estimator=GAE", "critic_gae"),  # a declared value that means another concept
    ("trl", "transformers.AutoModelForCausalLM", "auto_model"),  # a module-qualified name
    ("pytorch", "nn.utils.clip_grad_norm_", "grad_clipping"),
    ("torchforge", "Generator", "generator"),  # a part of a concept's source
    ("torchforge", "TitanTrainer", "trainer"),
    ("verl", "actor_rollout_ref.actor.strategy=fsdp2", "workers"),  # a declared value of a declared key
    ("verl", "algorithm.filter_groups.enable=True", "dapo_recipe"),
]

# Declared names whose owner is pinned (issue 10: the SFT app is not the GRPO loop, ReinforceLoss
# keeps its clamp, newer loss classes, verl's workers, dapo/sapo): moving one of these aliases to
# another concept changes what a migration says, so the owner is written down here as well.
PINNED = [
    ("torchforge", "SimpleGRPOLoss", "simple_grpo_loss"),
    ("torchforge", "apps.sft.main", "sft_app"),
    ("torchforge", "ForgeSFTRecipe", "sft_app"),
    ("torchforge", "apps.grpo.main", "grpo_app"),
    ("torchforge", "ReinforceLoss", "reinforce_loss"),
    ("torchforge", "DAPOLoss", "policy_loss_variants"),
    ("torchforge", "GSPOLoss", "policy_loss_variants"),
    ("torchforge", "SAPOLoss", "policy_loss_variants"),
    ("torchforge", "CISPOLoss", "policy_loss_variants"),
    ("torchforge", "dapo", "policy_loss_variants"),
    ("torchforge", "entropy_coef", "entropy"),
    ("verl", "PPOTrainer", "ppo_trainer_entrypoint"),
    ("verl", "fsdp", "workers"),
    ("verl", "megatron", "workers"),
    ("verl", "entropy_coef", "policy_loss"),
    ("verl", "sapo", "policy_loss"),
    ("verl", "dapo", "dapo_recipe"),
    ("verl", "reward_model.overlong_buffer.len", "dapo_recipe"),
    ("trl", "dapo", "grpo_config"),
    ("trl", "sapo", "grpo_config"),
    ("openrlhf", "entropy_coef", "clipping"),
]


def test_lookups_are_not_declared_names():
    """The lookup cases must test the rules, not repeat the YAML."""
    for framework, name, _ in LOOKUPS:
        declared = {n for c in map_concept(framework).concepts for n in (c.id, c.source, *c.aliases)}
        assert name not in declared, (framework, name)


@pytest.mark.parametrize(("framework", "name", "expected"), LOOKUPS + PINNED)
def test_lookup_by_id_alias_class_key_or_flag(framework, name, expected):
    table = map_concept(framework, name)
    assert [c.id for c in table.concepts] == [expected]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_id_source_and_alias_finds_its_own_concept(framework):
    for c in map_concept(framework).concepts:
        for name in (c.id, c.source, *c.aliases):
            assert map_concept(framework, name).concepts[0].id == c.id, (framework, name)


def test_framework_names_are_forgiving():
    assert resolve_framework("TRL") == "trl"
    assert resolve_framework("forge") == "torchforge"
    assert resolve_framework("Open-RLHF") == "openrlhf"
    assert resolve_framework("transformers") == "pytorch"
    assert resolve_framework("tinker-cookbook") == "tinker"


def test_unknown_framework_lists_the_known_ones_and_the_closest():
    with pytest.raises(UnknownName) as err:
        map_concept("verll")
    message = str(err.value)
    assert "Unknown framework 'verll'" in message
    for fw in FRAMEWORKS:
        assert fw in message
    assert "Closest match: 'verl'" in message


def test_unknown_concept_lists_the_known_ones_and_the_closest():
    with pytest.raises(UnknownName) as err:
        map_concept("openrlhf", "--pretrian")
    message = str(err.value)
    assert "Unknown openrlhf concept '--pretrian'" in message
    assert "Known concepts:" in message and "pretrain" in message and "learning_rate" in message
    assert "Closest match: '--pretrain'" in message

    with pytest.raises(UnknownName, match="Closest match: 'GRPOConfig'"):
        map_concept("trl", "GRPOConfg")


def test_the_whole_table_is_returned_without_a_concept():
    full = map_concept("verl")
    assert map_concept("verl", None) == full == map_concept("verl", "  ")
    assert len(full.concepts) == len(yaml.safe_load((ROOT / "mint_migrate/concepts/verl.yaml").read_text())["concepts"])


def run_cli(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120)


def test_cli_map_json_prints_the_full_table():
    done = run_cli("map", "verl", "--json")
    assert done.returncode == 0, done.stderr
    table = json.loads(done.stdout)
    assert table == json.loads(map_concept("verl").model_dump_json())
    assert {"rollout_n", "dataproto", "adv_estimator", "reward_manager", "workers"} <= {c["id"] for c in table["concepts"]}


def test_cli_map_finds_a_dashed_flag_after_double_dash():
    done = run_cli("map", "--json", "openrlhf", "--", "--model.model_name_or_path")
    assert done.returncode == 0, done.stderr
    [concept] = json.loads(done.stdout)["concepts"]
    assert concept["id"] == "pretrain" and "--pretrain" in concept["before"]


def test_cli_unknown_concept_exits_2_with_the_closest_match():
    done = run_cli("map", "trl", "GRPOConfg", "--json")
    assert done.returncode == 2
    assert "Closest match: 'GRPOConfig'" in json.loads(done.stdout)["error"]


def _cheatsheet_table(heading: str) -> list[list[str]]:
    text = (ROOT / "mint_api_cheatsheet.md").read_text(encoding="utf-8")
    section = text.split(f"### {heading}", 1)[1].split("\n### ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|") and not line.startswith("|---")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[1:]]


@pytest.mark.parametrize(
    ("heading", "framework", "columns"),
    [
        ("verl", "verl", 1),
        ("TRL", "trl", 1),
        ("OpenRLHF", "openrlhf", 2),  # both flag styles
        ("torchforge", "torchforge", 1),
        ("PyTorch", "pytorch", 1),
    ],
)
def test_cheatsheet_migration_tables_agree_with_the_concept_maps(heading, framework, columns):
    rows = _cheatsheet_table(heading)
    assert len(rows) >= 10
    for row in rows:
        for cell in row[:columns]:
            names = re.findall(r"`([^`]+)`", cell)
            assert names, f"{heading}: no name in cell {cell!r}"
            for name in names:
                map_concept(framework, re.sub(r"\s*\(.*\)$", "", name))  # raises UnknownName if unmapped


def test_openrlhf_table_covers_both_flag_styles():
    rows = _cheatsheet_table("OpenRLHF")
    legacy = " ".join(r[0] for r in rows)
    dotted = " ".join(r[1] for r in rows)
    assert "`--pretrain`" in legacy and "`--model.model_name_or_path`" in dotted
    assert "`--actor_learning_rate`" in legacy and "`--actor.adam.lr`" in dotted


def test_torchforge_reinforce_loss_keeps_its_clamp():
    """ReinforceLoss clamps a detached importance weight: cispo with the same bounds, not unclipped IS."""
    [concept] = map_concept("torchforge", "ReinforceLoss").concepts
    assert 'loss_fn="cispo"' in concept.after and '"clip_high_threshold": 10.0' in concept.after
    [variants] = map_concept("torchforge", "DAPOLoss").concepts
    assert 'loss_fn="ppo"' in variants.after
