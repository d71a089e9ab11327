"""The ledger (issue 22) and values the agent confirms (issue 23): every setting the inputs state is
carried, changed with its reason, not carried with its reason, or owned by the service; train.py
trains with the source's optimizer, schedule and prompt; a confirmed value is checked against the
line it cites.

The fixtures under tests/fixtures/ledger are written by us in each framework's real shape.
"""

import re
from pathlib import Path

import pytest

from mint_migrate.analyze import analyze
from mint_migrate.analyze.harvest import harvest
from mint_migrate.analyze.inputs import load_project
from mint_migrate.analyze.synonyms import meaning
from mint_migrate.errors import MintMigrateError
from mint_migrate.migrate import migrate
from tests.test_render import constants

FIXTURES = Path(__file__).parent / "fixtures" / "ledger"
EASYR1 = (FIXTURES / "easyr1_yaml_dotlist" / "qwen3_4b_math_grpo.sh", [FIXTURES / "easyr1_yaml_dotlist" / "config.yaml"])
PYTORCH_GRPO = (FIXTURES / "pytorch_grpo_constants" / "grpo_loop.py", [])
TRL_GRPO = (FIXTURES / "trl_grpo_optimizer" / "grpo_math.py", [])
VERL_KL = (FIXTURES / "verl_kl_val" / "run_grpo.sh", [])
ALL = {"easyr1": EASYR1, "pytorch_grpo": PYTORCH_GRPO, "trl_grpo": TRL_GRPO, "verl_kl": VERL_KL}


def run(case, tmp_path, confirmed=None):
    source, configs = case
    return migrate(source, configs, output_dir=None, workspace=tmp_path, overwrite=False, confirmed=confirmed)


def section(report: str, title: str) -> str:
    return report.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def items(plan, key):
    return [i for i in plan.ledger if i.key == key]


# --- the harvest and the synonym table ----------------------------------------------------------------


def test_the_harvest_reads_settings_by_what_they_are():
    project = load_project(*PYTORCH_GRPO)
    found = {s.key: s for s in harvest(project)}
    assert found["learning_rate"].value == 1e-06 and found["learning_rate"].kind == "argparse"
    assert found["KL_COEFFICIENT"].value == 0.04 and str(found["KL_COEFFICIENT"].loc) == "grpo_loop.py:14"
    assert found["GENERATIONS_PER_SAMPLE"].value == 4
    assert found["max_norm"].value == 1.0  # clip_grad_norm_(params, 1.0): a positional setting
    # `AdamW(..., weight_decay=WEIGHT_DECAY)`: the constant and the keyword that passes it are both
    # statements, cited at the one literal
    assert found["WEIGHT_DECAY"].value == found["weight_decay"].value == 0.1
    assert str(found["weight_decay"].loc) == str(found["WEIGHT_DECAY"].loc)
    assert "format_reward" not in found  # functions are not settings


def test_the_harvest_follows_names_config_lookups_and_a_loops_own_functions():
    """A hand-written loop (our fixture, GRPO-Zero's shape): settings read from its own YAML through
    subscripts, computed from each other, handed to its own sampler and loss by name."""
    loop = FIXTURES / "pytorch_yaml_loop"
    project = load_project(loop / "train.py", [loop / "config.yaml", loop / "rollout.py"])
    found = {(s.key, s.owner): s for s in harvest(project)}
    answers = found[("ANSWERS_PER_PROMPT", "")]  # BATCH_SIZE // PROMPTS_PER_BATCH, both from the YAML
    assert answers.value == 8 and str(answers.loc) == "train.py:22"
    assert str(found[("BATCH_SIZE", "")].loc) == "config.yaml:12"  # cited at the literal it reads
    sampled = found[("samples_per_prompt", "sample_groups")]  # the training call, not evaluate()'s 1
    assert sampled.value == 8 and str(sampled.loc) == "train.py:22"
    assert found[("temperature", "sample_groups")].value == 1.0
    assert found[("rollout_workers", "cfg")].value == 2  # cfg.get("rollout_workers", 2)
    assert found[("clip_eps", "grpo_loss")].value == 0.2 and found[("kl_beta", "grpo_loss")].value == 0.04
    truncation = found[("max_length", "tokenizer")]
    assert truncation.value == 1024 and truncation.incidental  # a ledger item, never a setting by the synonyms
    plan = analyze(loop / "train.py", [loop / "config.yaml", loop / "rollout.py"])
    assert plan.settings.num_generations.value == 8 and plan.settings.num_generations.source == "train.py:22"
    assert plan.settings.kl_coef.value == 0.04 and plan.settings.clip_ratio.value == 0.2
    assert plan.settings.per_device_batch_size.value == 4  # a micro batch is one thing wherever it is written
    assert plan.settings.dataset.value == "acme/countdown-prompts"  # data.path
    assert plan.settings.max_prompt_length is None  # `max_prompt_len` is in the YAML, but nothing reads it
    (unread,) = items(plan, "train.max_prompt_len")
    assert unread.disposition == "not_carried" and "never reads this key" in unread.reason


