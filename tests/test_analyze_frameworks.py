"""Framework and algorithm detection beyond the fixtures: each trainer, estimator and entry point."""

import textwrap
from pathlib import Path

import pytest

from mint_migrate.analyze import analyze


def plan_of(tmp_path: Path, name: str, text: str, *companions: tuple[str, str]):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    for cname, ctext in companions:
        (tmp_path / cname).write_text(textwrap.dedent(ctext).lstrip("\n"))
    return analyze(path, [tmp_path / c for c, _ in companions])


def codes(plan) -> set[str]:
    return {w.code for w in plan.warnings}


@pytest.mark.parametrize(
    "imports, trainer, config, algorithm, variant, kind, must_warn",
    [
        (
            "from trl.experimental.ppo import PPOConfig, PPOTrainer",
            "PPOTrainer",
            "PPOConfig",
            "ppo",
            None,
            "grpo",
            {"CRITIC_GAE", "ALGORITHM_MAPPED"},
        ),
        (
            "from trl.experimental.orpo import ORPOConfig, ORPOTrainer",
            "ORPOTrainer",
            "ORPOConfig",
            "orpo",
            None,
            "dpo",
            {"CUSTOM_LOSS", "ALGORITHM_MAPPED"},
        ),
        ("from trl import KTOConfig, KTOTrainer", "KTOTrainer", "KTOConfig", "kto", None, "dpo", {"CUSTOM_LOSS"}),
        (
            "from trl import RLOOConfig, RLOOTrainer",
            "RLOOTrainer",
            "RLOOConfig",
            "reinforce",
            "rloo",
            "grpo",
            {"ALGORITHM_MAPPED"},
        ),
        (
            "from trl.experimental.gkd import GKDConfig, GKDTrainer",
            "GKDTrainer",
            "GKDConfig",
            "distillation",
            None,
            "distill",
            set(),
        ),
        (
            "from trl.experimental.cpo import CPOConfig, CPOTrainer",
            "CPOTrainer",
            "CPOConfig",
            "dpo",
            "cpo",
            "dpo",
            {"CUSTOM_LOSS"},
        ),
        (
            "from trl import RewardConfig, RewardTrainer",
            "RewardTrainer",
            "RewardConfig",
            "reward_model",
            None,
            "dpo",
            {"REWARD_MODEL_TRAINING"},
        ),
    ],
)
def test_trl_trainers(tmp_path, imports, trainer, config, algorithm, variant, kind, must_warn):
    plan = plan_of(
        tmp_path,
        "train.py",
        f"""
        {imports}
        args = {config}(output_dir="o", learning_rate=1e-6, per_device_train_batch_size=2)
        {trainer}(model="Qwen/Qwen3-0.6B", args=args, train_dataset=None)
        """,
    )
    assert (plan.framework, plan.algorithm, plan.variant, plan.mint.kind) == ("trl", algorithm, variant, kind)
    assert must_warn <= codes(plan)
    assert plan.settings.learning_rate.source == "train.py:2"


def test_trl_ppo_keeps_the_clipped_loss(tmp_path):
    plan = plan_of(
        tmp_path,
        "ppo.py",
        """
        from trl.experimental.ppo import PPOConfig, PPOTrainer
        cfg = PPOConfig(learning_rate=3e-6, cliprange=0.2, kl_coef=0.05, num_ppo_epochs=4)
        PPOTrainer(args=cfg, model=None, ref_model=None, reward_model=None, value_model=None, train_dataset=None)
        """,
    )
    assert plan.mint.loss_fn == "ppo"
    assert plan.mint.loss_fn_config == {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}
    assert plan.settings.kl_coef.value == 0.05 and "KL_REFERENCE" in codes(plan)


def test_transformers_trainer_is_a_pytorch_sft(tmp_path):
    plan = plan_of(
        tmp_path,
        "hf.py",
        """
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
        model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.2-1B")
        args = TrainingArguments(output_dir="o", learning_rate=5e-5, num_train_epochs=2)
        Trainer(model=model, args=args).train()
        """,
    )
    assert (plan.framework, plan.algorithm) == ("pytorch", "sft")
    assert plan.settings.base_model.value == "meta-llama/Llama-3.2-1B"
    assert plan.settings.num_epochs.value == 2
    assert plan.mint.learning_rate == pytest.approx(5e-4)  # full fine-tune rate x10 for LoRA


@pytest.mark.parametrize(
    "estimator, algorithm, variant, critic",
    [
        ("grpo", "grpo", None, False),
        ("gae", "ppo", None, True),
        ("rloo", "reinforce", "rloo", False),
        ("reinforce_plus_plus", "reinforce", "reinforce_plus_plus", False),
        ("remax", "reinforce", "remax", False),
        ("grpo_passk", "grpo", "grpo_passk", False),
        ("opo", "grpo", "opo", False),
        ("made_up_estimator", "grpo", "made_up_estimator", False),  # over groups of 4, no critic: GRPO's family
    ],
)
def test_verl_estimators(tmp_path, estimator, algorithm, variant, critic):
    plan = plan_of(
        tmp_path,
        "run.sh",
        f"""
        python3 -m verl.trainer.main_ppo algorithm.adv_estimator={estimator} actor_rollout_ref.rollout.n=4 \\
            actor_rollout_ref.model.path=Qwen/Qwen3-8B
        """,
    )
    assert (plan.framework, plan.algorithm, plan.variant) == ("verl", algorithm, variant)
    assert ("CRITIC_GAE" in codes(plan)) == critic
    assert plan.mint.kind == "grpo"  # an unknown estimator is still RL: the GRPO scaffold


def test_verl_unknown_estimator_without_groups_is_other_and_a_launcher_named_for_grpo_is_grpo(tmp_path):
    plan = plan_of(tmp_path, "run.sh", "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=made_up\n")
    assert (plan.algorithm, plan.variant) == ("other", "made_up")
    plan = plan_of(tmp_path, "train_grpo.sh", """
        python3 -m verl.trainer.main_ppo data.train_batch_size=64 critic.optim.lr=1e-5 \\
            actor_rollout_ref.model.path=Qwen/Qwen3-8B
        """)
    assert plan.algorithm == "grpo" and "CRITIC_GAE" not in codes(plan)  # the fork's own config picks the estimator


def test_verl_without_an_estimator_is_gae_by_default(tmp_path):
    plan = plan_of(tmp_path, "run.sh", "python3 -m verl.trainer.main_ppo data.train_batch_size=64\n")
    assert plan.algorithm == "ppo" and "CRITIC_GAE" in codes(plan)
    assert plan.framework_defaults["num_generations"].source == "verl default: actor_rollout_ref.rollout.n"


def test_verl_gspo_loss_mode_and_sft_yaml(tmp_path):
    plan = plan_of(
        tmp_path,
        "run.sh",
        """
        python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo \\
            actor_rollout_ref.actor.policy_loss.loss_mode=gspo actor_rollout_ref.rollout.n=8
        """,
    )
    assert plan.variant == "gspo" and "GSPO_UNSUPPORTED" in codes(plan)
    assert plan.mint.loss_fn == "importance_sampling"
    sft = plan_of(
        tmp_path,
        "sft.yaml",
        """
        data:
          train_files: data/train.parquet
          max_length: 2048
        model:
          partial_pretrain: Qwen/Qwen2.5-0.5B-Instruct
        optim:
          lr: 1e-5
        """,
    )
    assert (sft.framework, sft.algorithm) == ("verl", "sft")
    assert sft.settings.learning_rate.value == 1e-5 and sft.mint.learning_rate == pytest.approx(1e-4)


@pytest.mark.parametrize(
    "entry, flags, algorithm, warn",
    [
        ("train_sft", "--pretrain m/a --learning_rate 5e-6 --lora_rank 16 --lora_alpha 32", "sft", "LORA_OPTIONS"),
        ("train_kto", "--pretrain m/a --beta 0.1", "kto", "CUSTOM_LOSS"),
        ("train_rm", "--pretrain m/a --max_len 2048", "reward_model", "REWARD_MODEL_TRAINING"),
        ("train_kd", "--pretrain m/a --teacher_model m/big", "distillation", "DISTILL_TEACHER"),
        ("train_ppo_ray", "--pretrain m/a --critic_pretrain m/a", "ppo", "CRITIC_GAE"),
        ("train_ppo_ray", "--actor.model_name_or_path m/a --algo.advantage.estimator dr_grpo", "grpo", "KL_REFERENCE"),
    ],
)
def test_openrlhf_entry_points(tmp_path, entry, flags, algorithm, warn):
    plan = plan_of(tmp_path, "run.sh", f"deepspeed --module openrlhf.cli.{entry} {flags}\n")
    assert (plan.framework, plan.algorithm) == ("openrlhf", algorithm)
    assert warn in codes(plan)
    assert plan.settings.base_model.value == "m/a"


def test_openrlhf_legacy_lora_flags(tmp_path):
    plan = plan_of(tmp_path, "run.sh", "deepspeed --module openrlhf.cli.train_sft --pretrain m/a --lora_rank 16\n")
    assert plan.settings.lora.value.rank == 16 and plan.mint.lora_rank == 16
    # No rate in the inputs: OpenRLHF's SFT default, kept because the source already trains LoRA, but raised
    # to the low end of MinT's LoRA range: 5e-6 is a full fine-tune's range, which the linter flags (MINT023).
    assert plan.settings.learning_rate is None
    assert plan.framework_defaults["learning_rate"].value == 5e-6
    assert plan.mint.learning_rate == 1e-5 and "already trains LoRA" in plan.mint.learning_rate_reason
    assert "MINT023" in plan.mint.learning_rate_reason


def test_tinker_reverse_kl_is_distillation_and_cookbook_modules_vote(tmp_path):
    plan = plan_of(
        tmp_path,
        "distill.py",
        """
        import mint
        import mint.mint as mintx
        sc = mint.ServiceClient()
        tc = sc.create_lora_training_client(base_model="Qwen/Qwen3-4B-Instruct-2507", rank=8)
        mintx.forward_backward_reverse_kl(tc, reference_model_path="tinker://t/sampler_weights/x", data=[])
        """,
    )
    assert (plan.framework, plan.algorithm, plan.mint.kind) == ("tinker", "distillation", "distill")
    assert plan.settings.lora.value.rank == 8


def test_torchforge_python_entry_with_yaml(tmp_path):
    plan = plan_of(
        tmp_path,
        "run.sh",
        "python -m apps.grpo.main --config grpo.yaml\n",
        ("grpo.yaml", "group_size: 4\nmodel: Qwen/Qwen3-1.7B\ntrainer:\n  optimizer:\n    lr: 1e-5\n"),
    )
    assert (plan.framework, plan.algorithm) == ("torchforge", "grpo")
    assert plan.settings.num_generations.value == 4 and plan.settings.num_generations.source == "grpo.yaml:1"


def test_launch_of_a_script_that_was_not_given_reads_its_trl_flags_and_says_so(tmp_path):
    plan = plan_of(
        tmp_path,
        "run.sh",
        """
        accelerate launch --num_processes 8 sft.py \\
            --model_name_or_path Qwen/Qwen3-8B --learning_rate 1e-5 --per_device_train_batch_size 2
        """,
    )
    assert plan.framework == "trl" and "SCRIPT_NOT_GIVEN" in codes(plan)
    assert plan.settings.learning_rate.source == "run.sh:2"
    assert plan.mint.batch_size == 16  # 2 per device x 1 accumulation (TRL default) x 8 processes


FIXTURES = Path(__file__).parent / "fixtures" / "migrate"


def test_a_recipe_as_the_main_input_with_its_script_as_companion_reads_the_same_values():
    case = FIXTURES / "trl" / "recipe_by_position"
    recipe = case / "recipes" / "qwen3" / "sft" / "config_full.yaml"
    plan = analyze(recipe, [case / "scripts" / "run_sft.py"])
    assert (plan.framework, plan.algorithm) == ("trl", "sft")
    assert plan.settings.learning_rate.value == 4e-5 and plan.settings.learning_rate.source == "config_full.yaml:16"
    assert plan.settings.base_model.value == "Qwen/Qwen3-4B-Base"


def test_hydra_group_chosen_on_the_command_line_gives_its_own_values(tmp_path):
    import shutil

    shutil.copytree(FIXTURES / "pytorch" / "hydra_loss_group", tmp_path / "repo")
    (tmp_path / "repo" / "run.sh").write_text("python train.py loss=dpo\n")
    plan = analyze(tmp_path / "repo" / "run.sh", [])
    assert plan.settings.beta.value == 0.5 and plan.settings.beta.source == "config/loss/dpo.yaml:2"
    assert plan.settings.num_epochs.source == "config/config.yaml:16"


def test_a_lora_block_counts_only_when_its_config_switch_is_on(tmp_path):
    """`if cfg.model.use_lora:` around LoraConfig: `use_lora: false` in the group's defaults leaves
    the LoRA values out; the same repo with the switch on the command line reports them."""
    import shutil

    shutil.copytree(FIXTURES / "pytorch" / "hydra_nested_groups_srun", tmp_path / "repo")
    repo = tmp_path / "repo"
    plan = analyze(repo / "scripts" / "launch_pairs.sh", [repo / "train_pairs.py"])
    assert plan.settings.lora is None
    launcher = repo / "scripts" / "launch_pairs.sh"
    launcher.write_text(launcher.read_text().replace("++model.accum_steps=4", "++model.accum_steps=4 ++model.use_lora=true"))
    plan = analyze(launcher, [repo / "train_pairs.py"])
    assert plan.settings.lora is not None and plan.settings.lora.value.rank == 16
    assert plan.settings.lora.source == "../conf/model/common.yaml:9"


def test_bash_c_words_cite_the_line_they_are_written_on():
    """Inside `bash -c "..."` the outer shell joins backslash-newlines; each override still cites its
    own physical line, and `\\$VAR` is expanded by the inner shell from its own `export`."""
    case = FIXTURES / "pytorch" / "hydra_nested_groups_srun"
    plan = analyze(case / "scripts" / "launch_pairs.sh", [case / "train_pairs.py"])
    assert plan.settings.global_batch_size.source == "launch_pairs.sh:23"
    assert plan.settings.dataset.source == "launch_pairs.sh:20"
    assert plan.settings.base_model.value == "acme-lab/pairs-base-7b"


def test_a_policy_gradient_loop_with_its_own_sampler_is_grpo_or_reinforce(tmp_path):
    """No `model.generate`: the loop samples with its own code and updates in a helper module
    (`loss = -(log_probs * advantages)`), with rewards normalised per group (GRPO) or over the whole
    batch (REINFORCE)."""
    per_group = ("    groups = torch.tensor(rewards).view(-1, size)\n"
                 "    return ((groups - groups.mean(1, keepdim=True)) / (groups.std(1, keepdim=True) + 1e-4)).view(-1)\n")
    batch_wide = "    r = torch.tensor(rewards)\n    return (r - r.mean()) / (r.std() + 1e-4)\n"
    (tmp_path / "train.py").write_text(
        "import torch\nfrom algo import update\n\n\n"
        "def main(model, batches, reward_fn):\n"
        "    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)\n"
        "    for batch in batches:\n"
        "        update(model, optimizer, batch, reward_fn, 8)\n"
    )
    for body, algorithm in ((per_group, "grpo"), (batch_wide, "reinforce")):
        (tmp_path / "algo.py").write_text(
            "import torch\n\n\n"
            "def normalize(rewards, size):\n" + body + "\n\n"
            "def update(model, optimizer, batch, reward_fn, size):\n"
            "    advantages = normalize([reward_fn(x) for x in batch.texts], size)\n"
            "    log_probs = model.token_logprobs(batch.ids)\n"
            "    loss = -(log_probs * advantages[:, None]).mean()\n"
            "    loss.backward()\n"
            "    optimizer.step()\n"
        )
        plan = analyze(tmp_path / "train.py", [tmp_path / "algo.py"])
        assert (plan.framework, plan.algorithm) == ("pytorch", algorithm)


def test_a_torchforge_app_with_every_value_in_python_spawn_service_calls(tmp_path):
    """The August 2025 app shape: no YAML; each actor's values are spawn_service's arguments."""
    app = tmp_path / "apps" / "grpo" / "main.py"
    app.parent.mkdir(parents=True)
    app.write_text(
        "from forge.controller.service import ServiceConfig, spawn_service\n"
        "from forge.actors.policy import Policy, PolicyConfig, SamplingOverrides, WorkerConfig\n"
        "from forge.actors.replay_buffer import ReplayBuffer\n"
        "from apps.grpo.actors import ComputeAdvantages, DatasetActor, RewardActor, Trainer\n"
        "from forge.data.rewards import FormatReward, MathReward\n\n\n"
        "async def main():\n"
        "    answers = 6\n"
        "    model = 'org/policy-1b'\n"
        "    policy = await spawn_service(ServiceConfig(procs_per_replica=1), Policy, PolicyConfig(\n"
        "        worker_params=WorkerConfig(model=model),\n"
        "        sampling_params=SamplingOverrides(num_samples=answers, max_tokens=256)))\n"
        "    trainer = await spawn_service(ServiceConfig(procs_per_replica=1), Trainer, learning_rate=3e-6,\n"
        "                                  beta=0.02, model_name=model)\n"
        "    buffer = await spawn_service(ServiceConfig(procs_per_replica=1), ReplayBuffer, batch_size=8)\n"
        "    data = await spawn_service(ServiceConfig(procs_per_replica=1), DatasetActor, 'org/math-word', 'main')\n"
        "    advantages = await spawn_service(ServiceConfig(procs_per_replica=1), ComputeAdvantages)\n"
        "    rewards = await spawn_service(ServiceConfig(procs_per_replica=1), RewardActor,\n"
        "                                  reward_functions=[MathReward(), FormatReward()])\n"
    )
    plan = analyze(app, [])
    assert (plan.framework, plan.algorithm) == ("torchforge", "grpo")
    got = {k: (v.value, v.source) for k, v in plan.settings if v is not None and k != "lora"}
    assert got == {
        "base_model": ("org/policy-1b", "main.py:10"),
        "dataset": ("org/math-word", "main.py:17"),
        "learning_rate": (3e-6, "main.py:14"),
        "per_device_batch_size": (8, "main.py:16"),
        "max_response_length": (256, "main.py:13"),
        "num_generations": (6, "main.py:9"),
        "kl_coef": (0.02, "main.py:15"),
        "reward_functions": (["MathReward", "FormatReward"], "main.py:20"),
    }


def test_a_projects_own_trainer_subclass_in_another_file_is_its_trl_base(tmp_path):
    plan = plan_of(tmp_path, "train.py", """
        from datasets import load_dataset
        from my_trainers import MathTrainer, make_args

        trainer = MathTrainer(model="Qwen/Qwen2.5-0.5B", args=make_args(), train_dataset=load_dataset("acme/math"))
        trainer.train()
        """, ("my_trainers.py", """
        from trl import GRPOTrainer

        class BaseMathTrainer(GRPOTrainer):
            pass

        class MathTrainer(BaseMathTrainer):
            def _compute_rewards(self, batch):
                return super()._compute_rewards(batch)
        """))
    assert plan.framework == "trl" and plan.algorithm == "grpo"
    assert "algorithm grpo: MathTrainer(...) (a GRPOTrainer) at train.py:4" in plan.mint.reasons


def test_a_loop_split_across_files_is_told_by_its_sampler_rewards_and_advantages(tmp_path):
    """train.py holds the optimizer and backward; rollout.py the sampler and the clipped loss."""
    fixture = Path(__file__).parent / "fixtures" / "ledger" / "pytorch_yaml_loop"
    plan = analyze(fixture / "train.py", [fixture / "config.yaml", fixture / "rollout.py"])
    assert plan.algorithm == "grpo"
    # and with the group baseline spelt without the word "group"
    text = (fixture / "train.py").read_text().replace("ANSWERS_PER_PROMPT", "K")
    (tmp_path / "train.py").write_text(text)
    for name in ("config.yaml", "rollout.py"):
        (tmp_path / name).write_text((fixture / name).read_text())
    assert analyze(tmp_path / "train.py", [tmp_path / "config.yaml", tmp_path / "rollout.py"]).algorithm == "grpo"


def test_a_wrapper_package_of_trl_and_experimental_trainers_are_read_by_class_name(tmp_path):
    plan = plan_of(tmp_path, "sft_train.py", """
        from datasets import load_dataset
        from optimum.habana.trl import GaudiSFTConfig, GaudiSFTTrainer

        dataset = load_dataset("acme/chat-sft", split="train")
        args = GaudiSFTConfig(output_dir="out", max_seq_length=512, learning_rate=2e-5, use_habana=True)
        GaudiSFTTrainer(model="Qwen/Qwen2.5-0.5B", args=args, train_dataset=dataset).train()
        """)
    assert (plan.framework, plan.algorithm) == ("trl", "sft")
    assert plan.settings.max_seq_length.value == 512 and plan.settings.dataset.value == "acme/chat-sft"
    plan = plan_of(tmp_path, "distill.py", """
        from trl.experimental.distillation import DistillationConfig, DistillationTrainer

        args = DistillationConfig(output_dir="out", learning_rate=1e-5)
        DistillationTrainer(model="Qwen/Qwen3-0.6B", teacher_model="Qwen/Qwen3-8B", args=args).train()
        """)
    assert plan.algorithm == "distillation"