def test_the_loss_a_training_step_is_given_is_stated(tmp_path):
    loop = tmp_path / "rl_loop.py"
    loop.write_text(
        "import tinker\n"
        "client = tinker.ServiceClient().create_lora_training_client(base_model='Qwen/Qwen3-8B', rank=32)\n"
        "for batch in batches:\n"
        "    client.forward_backward(batch, loss_fn='importance_sampling')\n"  # 4
        "    client.optim_step(tinker.AdamParams(learning_rate=4e-5))\n"
    )
    found = {(s.key, s.owner): s for s in harvest(load_project(loop, []))}
    loss = found[("loss_fn", "forward_backward")]
    assert (loss.value, str(loss.loc), loss.incidental) == ("importance_sampling", "rl_loop.py:4", True)


def test_the_entry_points_literal_locals_are_stated_its_counters_are_not(tmp_path):
    (tmp_path / "train.py").write_text(
        "import torch\n\n\n"
        "def main():\n"
        "    question_suffix = ' Put the final answer in <answer></answer>.'\n"
        "    rollouts_per_step = 32\n"
        "    step = 0\n"
        "    seen = 1\n"
        "    model = torch.nn.Linear(2, 2)\n"
        "    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)\n"
        "    while step < rollouts_per_step:\n"
        "        model(torch.zeros(2)).sum().backward()\n"
        "        optimizer.step()\n"
        "        step += seen\n"
    )
    found = {s.key: s for s in harvest(load_project(tmp_path / "train.py", []))}
    assert found["question_suffix"].value == " Put the final answer in <answer></answer>."
    assert found["rollouts_per_step"].value == 32 and str(found["rollouts_per_step"].loc) == "train.py:6"
    assert "step" not in found and "seen" not in found


@pytest.mark.parametrize(("key", "owner", "concept", "family"), [
    ("actor_rollout_ref.actor.optim.weight_decay", "", "optimizer.weight_decay", "optimizer"),
    ("critic.optim.lr", "", "learning_rate", "other_model"),
    ("NUM_ANSWERS_PER_QUESTION", "", "num_generations", "setting"),
    ("responses_per_problem", "", "num_generations", "setting"),
    ("data.path", "", "dataset", "setting"),
    ("critic_learning_rate", "", "learning_rate", "other_model"),
    ("--adam-beta2", "", "optimizer.beta2", "optimizer"),
    ("KL_COEFFICIENT", "", "kl_coef", "setting"),
    ("worker.rollout.n", "", "num_generations", "setting"),
    ("trainer.n_gpus_per_node", "", "server", "server"),
    ("NCCL_IB_HCA", "", "server", "server"),
    ("worker.actor.model.lora.rank", "", "lora.rank", "setting"),
    ("rank", "LoraConfig", "lora.rank", "setting"),
    # a length limit or a batch under the other names real scripts give them
    ("sampling_config.model_prompt_length", "", "max_prompt_length", "setting"),
    ("max_output_length", "", "max_response_length", "setting"),
    ("output_max_length", "", "max_response_length", "setting"),
    ("max_generate_length", "", "max_response_length", "setting"),
    ("--accum-steps", "", "gradient_accumulation_steps", "setting"),
    ("--micro_batch", "", "per_device_batch_size", "setting"),
    ("batch_size_per_gpu", "", "per_device_batch_size", "setting"),
    ("block_size", "", "max_seq_length", "setting"),
])

def test_the_synonym_table(key, owner, concept, family):
    m = meaning(key, owner)
    assert m is not None and (m.concept, m.family) == (concept, family)


@pytest.mark.parametrize("key", ["min_prompt_length", "eval_prompt_length", "output_length", "generation_len_penalty"])
def test_names_near_a_length_limit_that_are_not_one(key):
    m = meaning(key)
    assert m is None or m.concept not in ("max_prompt_length", "max_response_length")