def test_reward_functions_from_a_factory_or_through_a_helpers_parameter(tmp_path):
    """`reward_funcs = get_reward_funcs(args)` names nothing in the code; a helper's `reward_funcs`
    parameter is what its one caller passes."""
    plan = plan_of(tmp_path, "main.py", """
        from rewards import check_answer, match_format
        from training import train_model

        train_model("Qwen/Qwen2.5-0.5B", reward_funcs=[match_format, check_answer])
        """, ("training.py", """
        from datasets import load_dataset
        from trl import GRPOConfig, GRPOTrainer

        def train_model(model, reward_funcs):
            args = GRPOConfig(output_dir="out", num_generations=4)
            data = load_dataset("acme/math-prompts")
            GRPOTrainer(model=model, reward_funcs=reward_funcs, args=args, train_dataset=data).train()
        """), ("rewards.py", """
        def match_format(completions, **kwargs):
            return [0.0 for _ in completions]

        def check_answer(completions, **kwargs):
            return [0.0 for _ in completions]
        """))
    assert plan.settings.reward_functions.value == ["match_format", "check_answer"]
    assert plan.settings.reward_functions.source == "main.py:4"
    # the trainer's other keywords are still read in the trainer's own file
    assert (plan.settings.dataset.value, plan.settings.dataset.source) == ("acme/math-prompts", "training.py:6")
    plan = plan_of(tmp_path, "grpo.py", """
        from trl import GRPOConfig, GRPOTrainer, TrlParser
        from my_rewards import get_reward_funcs

        def main(script_args, training_args):
            reward_funcs = get_reward_funcs(script_args)
            GRPOTrainer(model="Qwen/Qwen2.5-0.5B", reward_funcs=reward_funcs, args=training_args).train()
        """)
    assert plan.settings.reward_functions is None  # not the factory's name


def test_an_unused_dataclass_an_eval_namespace_and_num_episodes_fill_nothing_wrong(tmp_path):
    plan = plan_of(tmp_path, "sft.py", """
        from dataclasses import dataclass
        from trl import SFTConfig, SFTTrainer

        @dataclass
        class ScriptArguments:
            num_train_epochs: int = 1
            model_name: str = "Qwen/Qwen2.5-0.5B"

        # parser = HfArgumentParser(ScriptArguments)
        args = SFTConfig(output_dir="out", max_steps=200)
        SFTTrainer(model="Qwen/Qwen2.5-0.5B", args=args, train_dataset=None).train()
        """)
    assert plan.settings.num_epochs is None and not any(i.key == "num_train_epochs" for i in plan.ledger)
    plan = plan_of(tmp_path, "run.sh", """
        python3 -m openrlhf.cli.train_ppo_ray \\
           --pretrain Qwen/Qwen2.5-0.5B \\
           --advantage_estimator reinforce_baseline \\
           --n_samples_per_prompt 8 \\
           --train.num_episodes 3 \\
           --eval.temperature 0.6
        """)
    assert plan.settings.num_epochs.value == 3 and plan.settings.temperature is None
    (item,) = [i for i in plan.ledger if i.key == "eval.temperature"]
    assert item.disposition == "not_carried"


def test_lora_rank_in_get_peft_model_and_fstrings_of_bound_names(tmp_path):
    plan = plan_of(tmp_path, "train.py", """
        import torch
        from transformers import AutoModelForCausalLM, TrainingArguments, Trainer
        from peft import get_peft_model

        model_id = "Qwen/Qwen2.5-0.5B"
        model = AutoModelForCausalLM.from_pretrained(model_id)
        model = get_peft_model(model, r=8, lora_alpha=16, lora_dropout=0.0)
        args = TrainingArguments(output_dir=f"{model_id}-sft", learning_rate=1e-4)
        Trainer(model=model, args=args).train()
        """)
    assert (plan.settings.lora.value.rank, plan.settings.lora.value.alpha) == (8, 16)
    (item,) = [i for i in plan.ledger if i.key == "output_dir"]
    assert item.value == "Qwen/Qwen2.5-0.5B-sft" and item.source == "train.py:8"


def test_a_tinker_builders_data_file_is_the_dataset_unless_its_branch_is_off(tmp_path):
    plan = plan_of(tmp_path, "train.py", """
        import chz
        from tinker_cookbook.supervised import train
        from tinker_cookbook.supervised.data import FromConversationFileBuilder

        @chz.chz
        class CLIConfig:
            model_name: str = "Qwen/Qwen3-8B"
            file_path: str = "/data/conversations.jsonl"

        def main(cli_config: CLIConfig):
            builder = FromConversationFileBuilder(file_path=cli_config.file_path)
            if 0:
                builder = FromConversationFileBuilder(file_path="/path/to/your/dataset.jsonl")
            train.main(train.Config(model_name=cli_config.model_name, dataset_builder=builder))
        """)
    assert plan.settings.dataset.value == "/data/conversations.jsonl"
    assert plan.settings.dataset.source == "train.py:8"


def test_a_hydra_dpo_app_whose_trainer_module_reads_the_overridden_config(tmp_path):
    """The original-DPO layout: launcher overrides, `@hydra.main` in train.py, the loop in trainers.py."""
    (tmp_path / "config" / "loss").mkdir(parents=True)
    (tmp_path / "config" / "config.yaml").write_text(
        "defaults:\n  - _self_\n  - loss: dpo\nseed: 0\nbatch_size: 8\nlr: 5e-7\nn_epochs: 1\n")
    (tmp_path / "config" / "loss" / "dpo.yaml").write_text("name: dpo\nbeta: ???\nlabel_smoothing: 0\n")
    (tmp_path / "trainers.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn.functional as F

        class BasicTrainer:
            def __init__(self, policy, config):
                self.policy, self.config = policy, config

            def loss(self, chosen, rejected):
                return -F.logsigmoid(self.config.loss.beta * (chosen - rejected)).mean()

            def train(self):
                optimizer = torch.optim.RMSprop(self.policy.parameters(), lr=self.config.lr)
                for epoch in range(self.config.n_epochs):
                    loss = self.loss(torch.zeros(1), torch.zeros(1))
                    loss.backward()
                    optimizer.step()
        """).lstrip())
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import hydra
        import transformers
        import trainers

        @hydra.main(version_base=None, config_path="config", config_name="config")
        def main(config):
            policy = transformers.AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
            trainers.BasicTrainer(policy, config).train()
        """).lstrip())
    (tmp_path / "run.sh").write_text("VLLM_USE_V1=1 python -u train.py loss=dpo loss.beta=0.1 n_epochs=6\n")
    companions = [tmp_path / n for n in ("train.py", "trainers.py", "config/config.yaml", "config/loss/dpo.yaml")]
    plan = analyze(tmp_path / "run.sh", companions)
    assert plan.algorithm == "dpo"
    assert (plan.settings.num_epochs.value, plan.settings.num_epochs.source) == (6, "run.sh:1")  # not the YAML's 1
    assert (plan.settings.beta.value, plan.settings.beta.source) == (0.1, "run.sh:1")
    ledger = {i.key: i for i in plan.ledger}
    assert "beta" not in ledger and ledger["loss.beta"].value == 0.1  # `???` is no value; the group's package
    assert ledger["VLLM_USE_V1"].value == 1  # an environment prefix is read as JSON, like an export
    assert ledger["n_epochs"].value == 6


@pytest.mark.parametrize(("estimator", "algorithm"), [("drgrpo_token", "grpo"), ("rloo_token_mean", "reinforce"),
                                                      ("my_estimator", "grpo")])  # groups of 4, no critic
def test_a_forks_own_estimator_is_read_by_what_its_name_says(tmp_path, estimator, algorithm):
    plan = plan_of(tmp_path, "run.sh", f"""
        python3 -m verl.trainer.main_ppo algorithm.adv_estimator={estimator} \\
            actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B actor_rollout_ref.rollout.n=4
        """)
    assert plan.algorithm == algorithm


def test_a_tinker_loop_that_trains_sampled_answers_on_advantages_is_policy_gradient(tmp_path):
    """cross_entropy carries the update, but the loop samples, scores and weights by advantages."""
    plan = plan_of(tmp_path, "rl_loop.py", """
        import tinker
        from tinker import types

        GROUP_SIZE = 8

        def main():
            client = tinker.ServiceClient().create_lora_training_client(base_model="Qwen/Qwen3-4B", rank=16)
            sampler = client.save_weights_and_get_sampling_client("s0")
            for prompt, answer in problems():
                result = sampler.sample(prompt, num_samples=GROUP_SIZE,
                                        sampling_params=types.SamplingParams(max_tokens=256)).result()
                rewards = [reward(seq, answer) for seq in result.sequences]
                mean = sum(rewards) / len(rewards)
                advantages = [r - mean for r in rewards]
                data = [datum(prompt, seq, advantage) for seq, advantage in zip(result.sequences, advantages)]
                client.forward_backward(data, loss_fn="cross_entropy").result()
                client.optim_step(types.AdamParams(learning_rate=1e-5)).result()
        """)
    assert plan.framework == "tinker" and plan.algorithm == "grpo"


def test_a_data_file_given_by_a_flag_is_cited_at_the_flag(tmp_path):
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import argparse
        from datasets import load_dataset
        from trl import SFTConfig, SFTTrainer

        parser = argparse.ArgumentParser()
        parser.add_argument("--dataset", default="data/default.jsonl")
        args = parser.parse_args()
        dataset = load_dataset("json", data_files={"data": args.dataset})["data"]
        SFTTrainer(model="Qwen/Qwen2.5-0.5B", args=SFTConfig(output_dir="out"), train_dataset=dataset).train()
        """).lstrip())
    (tmp_path / "run.sh").write_text("python train.py \\\n  --dataset ./data/goals.jsonl\n")
    plan = analyze(tmp_path / "run.sh", [tmp_path / "train.py"])
    assert (plan.settings.dataset.value, plan.settings.dataset.source) == ("./data/goals.jsonl", "run.sh:2")


def test_a_config_beside_the_launcher_named_through_dollar_zero_is_read(tmp_path):
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "sft.yaml").write_text("learning_rate: 3.0e-6\nmodel_name_or_path: Qwen/Qwen2.5-0.5B\n")
    (tmp_path / "sft.py").write_text(
        "from trl import SFTConfig, SFTTrainer, TrlParser\n"
        "(args,) = TrlParser((SFTConfig,)).parse_args_and_config()\n"
        "SFTTrainer(model=args.model_name_or_path, args=args).train()\n")
    (tmp_path / "run.sh").write_text('python $(dirname "$0")/sft.py --config $(dirname "$0")/cfg/sft.yaml\n')
    plan = analyze(tmp_path / "run.sh", [tmp_path / "sft.py"])
    assert (plan.settings.learning_rate.value, plan.settings.learning_rate.source) == (3e-6, "cfg/sft.yaml:1")
    assert plan.settings.base_model.value == "Qwen/Qwen2.5-0.5B"


def test_a_reward_file_only_the_machine_can_place_is_still_the_reward_file(tmp_path):
    plan = plan_of(tmp_path, "run.sh", """
        WORK_DIR=$(cd "$(dirname "$0")/.." && pwd)
        python3 -m openrlhf.cli.train_ppo_ray \\
           --pretrain Qwen/Qwen2.5-0.5B \\
           --advantage_estimator group_norm \\
           --remote_rm_url ${WORK_DIR}/rewards/math_reward.py
        """)
    assert plan.settings.reward_functions.value == ['$(cd "$(dirname "$0")/.." && pwd)/rewards/math_reward.py:reward_func']


def test_a_reward_server_url_is_a_reward_model_not_a_reward_function(tmp_path):
    plan = plan_of(tmp_path, "run.sh", """
        python3 -m openrlhf.cli.train_ppo_ray \\
           --pretrain Qwen/Qwen2.5-0.5B \\
           --advantage_estimator group_norm \\
           --remote_rm_url http://127.0.0.1:5000/get_reward
        """)
    assert plan.settings.reward_functions is None
    assert "REWARD_MODEL_SCORING" in codes(plan)
    assert any(i.key == "remote_rm_url" and i.value == "http://127.0.0.1:5000/get_reward" for i in plan.ledger)


def test_a_preference_loss_in_a_module_of_its_own_is_dpo(tmp_path):
    plan = plan_of(tmp_path, "train.py", """
        import torch
        from transformers import AutoModelForCausalLM
        from losses import preference_loss

        model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
        optimizer = torch.optim.AdamW(model.parameters(), lr=5e-7)
        for batch in batches():
            loss = preference_loss(model, batch)
            loss.backward()
            optimizer.step()
        """, ("losses.py", """
        import torch.nn.functional as F

        def preference_loss(model, batch, beta=0.1):
            chosen, rejected = model(batch["chosen"]), model(batch["rejected"])
            return -F.logsigmoid(beta * (chosen - rejected)).mean()
        """))
    assert (plan.framework, plan.algorithm) == ("pytorch", "dpo")
    assert (plan.settings.beta.value, plan.settings.beta.source) == (0.1, "losses.py:3")  # the loss's default


@pytest.mark.parametrize(("trainer", "extra_import", "framework", "algorithm"), [
    ("SimPOTrainer", "", "pytorch", "dpo"),
    ("MyGRPOTrainer", "from trl import ModelConfig", "trl", "grpo"),
    ("POTrainer", "", "pytorch", "other"),  # a name that says nothing: no guess
])
def test_a_run_handed_to_the_projects_own_trainer_class_not_given(tmp_path, trainer, extra_import, framework, algorithm):
    """A handbook-style entry (`parser.parse()`, `trainer = XTrainer(...)`, `trainer.train()`) whose
    trainer module is not among the inputs: the recipe's settings are read, the class name says the
    algorithm when it can."""
    plan = plan_of(tmp_path, "run_po.py", f"""
        {extra_import}
        from transformers import HfArgumentParser, set_seed
        from po_args import DataArguments, ModelArguments, get_datasets
        from po_trainer import {trainer}

        def main():
            parser = HfArgumentParser((ModelArguments, DataArguments))
            model_args, data_args, training_args = parser.parse_yaml_file("recipe.yaml")
            set_seed(training_args.seed)
            datasets = get_datasets(data_args)
            trainer = {trainer}(model=model_args.model_name_or_path, args=training_args, train_dataset=datasets["train"])
            trainer.train()
        """, ("recipe.yaml", """
        model_name_or_path: acme/llama-3-8b-sft
        dataset_mixer:
          acme/ultrafeedback-pairs: 1.0
        learning_rate: 1.0e-6
        num_train_epochs: 1
        """))
    assert (plan.framework, plan.algorithm) == (framework, algorithm)
    if framework == "pytorch":  # said as the project's own trainer, not as transformers' Trainer
        assert any(c.source == f"{trainer}(...).train() (the project's own trainer)" for c in plan.constructs)
    assert plan.settings.learning_rate.source == "recipe.yaml:4"
    assert (plan.settings.dataset.value, plan.settings.dataset.source) == (["acme/ultrafeedback-pairs"], "recipe.yaml:3")


def test_forks_that_renamed_the_package_are_read_by_their_overrides_and_cli_entry_points(tmp_path):
    plan = plan_of(tmp_path, "run.sh", """
        python3 -m skyfork.trainer.main_ppo algorithm.adv_estimator=grpo \\
            data.train_files=$HOME/data/math/train.parquet \\
            actor_rollout_ref.model.path=Qwen/Qwen2.5-7B \\
            actor_rollout_ref.actor.optim.lr=1e-6 \\
            actor_rollout_ref.rollout.n=16
        """)
    assert (plan.framework, plan.algorithm) == ("verl", "grpo")
    assert plan.settings.learning_rate.value == 1e-6 and plan.settings.num_generations.value == 16
    plan = plan_of(tmp_path, "run.sh", """
        deepspeed --module openrlhf_m.cli.train_dpo \\
           --pretrain Qwen/Qwen2.5-VL-3B \\
           --beta 0.1 \\
           --learning_rate 5e-7
        """)
    assert (plan.framework, plan.algorithm) == ("openrlhf", "dpo") and plan.settings.beta.value == 0.1


def test_an_alignment_handbook_entry_is_trl_like_the_handbook_itself(tmp_path):
    """LABELING.md: alignment-handbook and open-r1 drive TRL trainers; an entry importing only the
    handbook's package (its trainer in a module not given) is a TRL run."""
    plan = plan_of(tmp_path, "run_pref.py", """
        from alignment import DataArguments, H4ArgumentParser, ModelArguments, get_datasets
        from pref_trainer import PrefTrainer

        model_args, data_args, training_args = H4ArgumentParser((ModelArguments, DataArguments)).parse()
        trainer = PrefTrainer(model=model_args.model_name_or_path, args=training_args)
        trainer.train()
        """)
    assert plan.framework == "trl"


def test_a_launcher_of_a_script_not_given_is_known_by_the_config_it_hands_over(tmp_path):
    plan = plan_of(tmp_path, "run.sh", """
        accelerate launch --num_processes 8 scripts/run_sft.py sft.yaml
        """, ("sft.yaml", """
        model_name_or_path: Qwen/Qwen2.5-0.5B
        learning_rate: 2.0e-5
        per_device_train_batch_size: 4
        """))
    assert plan.framework == "trl" and plan.settings.learning_rate.source == "sft.yaml:2"


def test_a_trainer_a_helper_builds_and_a_module_launch_with_hf_flags_are_training_entries(tmp_path):
    plan = plan_of(tmp_path, "main.py", """
        import transformers
        from my_project.factory import build_trainer

        def main():
            trainer = build_trainer("configs/sft.yaml")
            trainer.train()
        """)
    assert plan.framework == "pytorch"
    plan = plan_of(tmp_path, "run.sh", """
        torchrun --nproc_per_node 8 -m my_project.train_sft \\
            --model_name_or_path Qwen/Qwen2.5-0.5B --learning_rate 1e-5 --num_train_epochs 3
        """)
    assert plan.framework == "trl" and plan.settings.num_epochs.value == 3


def test_a_trl_script_that_borrows_another_frameworks_helpers_is_trl_and_its_keywords_cite_argparse(tmp_path):
    plan = plan_of(tmp_path, "grpo_local.py", """
        import argparse
        from peft import LoraConfig
        from trl import GRPOConfig, GRPOTrainer
        from tinker_cookbook.recipes.math_rl.math_grading import grade_answer   # only a grader

        def math_reward_fn(completions, answer, **kwargs):
            return [1.0 if grade_answer(c, a) else 0.0 for c, a in zip(completions, answer)]

        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--lora-rank", type=int, default=64)
            parser.add_argument("--num-generations", type=int, default=16)
            args = parser.parse_args()
            peft_config = LoraConfig(r=args.lora_rank, lora_alpha=args.lora_rank)
            config = GRPOConfig(output_dir="out", learning_rate=4e-5, num_generations=args.num_generations)
            trainer = GRPOTrainer(model="Qwen/Qwen3-4B", args=config, reward_funcs=math_reward_fn,
                                  train_dataset=None, peft_config=peft_config)
            trainer.train()
    """)
    assert (plan.framework, plan.algorithm) == ("trl", "grpo")
    assert plan.settings.num_generations.value == 16
    items = {(i.key, repr(i.value), i.source) for i in plan.ledger}
    assert ("r", "64", "grpo_local.py:11") in items and ("lora_alpha", "64", "grpo_local.py:11") in items


def test_a_tinker_loop_whose_yaml_updates_its_defaults_dict_cites_the_yaml_and_its_batch_is_global(tmp_path):
    plan = plan_of(tmp_path, "grpo_train.py", """
        import yaml
        import tinker

        DEFAULTS = {
            "model_name": "Qwen/Qwen3-4B-Instruct-2507",
            "learning_rate": 4e-5,
            "batch_size": 128,
            "group_size": 16,
        }

        def load_config(config_path):
            config = DEFAULTS.copy()
            config.update(yaml.safe_load(open(config_path)))
            return config

        def main(config_path):
            config = load_config(config_path)
            client = tinker.ServiceClient().create_lora_training_client(base_model=config["model_name"])
            for batch in batches(config["batch_size"], config["group_size"]):
                client.forward_backward(batch, loss_fn="importance_sampling")
                client.optim_step(tinker.AdamParams(learning_rate=config["learning_rate"]))
    """, ("grpo_config.yaml", """
        model_name: Qwen/Qwen3-4B-Instruct-2507
        learning_rate: 4.0e-5
        group_size: 16
        batch_size: 128
    """))
    assert plan.framework == "tinker"
    assert (plan.settings.learning_rate.value, plan.settings.learning_rate.source) == (4e-5, "grpo_config.yaml:2")
    assert (plan.settings.global_batch_size.value, plan.settings.global_batch_size.source) == (128, "grpo_config.yaml:4")
    assert plan.settings.per_device_batch_size is None