def test_generic_names_are_not_settings_without_their_context():
    assert meaning("rank") is None  # a bare rank is a LoRA rank only in a LoRA config
    assert meaning("eps", "LayerNorm") is None


# --- the ledger ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(ALL))
def test_every_stated_setting_is_in_the_ledger_with_its_fate(name, tmp_path):
    result = run(ALL[name], tmp_path)
    plan = result.plan
    project = load_project(*ALL[name])
    keys = {i.key for i in plan.ledger}
    for stated in harvest(project):
        assert stated.key in keys, stated
    cannot_move = section(result.report, "What cannot move as-is")
    for item in plan.ledger:
        assert item.source and item.disposition
        if item.disposition == "not_carried":
            assert item.reason and f"**{item.key}**" in cannot_move
        if item.disposition == "changed":
            assert item.reason and item.constant
    assert "Not stated in the inputs" not in result.report  # "not found", never "not stated"


def test_train_py_trains_with_the_sources_optimizer_and_schedule(tmp_path):
    result = run(TRL_GRPO, tmp_path)
    values = constants(result.train_py)
    # stated: adam_beta2, weight_decay, max_grad_norm; TRL's own defaults for the rest, never MinT's
    assert values["OPTIMIZER"] == {"beta1": 0.9, "beta2": 0.99, "eps": 1e-8, "weight_decay": 0.1,
                                   "grad_clip_norm": 0.2}
    assert "types.AdamParams(learning_rate=args.learning_rate, **OPTIMIZER)" in result.train_py
    assert values["LR_SCHEDULE"]["type"] == "cosine" and values["LR_SCHEDULE"]["warmup_ratio"] == 0.1
    assert values["SAVE_EVERY"] == 50
    plan = result.plan
    (beta2,) = items(plan, "adam_beta2")
    assert (beta2.disposition, beta2.constant, beta2.source) == ("carried", "OPTIMIZER.beta2", "grpo_math.py:16")
    (eps,) = items(plan, "eps")
    assert eps.framework_default and eps.source == "trl default: TrainingArguments.adam_epsilon"
    assert items(plan, "lr_scheduler_type")[0].disposition == "carried"
    assert values["SEED"] == 7 and items(plan, "seed")[0].disposition == "carried"
    assert "| eps *default* |" in section(result.report, "Ledger: every setting the inputs state")


def test_framework_and_optimizer_defaults_replace_mints(tmp_path):
    verl = constants(run(VERL_KL, tmp_path).train_py)["OPTIMIZER"]
    assert verl == {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01, "grad_clip_norm": 1.0}
    torch_loop = constants(run(PYTORCH_GRPO, tmp_path).train_py)["OPTIMIZER"]
    # torch.optim.AdamW's betas, WEIGHT_DECAY and clip_grad_norm_(..., 1.0) as the loop states them
    assert torch_loop == {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.1, "grad_clip_norm": 1.0}


def test_kl_and_validation_are_said_not_dropped(tmp_path):
    result = run(VERL_KL, tmp_path)
    plan = result.plan
    (kl,) = items(plan, "actor_rollout_ref.actor.kl_loss_coef")
    assert kl.setting == "kl_coef" and kl.disposition == "not_carried" and "KL" in kl.reason
    (val,) = items(plan, "data.val_files")
    assert val.disposition == "not_carried" and "sampling client" in val.reason
    assert items(plan, "trainer.n_gpus_per_node")[0].disposition == "server_side"
    cannot_move = section(result.report, "What cannot move as-is")
    assert "**data.val_files**" in cannot_move and "**actor_rollout_ref.actor.kl_loss_coef**" in cannot_move
    # a zero KL (TRL GRPO's beta=0.0) is carried: train.py has no KL term either
    trl = run(TRL_GRPO, tmp_path).plan
    (beta,) = items(trl, "beta")
    assert (beta.setting, beta.value, beta.disposition) == ("kl_coef", 0.0, "carried")