def test_a_tinker_loop_with_a_custom_policy_gradient_loss_and_tuple_constants_is_grpo(tmp_path):
    plan = plan_of(tmp_path, "grpo_math.py", """
        import random
        import tinker

        STEPS, GROUP, LR, TEMP = 100, 4, 5e-6, 0.9

        def reward(response, answer):
            return 1.0 if answer in response else 0.0

        def format_reward(response):
            return float(response.endswith("."))

        def evaluate(sc, examples):
            return [reward(sc.sample(e), e["answer"]) for e in examples]

        _adv = []

        def loss_fn(data, lp):
            return sum(-_adv[i] * lp[i].sum() for i in range(len(lp))), {}

        tc = tinker.ServiceClient().create_lora_training_client(base_model="Qwen/Qwen3-8B", rank=32)
        for step in range(STEPS):
            sc = tc.save_weights_and_get_sampling_client(name=f"s{step}")
            resp = sc.sample(prompt, num_samples=GROUP,
                             sampling_params=tinker.SamplingParams(max_tokens=256, temperature=TEMP)).result()
            rews = [reward(r.text, answer) for r in resp.sequences]
            mean = sum(rews) / len(rews)
            _adv = [r - mean for r in rews]
            tc.forward_backward_custom(data=data, loss_fn=loss_fn).result()
            tc.optim_step(tinker.AdamParams(learning_rate=LR)).result()
    """)
    assert (plan.framework, plan.algorithm) == ("tinker", "grpo")
    assert (plan.settings.learning_rate.value, plan.settings.learning_rate.source) == (5e-6, "grpo_math.py:4")
    assert plan.settings.temperature.value == 0.9 and plan.settings.num_generations.value == 4
    assert (plan.settings.max_steps.value, plan.settings.max_steps.source) == (100, "grpo_math.py:4")
    # the loop's own call, not evaluate()'s, nor a helper no training code calls
    assert (plan.settings.reward_functions.value, plan.settings.reward_functions.source) == (["reward"], "grpo_math.py:25")
    assert {(i.key, repr(i.value)) for i in plan.ledger} >= {("STEPS", "100"), ("GROUP", "4"), ("TEMP", "0.9")}


def test_an_easyr1_worker_layout_config_with_dotlist_overrides(tmp_path):
    config = """
        data:
          train_files: acme/math@train
          val_files: acme/math@test
          max_prompt_length: 1024
          rollout_batch_size: 256
        algorithm:
          adv_estimator: grpo
          disable_kl: false
          use_kl_loss: true
          kl_coef: 1.0e-2
        worker:
          actor:
            global_batch_size: 64
            micro_batch_size_per_device_for_update: 2
            model:
              model_path: Qwen/Qwen2.5-7B-Instruct
              lora:
                rank: 0
                alpha: 64
                target_modules: all-linear
            optim:
              lr: 1.0e-6
          rollout:
            n: 5
            temperature: 1.0
            val_override_config:
              temperature: 0.6
          reward:
            reward_function: ./reward_function/math.py:compute_score
        trainer:
          total_epochs: 15
        """
    plan = plan_of(tmp_path, "run.sh", """
        python3 -m verl.trainer.main config=config.yaml \\
            worker.actor.model.model_path=Qwen/Qwen3-4B \\
            algorithm.kl_coef=1.0e-3
        """, ("config.yaml", config))
    assert (plan.framework, plan.algorithm) == ("verl", "grpo")
    s = plan.settings
    assert s.base_model.value == "Qwen/Qwen3-4B" and s.learning_rate.value == 1e-6
    assert (s.global_batch_size.value, s.per_device_batch_size.value) == (256, 2)
    assert (s.num_generations.value, s.temperature.value) == (5, 1.0)  # the run's, not the validation's
    assert (s.kl_coef.value, s.kl_coef.source) == (1e-3, "run.sh:3")
    assert s.reward_functions.value == ["./reward_function/math.py:compute_score"]
    assert s.lora is None  # rank 0: LoRA is off, its alpha and modules say nothing


def test_an_easyr1_batch_reward_module_alone_is_read_with_its_calling_convention(tmp_path):
    plan = plan_of(tmp_path, "math.py", """
        import re
        from typing import Any

        REWARD_NAME = "math"
        REWARD_TYPE = "batch"

        def compute_score(reward_inputs: list[dict[str, Any]], format_weight: float = 0.1) -> list[dict[str, float]]:
            return [{"overall": float(r["response"].strip() == r["ground_truth"])} for r in reward_inputs]
    """)
    assert plan.framework == "verl" and plan.settings.reward_functions.value == ["compute_score"]
    assert plan.reward.style == "easyr1" and plan.reward.status == "user"


def test_what_a_loop_is_named_for_decides_when_its_loss_says_nothing(tmp_path):
    plan = plan_of(tmp_path, "chat_sft.py", """
        import torch
        from nanolm.checkpoint import load_model

        model = load_model("base")
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
        for x, y in batches():
            loss = model(x, y)
            loss.backward()
            optimizer.step()
    """)
    assert (plan.framework, plan.algorithm) == ("pytorch", "sft")


def test_a_tinker_loop_drawing_each_steps_prompts_at_random_states_its_batch(tmp_path):
    plan = plan_of(tmp_path, "rl.py", """
        import random
        import tinker

        tc = tinker.ServiceClient().create_lora_training_client(base_model="Qwen/Qwen3-8B", rank=32)
        for step in range(50):
            batch = random.sample(examples, 4)
            for ex in batch:
                resp = sc.sample(ex, num_samples=8).result()
                rewards = [reward(r) for r in resp.sequences]
                advantages = [r - sum(rewards) / len(rewards) for r in rewards]
            tc.forward_backward(data, loss_fn="importance_sampling")
    """)
    assert (plan.settings.global_batch_size.value, plan.settings.global_batch_size.source) == (4, "rl.py:6")


@pytest.mark.parametrize("script, algorithm", [("dpo_training.py", "dpo"), ("orpo_training.py", "orpo"),
                                               ("grpo_training.py", "grpo"), ("reward_modeling.py", "reward_model"),
                                               ("train_sppo.py", "dpo")])
def test_a_launch_of_a_trl_script_that_was_not_given_is_what_the_scripts_name_says(tmp_path, script, algorithm):
    plan = plan_of(tmp_path, "run.sh", f"""
        CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 2 {script} \\
            --model_name_or_path Qwen/Qwen2.5-0.5B-Instruct \\
            --per_device_train_batch_size 4 \\
            --learning_rate 5e-6
        """)
    assert (plan.framework, plan.algorithm) == ("trl", algorithm)


def test_a_launch_of_a_missing_trl_script_reads_its_data_and_length_flags_and_skips_positional_models(tmp_path):
    plan = plan_of(tmp_path, "run_orpo.sh", """
        CUDA_VISIBLE_DEVICES=0,1 python orpo_training.py \\
            --model_name_or_path Qwen/Qwen2.5-0.5B-Instruct \\
            --train_file_dir ./data/reward \\
            --per_device_train_batch_size 4 \\
            --max_source_length 1024 \\
            --max_target_length 512 \\
            --orpo_beta 0.1
        python sft.py --model_name_or_path "$3" --per_device_train_batch_size 2 --learning_rate 1e-5
        """)
    assert (plan.framework, plan.algorithm) == ("trl", "orpo")
    s = plan.settings
    assert (s.dataset.value, s.max_prompt_length.value, s.max_response_length.value) == ("./data/reward", 1024, 512)
    assert s.beta.value == 0.1
    assert s.base_model.value == "Qwen/Qwen2.5-0.5B-Instruct"  # never "$3": that is only the caller's argument


def test_a_torchforge_sft_app_names_the_hub_weights_its_trainer_loads(tmp_path):
    plan = plan_of(tmp_path, "sft.yaml", """
        model_name: Qwen/Qwen3-8B
        optimizer:
          lr: 2e-5
        model:
          name: qwen3
          flavor: 8B
          hf_assets_path: hf://${model_name}
        training:
          local_batch_size: 1
          seq_len: 2048
          steps: 1000
        """, ("main.py", "from forge.actors.trainer import TitanTrainer\n"))
    assert plan.framework == "torchforge"
    assert (plan.settings.base_model.value, plan.settings.base_model.source) == ("hf://Qwen/Qwen3-8B", "sft.yaml:7")
    assert plan.mint.base_model == "Qwen/Qwen3-8B"  # the hub id MinT serves, without torchtitan's scheme


def test_an_early_easyr1_launch_names_its_kl_loss_built_in_scorer_and_episodes(tmp_path):
    config = """
        data:
          train_files: acme/refcoco@train
          rollout_batch_size: 128
        algorithm:
          adv_estimator: grpo
          kl_coef: 0.0
        worker:
          actor:
            use_kl_loss: true
            kl_loss_coef: 5.0e-3
            model:
              model_path: Qwen/Qwen2.5-VL-7B-Instruct
            optim:
              lr: 1.0e-6
          rollout:
            n: 8
          reward:
            reward_type: function
        trainer:
          total_episodes: 15
        """
    plan = plan_of(tmp_path, "run.sh", """
        python3 -m verl.trainer.main \\
            config=config.yaml \\
            worker.actor.kl_loss_coef=1.0e-2 \\
            worker.reward.compute_score=vision_reasoner \\
            trainer.total_episodes=1
        """, ("config.yaml", config))
    s = plan.settings
    assert (s.kl_coef.value, s.kl_coef.source) == (1e-2, "run.sh:3")  # the KL loss's, not algorithm.kl_coef 0.0
    assert s.reward_functions.value == ["vision_reasoner"] and s.num_epochs.value == 1
    assert plan.reward.status == "placeholder"  # a scorer built into the framework: no module to call


@pytest.mark.parametrize("module, algorithm", [("acme.rl.dpo_trainer", "dpo"),
                                               ("acme.reward_modeling_trainer", "reward_model"),
                                               ("transformers", "sft")])
def test_a_hf_style_trainer_imported_from_the_projects_own_module_is_what_the_module_is_named_for(
        tmp_path, module, algorithm):
    plan = plan_of(tmp_path, "train.py", f"""
        import transformers
        from {module} import Trainer

        parser = transformers.HfArgumentParser((transformers.TrainingArguments,))
        (training_args,) = parser.parse_args_into_dataclasses()
        model = transformers.AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
        trainer = Trainer(model=model, args=training_args)
        trainer.train()
        """)
    assert (plan.framework, plan.algorithm) == ("pytorch", algorithm)


def test_a_launch_of_a_missing_script_with_a_teacher_model_is_distillation(tmp_path):
    plan = plan_of(tmp_path, "run_opd.sh", """
        torchrun --nproc_per_node 2 training/opd_training.py \\
            --model_name_or_path Qwen/Qwen2.5-0.5B-Instruct \\
            --teacher_model_name_or_path Qwen/Qwen2.5-7B-Instruct \\
            --max_prompt_length 1024 \\
            --beta 0.5 \\
            --learning_rate 5e-5
        """)
    assert (plan.framework, plan.algorithm) == ("trl", "distillation")
    assert plan.settings.base_model.value == "Qwen/Qwen2.5-0.5B-Instruct"
    assert plan.settings.beta is None and plan.settings.kl_coef is None  # GKD's beta interpolates its JSD


@pytest.mark.parametrize("name, algorithm", [("SPPOTrainer", "dpo"), ("GaudiSFTTrainer", "sft")])
def test_a_trainer_whose_name_only_ends_like_a_trl_acronym_is_not_that_trainer(tmp_path, name, algorithm):
    plan = plan_of(tmp_path, "run.py", f"""
        from trl import ModelConfig
        from trainer import {name}

        trainer = {name}(model="mistralai/Mistral-7B-Instruct-v0.2", beta=0.01)
        trainer.train()
        """)
    assert plan.algorithm == algorithm


def test_a_tinker_loop_asking_one_sample_at_a_time_per_group_member_with_a_beta_weighed_kl(tmp_path):
    plan = plan_of(tmp_path, "grpo.py", """
        import chz
        import tinker
        from tracker import HistoryTracker

        @chz.chz
        class Config:
            model_name: str = "Qwen/Qwen3-4B-Instruct-2507"
            group_size: int = 4
            num_steps: int = 20
            beta: float = 0.04

        def evaluate(client, prompts, params):
            return [client.sample(prompt=p, num_samples=1, sampling_params=params) for p in prompts]

        def main(config: Config):
            tc = tinker.ServiceClient().create_lora_training_client(base_model=config.model_name, rank=8)
            tracker = HistoryTracker()
            for step in range(config.num_steps):
                futures = []
                for prompt in prompts:
                    group = []
                    for _ in range(config.group_size):
                        group.append(sc.sample(prompt=prompt, num_samples=1, sampling_params=params))
                    futures.append(group)
                rewards = tracker.calculate_rewards(texts, answers)
                rewards = [r - config.beta * kl for r, kl in zip(rewards, kls)]
                advantages = [r - sum(rewards) / len(rewards) for r in rewards]
                tc.forward_backward(data, loss_fn="importance_sampling")
        """)
    s = plan.settings
    assert plan.algorithm == "grpo"
    assert (s.num_generations.value, s.num_generations.source) == (4, "grpo.py:8")
    assert (s.kl_coef.value, s.beta) == (0.04, None)  # a policy-gradient loop's beta weighs its KL
    assert s.reward_functions.value == ["tracker.calculate_rewards"]


@pytest.mark.parametrize("micro_batch, kl", [
    ("ppo_micro_batch_size=64", 0.001),  # written for verl before use_kl_in_reward: the KL is in the reward
    ("ppo_micro_batch_size_per_gpu=4 data.val_batch_size=500", 0.001),  # a key verl has since dropped
    ("ppo_micro_batch_size_per_gpu=4", None),  # current verl: the in-reward KL is off unless switched on
])
def test_an_unswitched_in_reward_kl_applies_only_in_verl_from_before_use_kl_in_reward(tmp_path, micro_batch, kl):
    plan = plan_of(tmp_path, "train_ppo.sh", f"""
        python3 -m verl.trainer.main_ppo \\
            data.train_files=data/train.parquet \\
            actor_rollout_ref.model.path=Qwen/Qwen2.5-3B \\
            actor_rollout_ref.actor.{micro_batch} \\
            actor_rollout_ref.rollout.n_agent=5 \\
            critic.optim.lr=1e-5 \\
            algorithm.kl_ctrl.kl_coef=0.001 \\
            trainer.reward_function=f1
        """)
    s = plan.settings
    assert (s.kl_coef.value if s.kl_coef else None) == kl
    assert (s.num_generations.value, s.reward_functions.value) == (5, ["f1"])  # Search-R1 forks' keys


def test_an_empty_folder_variable_that_starts_a_path_is_kept_for_the_user_to_fill(tmp_path):
    plan = plan_of(tmp_path, "train.sh", """
        export HDFS_MODEL_PATH=""  # to be replaced
        EXTRA=""
        python3 -m verl.trainer.main_ppo \\
            data.train_files=$HDFS_MODEL_PATH/data/train.parquet \\
            actor_rollout_ref.model.path=$HDFS_MODEL_PATH/Qwen2.5-7B$EXTRA \\
            algorithm.adv_estimator=grpo
        """)
    assert plan.settings.base_model.value == "$HDFS_MODEL_PATH/Qwen2.5-7B"
    plan = plan_of(tmp_path, "laser.sh", """
        MODEL=""
        CLIP_RATIO=0.2
        CLIP_RATIO_LOW=0.18
        MODEL_NAME_OR_PATH=$MODEL
        python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo \\
            actor_rollout_ref.model.path=$MODEL_NAME_OR_PATH \\
            actor_rollout_ref.actor.clip_ratio=$CLIP_RATIO \\
            actor_rollout_ref.actor.clip_ratio_low=$CLIP_RATIO_LOW
        """)
    s = plan.settings
    assert (s.base_model.value, s.base_model.source) == ("$MODEL_NAME_OR_PATH", "laser.sh:4")  # left to fill
    assert (s.clip_ratio.value, s.clip_ratio.source) == (0.18, "laser.sh:3")  # verl prefers clip_ratio_low


def test_a_bare_model_flag_naming_a_checkpoint_is_the_base_model(tmp_path):
    plan = plan_of(tmp_path, "sft.py", """
        import argparse
        from trl import SFTConfig, SFTTrainer
        import verifiers as vf

        def main(args):
            model, tokenizer = vf.get_model_and_tokenizer(args.model)
            trainer = SFTTrainer(model=model, args=SFTConfig(learning_rate=args.learning_rate), train_dataset=ds)
            trainer.train()

        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--model", "-m", type=str, default="willcb/Qwen3-1.7B")
            parser.add_argument("--learning-rate", type=float, default=2e-5)
            main(parser.parse_args())
        """)
    assert (plan.settings.base_model.value, plan.settings.base_model.source) == ("willcb/Qwen3-1.7B", "sft.py:12")


def test_a_data_files_format_builder_a_not_used_placeholder_and_a_run_named_data_path(tmp_path):
    plan = plan_of(tmp_path, "train.py", """
        import argparse
        from datasets import load_dataset
        from trl import GRPOConfig, GRPOTrainer

        parser = argparse.ArgumentParser()
        parser.add_argument("--data_path", default="data/train_128.parquet")
        args = parser.parse_args()

        def load(path):
            return load_dataset("parquet", data_files={"train": path}, split="train")

        def main():
            reward_fn = make_reward_fn("binary")
            GRPOTrainer(model="Qwen/Qwen3-1.7B", reward_funcs=[reward_fn], args=GRPOConfig(output_dir="o"),
                        train_dataset=load(args.data_path)).train()
        """)
    s = plan.settings
    assert (s.dataset.value, s.dataset.source) == ("data/train_128.parquet", "train.py:6")  # never "parquet"
    assert s.reward_functions.value == ["reward_fn"]  # what the list holds, not the factory that built it
    plan = plan_of(tmp_path, "run.sh", """
        torchrun --nproc_per_node 8 grpo_rec.py \\
            --model_name_or_path Qwen/Qwen2.5-VL-3B-Instruct \\
            --dataset_name this_is_not_used \\
            --data_file_paths /data/refcoco_train.jsonl \\
            --num_generations 8
        """)
    assert plan.settings.dataset.value == "/data/refcoco_train.jsonl"
    plan = plan_of(tmp_path, "run2.sh", """
        accelerate launch ./train_grpo.py --model_name Qwen/Qwen2.5-7B-Instruct \\
            --grpo_data_path ../data/grpo.json --eval_data_path ../data/eval.json --num_generations 16
        """)
    assert plan.settings.dataset.value == "../data/grpo.json"


def test_a_loop_summing_two_reward_functions_and_calling_what_a_factory_returns(tmp_path):
    plan = plan_of(tmp_path, "loop.py", """
        import torch

        def main():
            def reward_correct(q, a):
                return 1.0

            def reward_format(q, a):
                return 0.5

            model = load_policy("Qwen/Qwen2.5-0.5B")
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
            for step in range(10):
                answers = model.generate(prompts, num_return_sequences=8)
                rewards = [reward_correct(q, a) + reward_format(q, a) for q, a in zip(prompts, answers)]
                advantages = [r - sum(rewards) / len(rewards) for r in rewards]
                loss = -(torch.tensor(advantages) * logps).mean()
                loss.backward()
                optimizer.step()
        """)
    assert plan.settings.reward_functions.value == ["reward_correct", "reward_format"]


def test_a_tinker_loop_reading_its_own_yaml_takes_only_the_sections_it_reads_and_a_rank_only_lora(tmp_path):
    plan = plan_of(tmp_path, "train_tinker.py", """
        import argparse
        import yaml
        import tinker
        from tinker import types

        parser = argparse.ArgumentParser()
        parser.add_argument("--config", default="hyperparams.yaml")
        parser.add_argument("--quick_test", action="store_true")
        parser.add_argument("--beta", type=float, default=0.04)
        args = parser.parse_args()
        config = yaml.safe_load(open(args.config))
        print(args.beta)

        client = tinker.ServiceClient().create_lora_training_client(
            base_model=config["model"]["name"], rank=config["lora"]["rank"])
        training = config["training"]
        for step in range(training["max_steps"]):
            client.forward_backward(batch, loss_fn="cross_entropy")
            client.optim_step(types.AdamParams(learning_rate=training["learning_rate"]))

        def show(sampler, prompt):
            return sampler.sample(prompt, num_samples=1, sampling_params=types.SamplingParams(max_tokens=256))
        """, ("hyperparams.yaml", """
        model:
          name: meta-llama/Llama-3.1-8B
        lora:
          rank: 8
          alpha: 16
          target_modules: all_linear_layers
        training:
          learning_rate: 1.0e-4
          max_steps: 1000
          gradient_accumulation_steps: 1
        quick_test:
          max_steps: 50
        """))
    s = plan.settings
    assert plan.algorithm == "sft"
    assert (s.base_model.value, s.base_model.source) == ("meta-llama/Llama-3.1-8B", "hyperparams.yaml:2")
    assert (s.max_steps.value, s.max_steps.source) == (1000, "hyperparams.yaml:9")  # not the quick_test profile
    assert s.lora.value.model_dump(exclude_none=True) == {"rank": 8}  # a Tinker LoRA takes a rank only
    assert s.gradient_accumulation_steps is None  # stated, never read by the loop
    assert s.max_response_length is None and s.beta is None and s.kl_coef is None  # a look at samples; a printed beta


def test_a_function_handed_the_parsed_command_line_reads_its_defaults(tmp_path):
    plan = plan_of(tmp_path, "train_tinker.py", """
        import argparse
        import tinker
        from tinker import types

        def rollout(sampler, prompts, args):
            params = types.SamplingParams(max_tokens=args.max_completion_tokens, temperature=args.temperature)
            return [sampler.sample(p, num_samples=args.group_size, sampling_params=params) for p in prompts]

        def main(args):
            tc = tinker.ServiceClient().create_lora_training_client(base_model=args.model, rank=args.lora_rank)
            for step in range(args.steps):
                groups = rollout(sc, prompts, args)
                rewards = [reward(g) for g in groups]
                advantages = [r - sum(rewards) / len(rewards) for r in rewards]
                tc.forward_backward(data, loss_fn="importance_sampling")

        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--model", default="Qwen/Qwen3-8B")
            parser.add_argument("--lora_rank", type=int, default=64)
            parser.add_argument("--group_size", type=int, default=8)
            parser.add_argument("--max_completion_tokens", type=int, default=3072)
            parser.add_argument("--temperature", type=float, default=1.0)
            parser.add_argument("--steps", type=int, default=100)
            main(parser.parse_args())
        """)
    s = plan.settings
    assert (s.max_response_length.value, s.max_response_length.source) == (3072, "train_tinker.py:22")
    assert (s.num_generations.value, s.temperature.value, s.lora.value.rank) == (8, 1.0, 64)