def test_a_verl_fork_keeps_its_model_rank_group_and_kl(tmp_path):
    result = run(EASYR1, tmp_path)
    plan, values = result.plan, constants(result.train_py)
    assert values["BASE_MODEL"] == "Qwen/Qwen3-4B"  # named by the launcher: never replaced by a default
    assert values["LORA_RANK"] == 64 and values["GROUP_SIZE"] == 5
    assert values["LEARNING_RATE"] == 1e-5  # the source already trains LoRA: its rate carries
    assert values["DATA"]["fields"] == {"prompt": "problem", "answer": "answer"}
    assert plan.settings.kl_coef.value == 0.01 and plan.settings.kl_coef.source == "config.yaml:19"
    assert values["OPTIMIZER"]["weight_decay"] == 0.01 and values["OPTIMIZER"]["grad_clip_norm"] == 1.0
    assert items(plan, "worker.actor.optim.lr")[0].source == "qwen3_4b_math_grpo.sh:11"  # the override wins
    assert items(plan, "worker.rollout.tensor_parallel_size")[0].disposition == "server_side"


def test_a_plain_grpo_loop_is_read_from_its_constants(tmp_path):
    plan = run(PYTORCH_GRPO, tmp_path).plan
    assert plan.algorithm == "grpo"  # rewards normalised per group of GENERATIONS_PER_SAMPLE
    got = {k: getattr(plan.settings, k).value for k in ("learning_rate", "kl_coef", "num_generations", "temperature",
                                                         "max_response_length")}
    assert got == {"learning_rate": 1e-6, "kl_coef": 0.04, "num_generations": 4, "temperature": 0.9,
                   "max_response_length": 256}


def test_what_is_not_found_comes_with_the_lines_that_may_hold_it(tmp_path):
    result = run(EASYR1, tmp_path)
    candidates = result.plan.unmapped["global_batch_size"]
    assert any(line.startswith("config.yaml:10: prompts_per_step: 512") for line in candidates)
    not_found = result.report.split("### Not found in the inputs", 1)[1].split("\n#", 1)[0]
    assert "**global_batch_size**" in not_found and "prompts_per_step: 512" in not_found


# --- values the agent confirms -------------------------------------------------------------------------


def test_the_agent_completes_a_verl_fork_with_cited_values(tmp_path):
    result = run(EASYR1, tmp_path, confirmed=["global_batch_size=512@config.yaml:10",
                                              "per_device_batch_size=4@config.yaml:24"])
    plan = result.plan
    assert plan.settings.global_batch_size.value == 512 and plan.settings.global_batch_size.source == "config.yaml:10"
    assert "global_batch_size" not in plan.unmapped and "per_device_batch_size" not in plan.unmapped
    assert constants(result.train_py)["GROUPS_PER_BATCH"] == 512
    assert plan.settings.global_batch_size.confirmed_by == "agent" and plan.settings.learning_rate.confirmed_by is None
    assert "confirmed_by" not in plan.settings.learning_rate.model_dump()  # the {"value", "source"} shape holds
    (item,) = [i for i in plan.ledger if i.setting == "global_batch_size" and i.source == "config.yaml:10"]
    assert item.confirmed_by == "agent"
    assert re.search(r"\| data\.prompts_per_step \*agent\* \| `512` \| config\.yaml:10 \|", result.report)


def test_the_agent_names_a_loops_reward_functions(tmp_path):
    result = run(PYTORCH_GRPO, tmp_path, confirmed=["reward_functions=format_reward,correctness_reward@grpo_loop.py:44"])
    plan = result.plan
    assert plan.settings.reward_functions.value == ["format_reward", "correctness_reward"]
    assert "reward_functions" not in plan.unmapped
    assert any(i.setting == "reward_functions" and i.confirmed_by == "agent" for i in plan.ledger)


def test_the_agent_corrects_a_value_the_analysis_read(tmp_path):
    # the config states 1e-6; the launcher's override 1e-5 is what runs: the agent cites the override
    result = run(EASYR1, tmp_path, confirmed=["learning_rate=1e-5@qwen3_4b_math_grpo.sh:11"])
    assert result.plan.settings.learning_rate.value == 1e-5


@pytest.mark.parametrize(("given", "message"), [
    ("learning_rate=3e-4@grpo_loop.py:13", "grpo_loop.py:13 reads `GENERATIONS_PER_SAMPLE = 4`"),
    ("learning_rate=1e-6@grpo_loop.py:999", "has 60 lines, not 999"),
    ("learning_rate=1e-6@other.py:3", "other.py is not one of the inputs"),
    ("warmup=3@grpo_loop.py:3", "warmup is not a setting mint-migrate plans"),
    ("learning_rate 1e-6", "expected KEY=VALUE@FILE:LINE"),
])
def test_a_wrong_citation_is_refused_with_the_lines_content(given, message, tmp_path):
    with pytest.raises(MintMigrateError, match=re.escape(message)):
        run(PYTORCH_GRPO, tmp_path, confirmed=[given])