def test_a_snapshot_download_names_the_model_and_a_predict_helpers_generation_no_length(tmp_path):
    plan = plan_of(tmp_path, "train_qwen2.py", """
        import torch
        from modelscope import snapshot_download
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

        def predict(messages, model, tokenizer):
            return model.generate(tokenizer(messages).input_ids, max_new_tokens=512)

        model_dir = snapshot_download("qwen/Qwen2-1.5B-Instruct", cache_dir="./", revision="master")
        model = AutoModelForCausalLM.from_pretrained("./qwen/Qwen2-1___5B-Instruct/", torch_dtype=torch.bfloat16)
        unused = LoraConfig(r=16, lora_alpha=32)
        config = LoraConfig(r=8, lora_alpha=32)
        model = get_peft_model(model, config)
        trainer = Trainer(model=model, args=TrainingArguments(output_dir="out", learning_rate=1e-4))
        trainer.train()
        """)
    s = plan.settings
    assert (s.base_model.value, s.base_model.source) == ("qwen/Qwen2-1.5B-Instruct", "train_qwen2.py:9")
    assert s.max_response_length is None  # predict() only shows what the model says
    assert s.lora.value.rank == 8  # the LoraConfig nothing uses configures nothing


def test_a_lora_config_whose_handover_is_commented_out_configures_nothing(tmp_path):
    plan = plan_of(tmp_path, "grpo_demo.py", """
        from peft import LoraConfig
        from trl import GRPOConfig, GRPOTrainer

        peft_config = LoraConfig(r=16, lora_alpha=64, target_modules=["q_proj", "v_proj"])
        trainer = GRPOTrainer(
            model="Qwen/Qwen2.5-0.5B-Instruct",
            reward_funcs=[correct],
            args=GRPOConfig(output_dir="out", num_generations=8, dataset_name="xxx"),
            #peft_config=peft_config
        )
        trainer.train()
        """)
    assert plan.settings.lora is None
    assert plan.settings.dataset is None  # "xxx" is a placeholder, not a dataset


def test_a_loop_calling_its_reward_through_an_alias_names_the_function_chosen(tmp_path):
    plan = plan_of(tmp_path, "grpo_train.py", """
        import tinker

        def get_reward_math(response, truth):
            return 1.0

        def get_reward_gsm8k(response, truth):
            return 1.0

        def main(config):
            if config["dataset"] == "math":
                reward_fn = get_reward_math
            else:
                reward_fn = get_reward_gsm8k
            tc = tinker.ServiceClient().create_lora_training_client(base_model="Qwen/Qwen3-8B", rank=32)
            for step in range(10):
                result = sc.sample(prompt, num_samples=4, sampling_params=params).result()
                rewards = [reward_fn(s, truth) for s in result.sequences]
                advantages = [r - sum(rewards) / len(rewards) for r in rewards]
                tc.forward_backward(data, loss_fn="importance_sampling")
        """)
    r = plan.settings.reward_functions
    assert (r.value, r.source) == (["get_reward_math"], "grpo_train.py:11")


def test_a_torchforge_sft_app_reads_its_training_dataset_list(tmp_path):
    plan = plan_of(tmp_path, "sft.yaml", """
        model_name: Qwen/Qwen3-1.7B
        model:
          name: qwen3
          hf_assets_path: hf://${model_name}
        training:
          local_batch_size: 1
          seq_len: 4096
          steps: 1000
          dataset:
            - path: /scratch/datasets/ultrachat_200k
              split: "train_sft[:95%]"
        """, ("main.py", "from forge.actors.trainer import TitanTrainer\n"))
    assert plan.framework == "torchforge"
    assert (plan.settings.dataset.value, plan.settings.dataset.source) == ("/scratch/datasets/ultrachat_200k", "sft.yaml:10")


def test_a_vendored_trl_copy_and_a_reward_model_given_as_a_string(tmp_path):
    plan = plan_of(tmp_path, "example_grpo.py", """
        from trl_main import GRPOConfig, GRPOTrainer

        trainer = GRPOTrainer(model="Qwen/Qwen2-0.5B-Instruct", reward_funcs="model/weqweasdas/RM-Gemma-2B",
                              args=GRPOConfig(output_dir="out", num_generations=4))
        trainer.train()
        """)
    assert (plan.framework, plan.algorithm) == ("trl", "grpo")
    assert plan.settings.reward_functions is None and "REWARD_MODEL_SCORING" in codes(plan)


def test_a_verl_fork_launch_with_no_estimator_and_no_critic_is_grpo_and_openrlhf_fork_entries(tmp_path):
    plan = plan_of(tmp_path, "train_evidence.sh", """
        python3 -m verl.trainer.main_ppo \\
            data.train_files=data/train.parquet \\
            actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \\
            actor_rollout_ref.actor.optim.lr=1e-6
        """)
    assert plan.algorithm == "grpo" and "CRITIC_GAE" not in codes(plan)
    plan = plan_of(tmp_path, "run_sync.sh", """
        python3 -m marti.cli.multi_agent_train_ppo_ray \\
            --pretrain Qwen/Qwen3-1.7B \\
            --advantage_estimator group_norm \\
            --n_samples_per_prompt 8
        """)
    assert (plan.framework, plan.algorithm) == ("openrlhf", "grpo")


@pytest.mark.parametrize("entry, algorithm", [("train_dpo", "dpo"), ("train_sft", "sft"), ("train_rm", "reward_model")])
def test_openrlhfs_first_layout_run_from_examples_scripts_is_openrlhf_by_its_own_flags(tmp_path, entry, algorithm):
    # Before openrlhf.cli existed, examples/scripts/*.sh ran `../train_dpo.py`; forks still do. The
    # launch's zero_stage alone would say DeepSpeed-Chat; --pretrain and --micro_train_batch_size say OpenRLHF.
    plan = plan_of(tmp_path, "train_llama.sh", f"""
        read -r -d '' training_commands <<EOF
        ../{entry}.py \\
             --pretrain meta-llama/Llama-3.1-8B \\
             --micro_train_batch_size 1 \\
             --train_batch_size 128 \\
             --zero_stage 3 \\
             --learning_rate 5e-7
        EOF
        deepspeed $training_commands
        """)
    assert (plan.framework, plan.algorithm) == ("openrlhf", algorithm)
    assert (plan.settings.global_batch_size.value, plan.settings.learning_rate.value) == (128, 5e-7)
    plan = plan_of(tmp_path, "run_ds_chat.sh", """
        deepspeed main.py --model_name_or_path facebook/opt-1.3b --zero_stage 3 --learning_rate 9.65e-6
        """)
    assert plan.framework == "pytorch"  # DeepSpeed-Chat's zero_stage: not OpenRLHF


def test_a_hand_written_pairwise_loss_on_trained_scores_is_a_reward_model_on_log_probs_against_a_reference_dpo(tmp_path):
    loop = """
        import torch
        import torch.nn.functional as F
        from torch.utils.data import DataLoader
        from model import RewardModel
        from data import PreferenceDataset

        def preference_loss(chosen, rejected):
            return -F.logsigmoid(chosen - rejected).mean()

        model = RewardModel.from_pretrained("weights/sft")
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
        for batch in DataLoader(PreferenceDataset("data/prefs.jsonl"), batch_size=12):
            chosen_scores = model(batch["chosen_input_ids"])
            rejected_scores = model(batch["rejected_input_ids"])
            loss = preference_loss(chosen_scores, rejected_scores)
            loss.backward()
            optimizer.step()
        """
    assert plan_of(tmp_path, "train_rm.py", loop).algorithm == "reward_model"
    dpo = loop.replace("chosen - rejected", "beta * ((chosen - ref_chosen) - (rejected - ref_rejected))") \
              .replace("def preference_loss(chosen, rejected):", "def preference_loss(chosen, rejected, ref_chosen=0.0, "
                       "ref_rejected=0.0, beta=0.1):")
    assert plan_of(tmp_path, "train_dpo.py", dpo).algorithm == "dpo"


def test_a_loop_that_only_logs_sampled_answers_is_sft_and_one_that_trains_a_value_model_is_ppo(tmp_path):
    sft = """
        import torch
        from transformers import AutoModelForCausalLM

        def log_generations(model, prompts, reward_fn):
            outputs = model.generate(prompts, max_new_tokens=64)
            return [reward_fn(o) for o in outputs]

        model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-Math-1.5B")
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
        for batch in loader:
            loss = torch.nn.functional.cross_entropy(model(batch["input_ids"]).logits, batch["labels"])
            loss.backward()
            optimizer.step()
        log_generations(model, prompts, reward_fn)
        """
    assert plan_of(tmp_path, "sft.py", sft).algorithm == "sft"
    ppo = """
        import torch
        from transformers import AutoModelForCausalLM
        from model import ScalarHead

        policy = AutoModelForCausalLM.from_pretrained("gpt2")
        value_model = ScalarHead(policy.config)
        optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-5)
        for prompts in loader:
            responses = policy.generate(prompts, max_new_tokens=64)
            rewards = reward_model(responses)
            old_values = value_model(responses)
            advantages = rewards - old_values
            ratio = (new_logp - old_logp).exp()
            loss = -torch.min(ratio * advantages, torch.clamp(ratio, 0.8, 1.2) * advantages).mean()
            loss.backward()
            optimizer.step()
        """
    plan = plan_of(tmp_path, "train_ppo.py", ppo)
    assert plan.algorithm == "ppo" and "CRITIC_GAE" in codes(plan)


def test_an_openrlhf_forks_rloo_trainer_and_rule_rewards_named_on_the_command_line(tmp_path):
    # a fork's own `train_rloo` (leave-one-out over --rloo_k samples), and a fork's registry of rule
    # rewards named by `--reward_func_names`, the clip range as `--eps_clip_low/high`
    rloo = plan_of(tmp_path, "rloo.sh", """
        deepspeed --module openrlhf.cli.train_rloo \\
            --pretrain org/policy --reward_pretrain org/rm \\
            --train_batch_size 1024 --rollout_batch_size 1024 \\
            --max_epochs 1 --rloo_k 8 --init_kl_coef 0.01
    """)
    assert (rloo.framework, rloo.algorithm, rloo.variant) == ("openrlhf", "reinforce", "rloo")
    assert rloo.settings.num_generations.value == 8 and rloo.settings.num_generations.source == "rloo.sh:4"
    assert rloo.settings.num_epochs is None  # max_epochs: update epochs per rollout batch in the PPO family
    named = plan_of(tmp_path, "grpo.sh", """
        read -r -d '' training_commands <<EOF
        openrlhf.cli.train_ppo \\
           --pretrain org/policy \\
           --reward_func_names accuracy format cosine \\
           --n_samples_per_prompt 16 \\
           --eps_clip_low 0.2 \\
           --eps_clip_high 0.28 \\
           --advantage_estimator group_norm
        EOF
        deepspeed --module $training_commands
    """)
    assert (named.framework, named.algorithm) == ("openrlhf", "grpo")
    assert named.settings.reward_functions.value == ["accuracy", "format", "cosine"]
    assert named.settings.reward_functions.source == "grpo.sh:4"
    assert named.settings.clip_ratio.value == 0.2
    assert named.reward.status == "placeholder" and "--reward_func_names accuracy format cosine" in named.reward.reason


def test_a_grpo_loops_own_config_words_its_settings_the_papers_way(tmp_path):
    # `beta` weighs the KL term, `eps` is the clip range (Adam's eps is 1e-8), `prompts_per_step` can only be
    # the global batch, and an epoch loop inside the step loop is updates per rollout, not passes over the data
    plan = plan_of(tmp_path, "grpo_loop.py", """
        import random
        from dataclasses import dataclass

        import torch
        from transformers import AutoModelForCausalLM

        @dataclass
        class Cfg:
            model: str = "Qwen/Qwen2.5-0.5B-Instruct"
            group: int = 8
            prompts_per_step: int = 4
            epochs: int = 2
            eps: float = 0.2
            beta: float = 0.04
            lr: float = 1e-5
            steps: int = 300

        def reward_fn(text, gold):
            return float(gold in text)

        def diagnose(policy, cfg: Cfg, prompts):
            for _ in range(3):
                rewards = [reward_fn(t, g) for t, g in prompts]

        def train(policy, cfg: Cfg, prompts):
            opt = torch.optim.AdamW(policy.parameters(), lr=cfg.lr)
            for step in range(cfg.steps):
                batch = random.sample(prompts, cfg.prompts_per_step)
                out = policy.generate(batch, do_sample=True, num_return_sequences=cfg.group, max_new_tokens=64)
                rewards = [reward_fn(t, g) for t, g in out]
                for epoch in range(cfg.epochs):
                    ratio = torch.exp(policy(out) - policy(out).detach())
                    adv = torch.tensor(rewards) - torch.tensor(rewards).mean()
                    loss = -torch.min(ratio * adv, torch.clamp(ratio, 1 - cfg.eps, 1 + cfg.eps) * adv).mean()
                    loss = loss + cfg.beta * (policy(out) - policy(out)).mean()
                    loss.backward()
                    opt.step()

        def main():
            cfg = Cfg()
            policy = AutoModelForCausalLM.from_pretrained(cfg.model)
            diagnose(policy, cfg, [])
            train(policy, cfg, [])
    """)
    assert plan.algorithm == "grpo"
    s = plan.settings
    assert (s.kl_coef.value, s.kl_coef.source) == (0.04, "grpo_loop.py:14")
    assert (s.clip_ratio.value, s.clip_ratio.source) == (0.2, "grpo_loop.py:13")
    assert (s.global_batch_size.value, s.global_batch_size.source) == (4, "grpo_loop.py:11")
    assert s.num_epochs is None and "MULTI_UPDATE" in codes(plan)
    assert s.reward_functions.source == "grpo_loop.py:30"  # the training loop's call, not diagnose()'s


def test_a_config_built_from_the_parsed_command_line_and_fields_nothing_reads(tmp_path):
    # `TrainConfig(learning_rate=args.learning_rate)`: the run's values are the argparse defaults it is built
    # from; a field of a chz config that no code reads (`epochs`) is not a setting
    plan = plan_of(tmp_path, "train.py", """
        import argparse

        import chz
        import tinker

        @chz.chz
        class TrainConfig:
            model_name: str = "Qwen/Qwen3-4B"
            learning_rate: float = 1e-4
            lora_rank: int = 8
            epochs: int = 10

        def parse_args() -> TrainConfig:
            parser = argparse.ArgumentParser()
            parser.add_argument("--learning-rate", type=float, default=4e-5)
            parser.add_argument("--lora-rank", type=int, default=32)
            args = parser.parse_args()
            return TrainConfig(learning_rate=args.learning_rate, lora_rank=args.lora_rank)

        def run(cfg: TrainConfig):
            client = tinker.ServiceClient().create_lora_training_client(cfg.model_name, rank=cfg.lora_rank)
            client.forward_backward([], loss_fn="cross_entropy")
            client.optim_step(tinker.AdamParams(learning_rate=cfg.learning_rate))

        run(parse_args())
    """)
    s = plan.settings
    assert (s.learning_rate.value, s.learning_rate.source) == (4e-5, "train.py:15")
    assert (s.lora.value.rank, s.lora.source) == (32, "train.py:16")
    assert s.num_epochs is None


def test_a_launch_whose_job_id_a_variable_captures_still_runs(tmp_path):
    plan = plan_of(tmp_path, "run.sh", """
        JOB_ID=$(ray job submit --address="http://127.0.0.1:8265" \\
            --runtime-env-json='{"working_dir": "/openrlhf"}' \\
            -- python -u -m openrlhf.cli.train_ppo_ray \\
            --pretrain org/policy \\
            --actor_learning_rate 5e-7 \\
            --init_kl_coef 0.01 2>&1 | grep -oP 'raysubmit_\\w+')
        ray job status $JOB_ID
    """)
    assert (plan.framework, plan.algorithm) == ("openrlhf", "ppo")
    assert (plan.settings.learning_rate.value, plan.settings.learning_rate.source) == (5e-7, "run.sh:5")


def test_verls_on_policy_distillation_block_is_distillation_whatever_the_estimator(tmp_path):
    plan = plan_of(tmp_path, "run_opd.sh", """
        python3 -m verl.trainer.main_ppo \\
            algorithm.adv_estimator=grpo \\
            actor_rollout_ref.model.path=Qwen/Qwen3-1.7B \\
            actor_rollout_ref.rollout.n=4 \\
            distillation.enabled=True \\
            distillation.teacher_model.model_path=Qwen/Qwen3-8B
    """)
    assert (plan.framework, plan.algorithm) == ("verl", "distillation")
    assert "DISTILL_TEACHER" in codes(plan)
    assert plan.settings.base_model.value == "Qwen/Qwen3-1.7B"


def test_a_judge_server_started_before_the_run_is_not_the_run(tmp_path):
    # `python -m uvicorn teacher.server:app &` beside a torchrun whose program is a variable's default
    plan = plan_of(tmp_path, "train_grpo.sh", """
        TORCHRUN_BIN="${TORCHRUN_BIN:-torchrun}"
        nohup python -m uvicorn teacher.server:app --port 8000 > teacher.log 2>&1 &
        "${TORCHRUN_BIN}" --nproc_per_node=8 train/grpo.py \\
            --model_name_or_path Qwen/Qwen2.5-VL-7B-Instruct \\
            --num_generations 8 \\
            --beta 0.04
    """)
    assert (plan.framework, plan.algorithm) == ("trl", "grpo")
    assert plan.settings.num_generations.value == 8 and plan.settings.kl_coef.value == 0.04


def test_a_forks_own_openrlhf_estimator_over_groups_is_grpos_family(tmp_path):
    plan = plan_of(tmp_path, "run.sh", """
        python3 -m openrlhf.cli.train_ppo_ray \\
           --actor.model_name_or_path org/policy \\
           --critic.adam.lr 9e-6 \\
           --rollout.n_samples_per_prompt 8 \\
           --algo.advantage.estimator gd2po
    """)
    assert (plan.framework, plan.algorithm) == ("openrlhf", "grpo")


def test_a_trainer_class_bound_to_a_name_before_it_is_called(tmp_path):
    plan = plan_of(tmp_path, "dpo.py", """
        from trl import DPOTrainer
        from my_trainer import NewDPOTrainer

        if use_new:
            Trainer = NewDPOTrainer
        else:
            Trainer = DPOTrainer
        trainer = Trainer(model="org/m", beta=0.1)
        trainer.train()
    """)
    assert (plan.framework, plan.algorithm) == ("trl", "dpo")


def test_a_launch_with_trls_first_ppoconfig_fields_is_trls_ppo(tmp_path):
    plan = plan_of(tmp_path, "train_ppo_trl.sh", """
        python train_code/ppo_train.py --batch_size 1 --mini_batch_size 1 --learning_rate 3e-6 --ppo_epochs 3 \\
            --log_with=wandb --query_dataset="org/hh-rlhf" --model_name="/models/llama2_sft/"
    """)
    assert (plan.framework, plan.algorithm) == ("trl", "ppo")


def test_trls_model_name_or_path_fills_the_base_model_outside_ppo(tmp_path):
    # a TRL SFT script that reads its own YAML with yaml.safe_load and loads the model through a helper
    plan = plan_of(tmp_path, "train_sft.py", """
        import yaml
        from trl import SFTConfig, SFTTrainer
        from utils import load_causal_lm

        cfg = yaml.safe_load(open("sft.yaml"))
        model = load_causal_lm(cfg["model_name_or_path"])
        SFTTrainer(model=model, args=SFTConfig(output_dir="out")).train()
    """, ("sft.yaml", "model_name_or_path: TinyLlama/TinyLlama-1.1B-Chat-v1.0\nlearning_rate: 2.0e-5\n"))
    assert plan.algorithm == "sft"
    assert plan.settings.base_model.value == "TinyLlama/TinyLlama-1.1B-Chat-v1.0"


def test_an_attribute_of_a_plain_config_class_that_nothing_reads_is_no_setting(tmp_path):
    # `Config.model_name_or_path` is never read; the model the run loads is MODEL_NAME
    plan = plan_of(tmp_path, "train_kto.py", """
        from trl import KTOConfig, KTOTrainer

        class Config:
            beta = 0.1
            model_name_or_path = "../checkpoint/kto2"
            learning_rate = 5e-4

        def kto_pipeline(model_name):
            args = KTOConfig(beta=Config.beta, learning_rate=Config.learning_rate, output_dir="out")
            KTOTrainer(model=model_name, args=args).train()

        MODEL_NAME = "gpt2"
        kto_pipeline(MODEL_NAME)
    """)
    assert plan.algorithm == "kto"
    assert (plan.settings.base_model.value, plan.settings.base_model.source) == ("gpt2", "train_kto.py:12")
    assert plan.settings.learning_rate.value == 5e-4