def test_a_number_is_found_in_any_spelling_and_never_in_a_comment():
    from mint_migrate.analyze.confirm import holds

    assert holds("    lr: 1.0e-6", 1e-6) and holds("LR = 0.000001", 1e-6) and not holds("LR = 1e-5", 1e-6)
    assert holds("  use_kl_loss: true", True) and holds("--bf16 True", True)
    assert not holds("x = 2  # 1e-6", 1e-6)
    assert holds('SYSTEM = "answer # briefly"', "answer # briefly")


# --- the rows the source trains on ----------------------------------------------------------------------

GSPO = (FIXTURES / "trl_gspo_conversation" / "gspo.py", [])


def test_rows_built_by_a_map_function_reach_the_data_step(tmp_path):
    import json
    import subprocess
    import sys

    out = tmp_path / "out"
    result = migrate(GSPO[0], [], output_dir=str(out), workspace=tmp_path, overwrite=False)
    data = result.plan.data
    assert data.fields == {"prompt": "problem"} and data.chat_template is True
    assert data.system_prompt.startswith("A conversation between user and assistant.")
    assert items(result.plan, "SYSTEM_PROMPT")[0].disposition == "carried"
    source = tmp_path / "numina.jsonl"
    source.write_text(json.dumps({"problem": "What is 2 + 2?", "solution": "4"}) + "\n")
    done = subprocess.run([sys.executable, str(out / "prepare_data.py"), "--source", str(source)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    row = json.loads((out / "train.jsonl").read_text().splitlines()[0])
    assert row["prompt"] == [{"role": "system", "content": data.system_prompt},
                             {"role": "user", "content": "What is 2 + 2?"}]
    assert row["solution"] == "4"  # the reward's own columns stay in the row
    # rows train.py would reject stop the data step, with what to map (they used to pass with exit 0)
    source.write_text(json.dumps({"question": "What is 2 + 2?"}) + "\n")
    done = subprocess.run([sys.executable, str(out / "prepare_data.py"), "--source", str(source),
                           "--out", str(tmp_path / "bad.jsonl")], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and not (tmp_path / "bad.jsonl").exists()
    assert "row 1 has no prompt for train.py (its columns: question)" in done.stderr and 'DATA["fields"]' in done.stderr


def test_hydra_entries_the_reader_cannot_resolve_are_reported(tmp_path):
    (tmp_path / "conf" / "model").mkdir(parents=True)
    (tmp_path / "conf" / "config.yaml").write_text(
        "defaults:\n  - model: llama\n  - /cluster: slurm\n  - optim: ${oc.env:OPTIM}\n  - base_run\n  - _self_\n"
        "lr: 1e-5\n")
    (tmp_path / "conf" / "model" / "llama.yaml").write_text("# @package _global_\nname_or_path: meta-llama/Llama-3.2-1B\n")
    (tmp_path / "train.py").write_text(
        "import hydra\nimport torch\n\n\n@hydra.main(config_path='conf', config_name='config')\n"
        "def main(cfg):\n    opt = torch.optim.AdamW([], lr=cfg.lr)\n    loss.backward()\n\n\nmain()\n")
    plan = analyze(tmp_path / "train.py", [])
    said = {w.message.split(":")[0]: w for w in plan.warnings if w.code == "HYDRA_UNRESOLVED"}
    assert set(said) == {"defaults entry `/cluster", "defaults entry `optim", "defaults entry `base_run`",
                         "a `# @package` directive"}, [w.message for w in plan.warnings]
    assert said["defaults entry `base_run`"].source == "conf/config.yaml:1"
    assert "no base_run.yaml beside the config" in said["defaults entry `base_run`"].message


# --- the agent's loop through the real front ends ----------------------------------------------------------


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_an_agent_confirms_missing_values_through_mcp(tmp_path):
    """Through a real MCP client: the summary lists what was not found with candidate lines; the agent
    cites lines for three shapes (a verl fork's batch, a loop's rewards, a verl fork's per-device batch),
    the plan is complete for them; a wrong citation is refused with the line's content."""
    import shutil

    from mcp import Client

    from mint_migrate.server import create_server

    shutil.copytree(FIXTURES, tmp_path / "src")
    async with Client(create_server(tmp_path), raise_exceptions=True) as client:
        easyr1 = {"source_path": "src/easyr1_yaml_dotlist/qwen3_4b_math_grpo.sh",
                  "config_paths": ["src/easyr1_yaml_dotlist/config.yaml"]}
        first = (await client.call_tool("migrate_script", easyr1)).structured_content
        assert "global_batch_size" in first["plan"]["not_found"]
        assert any("prompts_per_step: 512" in line for line in first["unmapped"]["global_batch_size"])
        assert first["ledger"]["counts"]["server_side"] >= 3
        again = (await client.call_tool("migrate_script", {
            **easyr1, "confirmed": ["global_batch_size=512@config.yaml:10", "per_device_batch_size=4@config.yaml:24"],
        })).structured_content
        assert "global_batch_size" not in again["plan"]["not_found"]
        assert again["plan"]["settings"]["global_batch_size"] == "512 (config.yaml:10)"
        loop = (await client.call_tool("migrate_script", {
            "source_path": "src/pytorch_grpo_constants/grpo_loop.py",
            "confirmed": ["reward_functions=format_reward,correctness_reward@grpo_loop.py:44"],
        })).structured_content
        assert "reward_functions" not in loop["plan"]["not_found"]
        wrong = await client.call_tool("migrate_script", {
            "source_path": "src/pytorch_grpo_constants/grpo_loop.py",
            "confirmed": ["learning_rate=3e-4@grpo_loop.py:13"],
        })
        text = "".join(getattr(block, "text", "") for block in wrong.content)
        assert wrong.is_error and "grpo_loop.py:13 reads `GENERATIONS_PER_SAMPLE = 4`" in text


def test_the_cli_takes_cited_settings_and_refuses_a_wrong_one(tmp_path):
    import json
    import subprocess
    import sys

    cli = str(Path(sys.executable).parent / "mint-migrate")
    source, (config,) = EASYR1
    done = subprocess.run([cli, "migrate", str(source), "--config", str(config), "--json",
                           "--set", "global_batch_size=512@config.yaml:10"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)["plan"]
    assert plan["settings"]["global_batch_size"] == {"value": 512, "source": "config.yaml:10", "confirmed_by": "agent"}
    assert "global_batch_size" not in plan["unmapped"]
    bad = subprocess.run([cli, "migrate", str(source), "--config", str(config), "--json",
                          "--set", "global_batch_size=256@config.yaml:10"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "config.yaml:10 reads `prompts_per_step: 512" in bad.stdout + bad.stderr
    # a person at a shell reads the ledger's counts and what to look for
    text = subprocess.run([cli, "migrate", str(source), "--config", str(config)], capture_output=True, text=True,
                          timeout=120).stdout
    assert re.search(r"^ledger: \d+ settings the inputs state: \d+ carried, \d+ changed, \d+ not carried, "
                     r"\d+ server side", text, re.M), text
    assert "not found, with lines to read (MIGRATION.md): global_batch_size" in text


def test_the_environment_a_launcher_gives_a_cluster_and_a_script_sets_itself_is_in_the_ledger(tmp_path):
    # `env VAR=... ray start` (a command that trains nothing) and `os.environ["VAR"] = "..."` are stated settings
    launcher = tmp_path / "run.sh"
    launcher.write_text("env VLLM_ATTENTION_BACKEND=XFORMERS HYDRA_FULL_ERROR=1 ray start --head\n"
                        "python3 -m verl.trainer.main_ppo data.train_files=train.parquet\n")
    plan = analyze(launcher, [])
    [backend] = items(plan, "VLLM_ATTENTION_BACKEND")
    assert (backend.value, backend.source, backend.disposition) == ("XFORMERS", "run.sh:1", "server_side")
    assert items(plan, "HYDRA_FULL_ERROR")[0].value == 1
    script = tmp_path / "sft.py"
    script.write_text('import os\nos.environ["TOKENIZERS_PARALLELISM"] = "false"\n'
                      "from trl import SFTConfig, SFTTrainer\n"
                      'SFTTrainer(model="org/m", args=SFTConfig(learning_rate=1e-5)).train()\n')
    [tokenizers] = items(analyze(script, []), "TOKENIZERS_PARALLELISM")
    assert (tokenizers.value, tokenizers.source) == (False, "sft.py:2")


def test_data_files_named_for_their_objective_are_the_dataset():
    for key in ("dpo_file", "sft_path", "pairs_jsonl", "preference_files"):
        assert meaning(key) is not None and meaning(key).concept == "dataset", key
    assert meaning("eval_dpo_file") is None or meaning("eval_dpo_file").concept != "dataset"
