"""Setups no framework reader recognises, read anyway: a launcher in `scripts/` whose script sits in
a folder above it, a launch of a script nobody gave us (its flags and hydra configs alone), and a
script that trains through a vendored or in-house trainer. Each is a plan that says loudly that it
is a best effort, not a refusal that drops every setting the inputs state."""

import textwrap
from pathlib import Path

import pytest

from mint_migrate.analyze import analyze
from mint_migrate.errors import MintMigrateError


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def ledger_of(plan) -> dict:
    return {item.key: item.value for item in plan.ledger}


def guessed(plan) -> str | None:
    return next((w.message for w in plan.warnings if w.code == "FRAMEWORK_GUESSED"), None)


SFT_LOOP = """
    import argparse
    import torch
    from transformers import AutoModelForCausalLM

    parser = argparse.ArgumentParser()
    parser.add_argument("--model_path", default="gpt2")
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()

    model = AutoModelForCausalLM.from_pretrained(args.model_path)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        loss = model(input_ids=torch.zeros(1, 4, dtype=torch.long), labels=torch.zeros(1, 4, dtype=torch.long)).loss
        loss.backward()
        optimizer.step()
"""


def test_a_launcher_in_scripts_runs_the_script_of_the_folder_it_is_run_from(tmp_path):
    write(tmp_path, "proj/train_sft.py", SFT_LOOP)
    launcher = write(tmp_path, "proj/scripts/sft.sh", """
        accelerate launch --config_file config/sft.yaml train_sft.py \\
            --model_path bigscience/bloom-1b1 \\
            --lr 2e-5 \\
            --epochs 4
    """)
    plan = analyze(launcher, [])
    assert plan.framework == "pytorch" and plan.algorithm == "sft"
    assert guessed(plan) is None  # the loop was read: nothing guessed
    assert plan.settings.learning_rate.value == 2e-5
    assert plan.settings.base_model.value == "bigscience/bloom-1b1"
    assert any("train_sft.py" in i and "found from the inputs" in i for i in plan.inputs)


def test_a_vendored_trainer_launched_with_accelerate_is_a_loud_best_effort_plan(tmp_path):
    write(tmp_path, "proj/train_ppo.py", """
        import argparse
        from mytrlx import train, TRLConfig   # the project's own copy of a trainer library

        parser = argparse.ArgumentParser()
        parser.add_argument("--model_path", default="outputs/sft")
        parser.add_argument("--lr", type=float, default=5e-6)
        args = parser.parse_args()
        config = TRLConfig(total_steps=1000, batch_size=4)
        train(args.model_path, config=config, reward_fn=lambda samples: [0.0] * len(samples))
    """)
    launcher = write(tmp_path, "proj/scripts/ppo.sh", """
        accelerate launch train_ppo.py \\
            --model_path outputs/sft \\
            --lr 1e-5
    """)
    plan = analyze(launcher, [])
    assert plan.framework == "pytorch"
    assert plan.algorithm == "ppo"  # what its files are named for, with nothing else to go on
    assert "vendored or in-house trainer" in guessed(plan)
    assert plan.warnings[0].code == "FRAMEWORK_GUESSED"  # first, where an agent reads first
    assert plan.settings.learning_rate.value == 1e-5
    assert ledger_of(plan)["lr"] == 1e-5


def test_a_launch_of_a_missing_hydra_app_is_read_from_its_flags_and_composed_configs(tmp_path):
    write(tmp_path, "config/config.yaml", """
        seed: ???
        exp_name: ???
        defaults:
          - _self_
          - model: ???
          - adapter: ???
          - loss: dpo
        batch_size: 4
        lr: 5e-5
        n_epochs: 2
    """)
    write(tmp_path, "config/loss/dpo.yaml", "beta: 0.3\nreference_free: false\n")
    write(tmp_path, "config/model/llama1B.yaml", "model: meta-llama/Llama-3.2-1B-Instruct\ntarget_modules: [q_proj]\n")
    write(tmp_path, "config/adapter/lora.yaml", "r: ???\nalpha: 16\n")
    configs = [tmp_path / "config" / p for p in ("config.yaml", "loss/dpo.yaml", "model/llama1B.yaml",
                                                  "adapter/lora.yaml")]
    launcher = write(tmp_path, "scripts/run.sh", """
        accelerate launch src/train.py \\
            exp_name=llama1B \\
            model=llama1B \\
            adapter=lora \\
            adapter.r=16
    """)
    plan = analyze(launcher, configs)
    assert plan.framework == "pytorch" and plan.algorithm == "dpo"  # the chosen loss group's file
    message = guessed(plan)
    assert "src/train.py, which was not given" in message and "--config src/train.py" in message
    ledger = ledger_of(plan)
    assert ledger["loss.beta"] == 0.3 and ledger["model.model"] == "meta-llama/Llama-3.2-1B-Instruct"
    assert ledger["adapter.alpha"] == 16 and ledger["adapter.r"] == 16
    assert plan.settings.beta.value == 0.3
    assert plan.settings.base_model.value == "meta-llama/Llama-3.2-1B-Instruct"
    assert plan.settings.learning_rate.value == 5e-5
    assert plan.settings.lora.value.rank == 16


def test_a_missing_script_with_almost_nothing_stated_is_still_refused(tmp_path):
    launcher = write(tmp_path, "run.sh", "python missing_script.py --lr 1\n")
    with pytest.raises(MintMigrateError, match=r"run\.sh:1: the command runs missing_script\.py"):
        analyze(launcher, [])


def test_a_script_named_for_training_without_a_known_loop_is_guessed_but_a_utility_is_refused(tmp_path):
    script = write(tmp_path, "train_rm.py", """
        import argparse
        from my_project.trainer import RMTrainer

        parser = argparse.ArgumentParser()
        parser.add_argument("--learning_rate", type=float, default=1e-5)
        args = parser.parse_args()
        RMTrainer(lr=args.learning_rate).fit()
    """)
    plan = analyze(script, [])
    assert plan.framework == "pytorch" and plan.algorithm == "reward_model"
    assert guessed(plan) is not None
    assert plan.settings.learning_rate.value == 1e-5
    util = write(tmp_path, "util.py", "import argparse\nparser = argparse.ArgumentParser()\n"
                 "parser.add_argument('--x', default=1)\n")
    with pytest.raises(MintMigrateError, match="no training setup found"):
        analyze(util, [])


def test_a_launcher_that_sources_shared_flags_and_evals_a_module_launch_reads_the_modules_file(tmp_path):
    write(tmp_path, "proj/acme/train/train.py", """
        import transformers
        from transformers import HfArgumentParser, Trainer, TrainingArguments

        parser = HfArgumentParser((TrainingArguments,))
        (training_args,) = parser.parse_args_into_dataclasses()
        model = transformers.AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
        trainer = Trainer(model=model, args=training_args)
        trainer.train()
    """)
    shared = write(tmp_path, "proj/scripts/train/base_args.sh", """
        export header="torchrun --nproc_per_node 1 \\
        -m acme.train.train"
        export base_args="--learning_rate 2e-05 \\
        --num_train_epochs 4"
    """)
    launcher = write(tmp_path, "proj/scripts/train/warmup.sh", """
        source scripts/train/base_args.sh
        args="$base_args --output_dir ../out/$1 2>&1 | tee train.log"
        eval "$header" "$args"
    """)
    for configs in ([shared], []):  # given, or found from the project's root above the launcher
        plan = analyze(launcher, configs)
        assert (plan.framework, plan.algorithm) == ("pytorch", "sft")
        assert guessed(plan) is None  # the module's file was read: nothing guessed
        lr = plan.settings.learning_rate
        assert (lr.value, lr.source) == (2e-05, "base_args.sh:3")
        assert plan.settings.num_epochs.value == 4


@pytest.mark.parametrize("script, algorithm", [("open_instruct/finetune.py", "sft"),
                                               ("open_instruct/dpo_tune_cache.py", "dpo")])
def test_a_launch_of_a_missing_accelerate_no_trainer_loop_is_a_pytorch_guess_not_trl(tmp_path, script, algorithm):
    launcher = write(tmp_path, "proj/scripts/run.sh", f"""
        accelerate launch --mixed_precision bf16 --num_processes 8 {script} \\
            --model_name_or_path allenai/tulu-2-7b \\
            --use_slow_tokenizer \\
            --per_device_train_batch_size 1 \\
            --learning_rate 5e-7 \\
            --num_train_epochs 3 \\
            --with_tracking
    """)
    plan = analyze(launcher, [])
    assert (plan.framework, plan.algorithm) == ("pytorch", algorithm)
    assert "no_trainer" in guessed(plan)
    assert plan.settings.learning_rate.value == 5e-7


def test_a_missing_no_trainer_loop_handed_only_a_yaml_is_known_by_the_yaml_keys(tmp_path):
    config = write(tmp_path, "proj/configs/sft.yaml", """
        model_name_or_path: meta-llama/Llama-2-7b-hf
        use_slow_tokenizer: true
        learning_rate: 1.0e-04
        num_train_epochs: 5
    """)
    launcher = write(tmp_path, "proj/scripts/run.sh", """
        accelerate launch --num_processes 2 open_instruct/finetune.py "$2"
    """)
    plan = analyze(launcher, [config])
    assert (plan.framework, plan.algorithm) == ("pytorch", "sft") and guessed(plan) is not None


def test_a_script_handing_its_run_to_a_trainer_module_of_its_own_reads_that_module_from_disk(tmp_path):
    write(tmp_path, "proj/grpo.py", """
        import torch

        class GRPO:
            def __init__(self, model, group_size=8, lr=5e-6):
                self.model, self.group_size = model, group_size
                self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr)

            def train(self):
                for step in range(100):
                    out = self.model.generate(prompts, num_return_sequences=self.group_size)
                    rewards = reward(out)
                    advantages = (rewards - rewards.mean()) / rewards.std()
                    loss = -(advantages * logps).mean()
                    loss.backward()
                    self.optimizer.step()
    """)
    script = write(tmp_path, "proj/train.py", """
        from transformers import AutoModelForCausalLM
        from grpo import GRPO

        model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")
        trainer = GRPO(model, group_size=8)
        trainer.train()
    """)
    plan = analyze(script, [])
    assert (plan.framework, plan.algorithm) == ("pytorch", "grpo")
    assert plan.settings.base_model.value == "Qwen/Qwen2.5-0.5B-Instruct"


def test_a_loop_calling_a_preference_loss_it_imports_and_a_scalar_head_on_pairs(tmp_path):
    kto = write(tmp_path, "kto/train_kto.py", """
        import torch
        from transformers import AutoModelForCausalLM
        from src.dpo.loss import sequence_logps, kto_loss

        model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
        optimizer = torch.optim.AdamW(model.parameters(), lr=5e-6)
        for batch in loader:
            des, undes, kl = kto_loss(sequence_logps(model(batch).logits, batch), ref, beta=0.1)
            loss = torch.cat([des, undes]).mean()
            loss.backward()
            optimizer.step()
    """)
    assert analyze(kto, []).algorithm == "kto"
    rm = write(tmp_path, "rm/train_rm.py", """
        import torch.nn as nn
        from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments

        model = AutoModelForSequenceClassification.from_pretrained("meta-llama/Llama-3.1-8B", num_labels=1)

        class PairTrainer(Trainer):
            def compute_loss(self, model, inputs):
                chosen, rejected = model(**inputs["chosen"]).logits, model(**inputs["rejected"]).logits
                return -nn.functional.logsigmoid(chosen - rejected).mean()

        trainer = PairTrainer(model=model, args=TrainingArguments(output_dir="out", learning_rate=2e-6))
        trainer.train()
    """)
    assert analyze(rm, []).algorithm == "reward_model"


def test_a_launcher_sourcing_the_users_shell_setup_never_reads_it(tmp_path, monkeypatch):
    home = tmp_path / "home"
    write(home, ".bashrc", """
        #!/bin/bash
        export LR=9e-9
    """)
    monkeypatch.setenv("HOME", str(home))
    write(tmp_path, "proj/train.py", SFT_LOOP)
    launcher = write(tmp_path, "proj/run.sh", """
        source ~/.bashrc
        python train.py --model_path Qwen/Qwen2.5-0.5B --lr ${LR:-2e-5} --epochs 1
    """)
    plan = analyze(launcher, [])
    assert plan.settings.learning_rate.value == 2e-5  # the machine's value stays the machine's


def test_a_launch_of_a_missing_alpaca_style_trainer_script_is_a_pytorch_guess(tmp_path):
    launcher = write(tmp_path, "proj/scripts/sft.sh", """
        torchrun --nproc_per_node 4 train.py \\
            --model_name_or_path meta-llama/Llama-2-7b-hf \\
            --data_path ./alpaca_data.json \\
            --model_max_length 2048 \\
            --per_device_train_batch_size 4 \\
            --learning_rate 2e-5 \\
            --num_train_epochs 3
    """)
    plan = analyze(launcher, [])
    assert (plan.framework, plan.algorithm) == ("pytorch", "sft")
    assert "transformers' Trainer" in guessed(plan)
    s = plan.settings
    assert (s.max_seq_length.value, s.dataset.value, s.learning_rate.value) == (2048, "./alpaca_data.json", 2e-5)


@pytest.mark.parametrize("folder, flags, algorithm", [
    ("step1_supervised_finetuning", "--lora_dim 128", "sft"),
    ("step2_reward_model_finetuning", "--num_padding_at_beginning 1", "reward_model"),
    ("step3_rlhf_finetuning", "--critic_model_name_or_path $2 --ppo_epochs 1", "ppo"),  # flags before folders
])
def test_deepspeed_chat_style_launchers_of_a_missing_main_are_pytorch_guesses_named_by_flags_or_folder(
        tmp_path, folder, flags, algorithm):
    launcher = write(tmp_path, f"training/{folder}/training_scripts/run.sh", f"""
        OUTPUT=$1
        deepspeed main.py \\
            --data_path Dahoas/rm-static \\
            --model_name_or_path facebook/opt-1.3b \\
            --per_device_training_batch_size 8 \\
            --max_seq_len 512 \\
            --learning_rate 9.65e-6 \\
            --num_warmup_steps 0 \\
            --zero_stage 2 \\
            --deepspeed {flags} \\
            --output_dir $OUTPUT
    """)
    plan = analyze(launcher, [])
    assert (plan.framework, plan.algorithm) == ("pytorch", algorithm)
    assert guessed(plan) is not None
    assert plan.settings.per_device_batch_size.value == 8 and plan.settings.max_seq_length.value == 512


def test_a_missing_scripts_flag_naming_the_objective_and_empty_quoted_values_left_to_fill(tmp_path):
    launcher = write(tmp_path, "rlhf/run.sh", """
        MODEL_PATH=""
        DATA_PATH=""
        CUDA_VISIBLE_DEVICES=0,1 accelerate launch rlhf/train_rlhf.py \\
            --model_name_or_path "$MODEL_PATH" \\
            --dataset_name "$DATA_PATH" \\
            --rlhf_type "DPO" \\
            --per_device_train_batch_size 2 \\
            --learning_rate 1e-5
    """)
    plan = analyze(launcher, [])
    assert (plan.framework, plan.algorithm) == ("trl", "dpo")
    s = plan.settings
    assert (s.base_model.value, s.base_model.source) == ("$MODEL_PATH", "run.sh:1")  # what the user fills
    assert (s.dataset.value, s.dataset.source) == ("$DATA_PATH", "run.sh:2")


def test_a_launched_main_that_hands_its_run_to_a_pipeline_module_and_a_plain_config_class(tmp_path):
    write(tmp_path, "proj/train/pipeline.py", """
        from trl import GRPOConfig, GRPOTrainer, TrlParser

        def main(training_args):
            GRPOTrainer(model="Qwen/Qwen2.5-3B-Instruct", reward_funcs=[format_reward], args=training_args).train()
    """)
    write(tmp_path, "proj/main.py", """
        from train.pipeline import main

        if __name__ == "__main__":
            main(parse())
    """)
    launcher = write(tmp_path, "proj/start.sh", """
        poetry run accelerate launch --num_processes 1 main.py --config grpo.yaml
    """)
    plan = analyze(launcher, [])
    assert (plan.framework, plan.algorithm) == ("trl", "grpo")

    write(tmp_path, "loop/config.py", """
        class Config:
            gpt_model = "Qwen/Qwen1.5-0.5B-Chat"
            data_path = "data/train_data.json"
            epochs = 3
            lr = 0.001
            beta = 0.1
    """)
    write(tmp_path, "loop/dpo.py", """
        import torch.nn.functional as F

        class DPO:
            def __init__(self, model, opt, config):
                self.model, self.opt, self.beta = model, opt, config.beta

            def train(self, chosen, rejected):
                loss = -F.logsigmoid(self.beta * (chosen - rejected)).mean()
                loss.backward()
                self.opt.step()
    """)
    script = write(tmp_path, "loop/main.py", """
        from torch.optim import Adam
        from config import Config
        from dpo import DPO

        config = Config()
        model = load(config.gpt_model)
        opt = Adam(model.parameters(), lr=config.lr)
        trainer = DPO(model, opt, config)
        for epoch in range(config.epochs):
            trainer.train(chosen, rejected)
    """)
    plan = analyze(script, [])
    s = plan.settings
    assert (plan.framework, plan.algorithm) == ("pytorch", "dpo")
    assert (s.learning_rate.value, s.learning_rate.source) == (0.001, "config.py:5")
    assert (s.beta.value, s.dataset.value) == (0.1, "data/train_data.json")


@pytest.mark.parametrize("command, flags, algorithm", [
    ("torchrun --standalone --nnodes=1 --nproc-per-node=1 main.py", "--max_source_length 64 --predict_with_generate "
     "--pre_seq_len 128", "sft"),  # a Seq2SeqTrainer script copied from transformers' examples
    ("torchrun --nnodes 1 --nproc_per_node 4 ./src/train/finetuning.py", "--use_peft --peft_method lora "
     "--batch_size_training 2 --enable_fsdp True", "sft"),  # llama-recipes' hand-written loop
])
def test_launches_of_missing_trainer_and_llama_recipes_scripts_are_pytorch_guesses(tmp_path, command, flags, algorithm):
    launcher = write(tmp_path, "proj/run.sh", f"""
        {command} \\
            --model_name_or_path THUDM/chatglm2-6b \\
            --learning_rate 2e-2 \\
            {flags}
    """)
    plan = analyze(launcher, [])
    assert (plan.framework, plan.algorithm) == ("pytorch", algorithm) and guessed(plan) is not None


def test_a_script_under_a_folder_only_the_machine_knows_is_still_found_and_getopts_values_are_the_callers(tmp_path):
    write(tmp_path, "proj/src/trainers/kto_trainer.py", """
        from trl import KTOConfig, KTOTrainer

        trainer = KTOTrainer(model="gpt2", args=KTOConfig(output_dir="out"), train_dataset=data)
        trainer.train()
    """)
    launcher = write(tmp_path, "proj/scripts/train_kto.sh", """
        export PROJECT_DIR=$(pwd)
        while getopts "m:" opt; do
          case $opt in
            m) MODEL=$OPTARG ;;
          esac
        done
        python $PROJECT_DIR/src/trainers/kto_trainer.py --model_name_or_path "$MODEL" --learning_rate 1e-3
    """)
    plan = analyze(launcher, [])
    assert (plan.framework, plan.algorithm) == ("trl", "kto")
    assert guessed(plan) is None  # the script was found and read
    assert plan.settings.base_model.value == "gpt2"  # the code's own; "$OPTARG" is only the caller's -m option


def test_a_trainer_whose_loss_is_a_kl_to_a_teacher_through_the_projects_own_function_is_distillation(tmp_path):
    script = write(tmp_path, "kd/train.py", """
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
        from utils import compute_fkl

        class KDTrainer(Trainer):
            def compute_loss(self, model, inputs, return_outputs=False):
                logits = model(**inputs).logits
                teacher_logits = self.teacher_model(**inputs).logits
                return compute_fkl(logits, teacher_logits, inputs["labels"], temp=2.0)

        model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")
        KDTrainer(model=model, args=TrainingArguments(output_dir="out")).train()
    """)
    assert analyze(script, []).algorithm == "distillation"


@pytest.mark.parametrize("script, framework, algorithm", [("src/train_sft.py", "pytorch", "sft"),
                                                          ("src/train_reward.py", "pytorch", "reward_model"),
                                                          ("src/train_dpo.py", "trl", "dpo")])
def test_a_missing_script_with_deepspeeds_own_argparse_flags_is_a_hand_written_loop_unless_named_for_dpo(
        tmp_path, script, framework, algorithm):
    # --deepspeed_config / --train_batch_size / --num_epochs are no TrainingArguments fields: not a TRL
    # script, though --model_name_or_path is. A DPO script of this family subclasses TRL's DPOTrainer.
    launcher = write(tmp_path, "proj/examples/train.sh", f"""
        MAIN=$ROOT/Code/RLHF/{script}
        deepspeed $MAIN \\
          --model_name_or_path /models/chatglm2-6b \\
          --train_filename train_data_v1.jsonl \\
          --learning_rate 1e-5 \\
          --train_batch_size 8 \\
          --gradient_accumulation_steps 8 \\
          --num_epochs 5 \\
          --deepspeed_config stage-3.json
    """)
    plan = analyze(launcher, [])
    assert (plan.framework, plan.algorithm) == (framework, algorithm)
    assert "deepspeed_config" in guessed(plan)  # a guess either way, and it says why
    assert plan.settings.dataset.value == "train_data_v1.jsonl"


def test_an_evaluation_run_after_the_training_does_not_lend_it_its_flags(tmp_path):
    write(tmp_path, "proj/train_grpo.py", """
        from trl import GRPOConfig, GRPOTrainer, ModelConfig, TrlParser

        parser = TrlParser((GRPOConfig, ModelConfig))
        training_args, model_args = parser.parse_args_and_config()
        trainer = GRPOTrainer(model=model_args.model_name_or_path, args=training_args, reward_funcs=[])
        trainer.train()
    """)
    launcher = write(tmp_path, "proj/scripts/run.slurm", """
        accelerate launch --config_file configs/accelerate.yaml train_grpo.py \\
          --model_name_or_path Qwen/Qwen2.5-1.5B-Instruct \\
          --output_dir outputs/grpo-run
        python eval_gsm8k.py --model_name_or_path outputs/grpo-run --max_samples 100
    """)
    plan = analyze(launcher, [tmp_path / "proj/train_grpo.py"])
    assert plan.settings.base_model.value == "Qwen/Qwen2.5-1.5B-Instruct"
    assert plan.settings.base_model.source == "run.slurm:2"


def test_the_dpo_reference_layouts_model_archive_is_the_checkpoint_the_policy_starts_from(tmp_path):
    # `python -u train.py model=pythia28 loss=dpo model.archive=.../policy.pt`: the group names a size, the
    # archive is the SFT checkpoint the run trains from
    launcher = write(tmp_path, "proj/scripts/run_dpo.sh", """
        python -u train.py model=pythia28 datasets=[hh] loss=dpo loss.beta=0.1 batch_size=64 model.archive=.cache/sft/LATEST/policy.pt
    """)
    plan = analyze(launcher, [])
    assert plan.algorithm == "dpo"
    assert plan.settings.base_model.value == ".cache/sft/LATEST/policy.pt"
    assert plan.settings.beta.value == 0.1


def test_a_wrappers_own_argparse_follows_the_framework_its_launcher_links_to(tmp_path):
    # `--lr --epochs --batch_size --model` are no TrainingArguments fields: a wrapper's own argparse (often around
    # TRL's trainers); the launcher's link to the framework it wraps says which, and the script's name the algorithm
    launcher = write(tmp_path, "proj/launch.sh", """
        # This reproduces https://github.com/volcengine/verl/blob/main/examples/grpo_trainer/run_qwen3-8b.sh
        python run_grpo.py --model Qwen/Qwen3-8B --dataset openai/gsm8k --epochs 15 --lr 1e-6 --batch_size 256 \\
            --num_generations 5 --kl_coef 0.001
    """)
    plan = analyze(launcher, [])
    assert (plan.framework, plan.algorithm) == ("verl", "grpo")
    assert "links to volcengine/verl" in guessed(plan) and "--config run_grpo.py" in guessed(plan)
    assert plan.settings.base_model.value == "Qwen/Qwen3-8B" and plan.settings.learning_rate.value == 1e-6
    assert plan.settings.num_generations.value == 5


def test_a_projects_own_entry_point_given_tinker_cookbooks_chz_arguments(tmp_path):
    launcher = write(tmp_path, "proj/scripts/train_rl.sh", """
        MODEL="${1:-meta-llama/Llama-3.1-8B-Instruct}"
        python -m src.train \\
            model_name="$MODEL" \\
            groups_per_batch=100 \\
            group_size=4 \\
            learning_rate=1e-5 \\
            behavior_if_log_dir_exists=ask
    """)
    plan = analyze(launcher, [])
    assert (plan.framework, plan.algorithm) == ("tinker", "grpo")
    s = plan.settings
    assert (s.base_model.value, s.global_batch_size.value, s.num_generations.value) == (
        "meta-llama/Llama-3.1-8B-Instruct", 100, 4)
    assert any("src.train" in c.source for c in plan.constructs)


def test_uv_run_of_a_module_and_a_module_filed_under_a_frameworks_name(tmp_path):
    # `uv run --isolated --extra verl -m pkg.verl_main_ppo overrides...`: uv runs the module itself
    verl = write(tmp_path, "a/run.sh", """
        MODEL=Qwen/Qwen3-4B-Instruct-2507
        uv run --isolated --extra verl --env-file .env -m skyrl_agent.integrations.verl.verl_main_ppo \\
            algorithm.adv_estimator=grpo \\
            actor_rollout_ref.model.path=$MODEL \\
            actor_rollout_ref.rollout.n=8
    """)
    plan = analyze(verl, [])
    assert (plan.framework, plan.algorithm) == ("verl", "grpo")
    assert plan.settings.base_model.value == "Qwen/Qwen3-4B-Instruct-2507"
    # chz arguments to a module named for Tinker (was a refusal)
    tinker = write(tmp_path, "b/run.sh", """
        uv run --isolated --extra tinker -m skyrl_agent.integrations.tinker.tinker_train \\
            model_name="Qwen/Qwen3-4B-Instruct-2507" batch_size=512 group_size=8 lora_rank=0 learning_rate=4e-5
    """)
    plan = analyze(tinker, [])
    assert (plan.framework, plan.algorithm) == ("tinker", "grpo")
    assert plan.settings.global_batch_size.value == 512 and plan.settings.num_generations.value == 8
    assert plan.settings.lora is None  # rank 0: a full fine-tune, no adapter
    # `python -m training.trl.grpo --model_path ...`: the project files its entry point under TRL
    trl = write(tmp_path, "c/train.sh", """
        PYTHONPATH=. python -m training.trl.grpo --model_path /models/sft --num_epochs 2 --lr 5e-7
    """)
    plan = analyze(trl, [])
    assert (plan.framework, plan.algorithm) == ("trl", "grpo")
    assert "its path names trl" in guessed(plan)


def test_run_clms_block_size_says_a_transformers_trainer_script(tmp_path):
    launcher = write(tmp_path, "proj/train.sh", """
        torchrun --nproc_per_node 4 -m train \\
            --model_name_or_path Qwen/Qwen2-1.5B \\
            --per_device_train_batch_size 4 \\
            --train_file /data/corpus \\
            --block_size 4096 \\
            --learning_rate 2e-5
    """)
    plan = analyze(launcher, [])
    assert (plan.framework, plan.algorithm) == ("pytorch", "sft")
    assert "block_size" in guessed(plan)


def test_an_entry_script_fills_a_config_class_its_own_module_declares_and_trains_with(tmp_path):
    # the module declares the defaults; the entry script builds the class from its argparse flags, and
    # its docstring's first usage command (a `\\`-continued one) stands in for the command line
    write(tmp_path, "proj/src/training/dpo.py", """
        from dataclasses import dataclass
        from trl import DPOConfig, DPOTrainer

        @dataclass
        class DPOTrainingConfig:
            sft_checkpoint: str = "gpt2"
            beta: float = 0.5
            learning_rate: float = 1e-5
            per_device_train_batch_size: int = 16
            max_prompt_length: int = 256

        def train_dpo(cfg: DPOTrainingConfig):
            args = DPOConfig(output_dir="out", beta=cfg.beta, learning_rate=cfg.learning_rate,
                             per_device_train_batch_size=cfg.per_device_train_batch_size,
                             max_prompt_length=cfg.max_prompt_length)
            DPOTrainer(model=cfg.sft_checkpoint, args=args, train_dataset=None).train()
    """)
    script = write(tmp_path, "proj/scripts/train_dpo.py", '''
        """Train the DPO policy.

        python scripts/train_dpo.py \\\\
            --sft_checkpoint checkpoints/sft \\\\
            --beta 0.1
        """
        import argparse
        from src.training.dpo import DPOTrainingConfig, train_dpo

        p = argparse.ArgumentParser()
        p.add_argument("--sft_checkpoint", default="checkpoints/base")
        p.add_argument("--beta", type=float, default=0.2)
        p.add_argument("--lr", type=float, default=5e-7)
        p.add_argument("--batch_size", type=int, default=2)
        args = p.parse_args()
        train_dpo(DPOTrainingConfig(sft_checkpoint=args.sft_checkpoint, beta=args.beta, learning_rate=args.lr,
                                    per_device_train_batch_size=args.batch_size))
    ''')
    s = analyze(script, []).settings
    assert (s.beta.value, s.beta.source) == (0.1, "train_dpo.py:5")  # the usage command's flag
    assert (s.base_model.value, s.base_model.source) == ("checkpoints/sft", "train_dpo.py:4")
    assert (s.learning_rate.value, s.learning_rate.source) == (5e-07, "train_dpo.py:13")  # argparse default
    assert s.per_device_batch_size.value == 2
    assert (s.max_prompt_length.value, s.max_prompt_length.source) == (256, "../src/training/dpo.py:10")


def test_reward_functions_and_models_a_project_builds_for_its_trl_trainer(tmp_path):
    script = write(tmp_path, "grpo/train.py", """
        import argparse, os
        from transformers import AutoModelForCausalLM
        from trl import GRPOConfig, GRPOTrainer

        parser = argparse.ArgumentParser()
        parser.add_argument("--model-path", default=os.path.expanduser("Qwen/Qwen2.5-3B-Instruct"))
        args = parser.parse_args()

        def make_reward_fn(timeout):
            def reward_fn(completions, **kwargs):
                return [float(len(c) < timeout) for c in completions]
            return reward_fn

        def load_base_model(model_path, adapter_path=None):
            return AutoModelForCausalLM.from_pretrained(model_path, torch_dtype="auto")

        reward_fn = make_reward_fn(30)
        model = load_base_model(args.model_path)
        GRPOTrainer(model=model, reward_funcs=reward_fn, args=GRPOConfig(output_dir="o"), train_dataset=None).train()
    """)
    s = analyze(script, []).settings
    assert s.reward_functions.value == ["reward_fn"]
    assert (s.base_model.value, s.base_model.source) == ("Qwen/Qwen2.5-3B-Instruct", "train.py:6")
    # a list bound to a name is cited where it is written; a project's loader handed a data file is the data
    listed = write(tmp_path, "listed/grpo.py", """
        import json
        from datasets import Dataset
        from trl import GRPOConfig, GRPOTrainer

        def fmt(completions, **kwargs):
            return [1.0 for _ in completions]

        def correct(completions, **kwargs):
            return [0.0 for _ in completions]

        reward_funcs = [
            fmt,
            correct]

        def load_data(path):
            return Dataset.from_list(json.load(open(path)))

        def main():
            data = load_data("./data/train_pairs.json")
            GRPOTrainer(model="Qwen/Qwen2.5-0.5B", reward_funcs=reward_funcs, args=GRPOConfig(output_dir="o"),
                        train_dataset=data).train()
    """)
    s = analyze(listed, []).settings
    assert (s.reward_functions.value, s.reward_functions.source) == (["fmt", "correct"], "grpo.py:11")
    assert s.dataset.value == "./data/train_pairs.json"
    # a reward model a loader built is no reward function
    scored = write(tmp_path, "scored/online.py", """
        from transformers import AutoModelForSequenceClassification
        from trl import OnlineDPOConfig, OnlineDPOTrainer

        reward_model = AutoModelForSequenceClassification.from_pretrained("OpenAssistant/reward-model-deberta")
        OnlineDPOTrainer(model="Qwen/Qwen2.5-0.5B", reward_funcs=reward_model, args=OnlineDPOConfig(output_dir="o"),
                         train_dataset=None).train()
    """)
    assert analyze(scored, []).settings.reward_functions is None


def test_a_bradley_terry_loop_through_the_projects_own_loss_loader_and_data_builder(tmp_path):
    write(tmp_path, "proj/src/training/reward.py", """
        from dataclasses import dataclass
        from torch.optim import AdamW
        from src.models.reward_model import GPT2RewardModel, preference_loss
        from src.data import build_preference_dataloader

        @dataclass
        class RewardConfig:
            sft_checkpoint: str = "gpt2"
            batch_size: int = 16
            learning_rate: float = 1e-4

        def train_reward_model(cfg: RewardConfig):
            model = GPT2RewardModel.from_sft_checkpoint(cfg.sft_checkpoint)
            loader = build_preference_dataloader("train", batch_size=cfg.batch_size)
            optimizer = AdamW(model.parameters(), lr=cfg.learning_rate)
            for batch in loader:
                r_w, r_l = model(batch["chosen"]).rewards, model(batch["rejected"]).rewards
                loss, acc = preference_loss(r_w, r_l)
                loss.backward()
                optimizer.step()
    """)
    script = write(tmp_path, "proj/scripts/train_reward_model.py", """
        import argparse
        from src.training.reward import RewardConfig, train_reward_model

        p = argparse.ArgumentParser()
        p.add_argument("--sft_checkpoint", default="checkpoints/sft")
        p.add_argument("--batch_size", type=int, default=4)
        args = p.parse_args()
        train_reward_model(RewardConfig(sft_checkpoint=args.sft_checkpoint, batch_size=args.batch_size))
    """)
    plan = analyze(script, [])
    assert (plan.framework, plan.algorithm) == ("pytorch", "reward_model")  # no reference, no beta: not DPO
    assert (plan.settings.base_model.value, plan.settings.base_model.source) == ("checkpoints/sft",
                                                                              "train_reward_model.py:5")
    assert plan.settings.per_device_batch_size.value == 4
    assert plan.settings.learning_rate.value == 1e-4


def test_settings_a_script_imports_from_its_config_module(tmp_path):
    write(tmp_path, "smol/config.py", """
        SFT_CONFIG = dict(
            max_length=512,
            per_device_train_batch_size=32,
            learning_rate=2e-4,
        )
        LORA_CONFIG = dict(r=16, lora_alpha=32)
    """)
    script = write(tmp_path, "smol/train_sft.py", """
        from peft import LoraConfig
        from trl import SFTConfig, SFTTrainer
        from config import SFT_CONFIG, LORA_CONFIG

        def train_sft(model, data):
            SFTTrainer(model=model, train_dataset=data, peft_config=LoraConfig(**LORA_CONFIG),
                       args=SFTConfig(output_dir="out", **SFT_CONFIG)).train()
    """)
    s = analyze(script, []).settings
    assert (s.learning_rate.value, s.learning_rate.source) == (2e-4, "config.py:4")
    assert (s.per_device_batch_size.value, s.max_seq_length.value) == (32, 512)
    assert (s.lora.value.rank, s.lora.source) == (16, "config.py:6")
    # a constant the loop only prints, or never imports, is stated but not used
    write(tmp_path, "tk/config.py", """
        MAX_SEQUENCE_LENGTH = 16384
        BASE_MODEL = "Qwen/Qwen3-8B-Base"
        LORA_RANK = 32
        LEARNING_RATE = 1e-5
        SAMPLING_MAX_TOKENS = 2048
    """)
    loop = write(tmp_path, "tk/train.py", """
        import tinker
        from tinker import types
        from config import BASE_MODEL, LORA_RANK, LEARNING_RATE, SAMPLING_MAX_TOKENS

        print(f"lr {LEARNING_RATE}")
        client = tinker.ServiceClient().create_lora_training_client(base_model=BASE_MODEL, rank=LORA_RANK)
        for datum in data:
            client.forward_backward([datum], loss_fn="cross_entropy").result()
        sampler = client.save_weights_and_get_sampling_client("final")
        sampler.sample(prompt=p, sampling_params=types.SamplingParams(max_tokens=SAMPLING_MAX_TOKENS), num_samples=1)
    """)
    plan = analyze(loop, [])
    s = plan.settings
    assert (plan.framework, plan.algorithm) == ("tinker", "sft")
    assert (s.base_model.value, s.base_model.source, s.lora.value.rank) == ("Qwen/Qwen3-8B-Base", "config.py:2", 32)
    assert s.learning_rate is None and s.max_seq_length is None and s.max_response_length is None


def test_a_yaml_driven_loop_whose_trainer_lives_in_the_projects_package(tmp_path):
    write(tmp_path, "proj/configs/grpo.yaml", """
        policy:
          name_or_path: checkpoints/sft
        reward_model:
          name_or_path: checkpoints/reward_model
        data:
          name: Anthropic/hh-rlhf
        train:
          batch_size: 8
          lr: 1.0e-6
        kl:
          init_coef: 0.05
    """)
    write(tmp_path, "proj/rlhf/algorithms/grpo_trainer.py", '''
        """GRPO: group-relative policy optimisation (critic-free)."""
        import torch
        from torch.utils.data import DataLoader

        class GRPOTrainer:
            def __init__(self, policy, reward_model, cfg):
                self.policy, self.reward_model, self.cfg = policy, reward_model, cfg

            def train(self, prompts):
                opt = torch.optim.AdamW(self.policy.parameters(), lr=self.cfg.train.lr)
                for batch in DataLoader(prompts, batch_size=self.cfg.train.batch_size):
                    out = self.policy.generate(batch, num_return_sequences=4)
                    rewards = self.reward_model(out)
                    advantages = (rewards - rewards.mean()) / rewards.std()
                    loss = -(advantages * self.policy.logps(out)).mean() + self.cfg.kl.init_coef * kl(out)
                    loss.backward()
                    opt.step()
    ''')
    script = write(tmp_path, "proj/scripts/train_grpo.py", """
        import argparse, yaml
        from rlhf.algorithms import GRPOTrainer
        from rlhf.models import ActorCriticPolicy, RewardModel

        args = argparse.ArgumentParser().parse_args()
        cfg = yaml.safe_load(open("configs/grpo.yaml"))
        policy = ActorCriticPolicy.from_pretrained_lm(cfg.policy.name_or_path)
        reward_model = RewardModel.from_pretrained(cfg.reward_model.name_or_path)
        prompts = load_prompts(cfg.data.name)
        GRPOTrainer(policy, reward_model, cfg).train(prompts)
    """)
    plan = analyze(script, [tmp_path / "proj/configs/grpo.yaml"])
    s = plan.settings
    assert (plan.framework, plan.algorithm) == ("pytorch", "grpo")  # "critic-free" names no critic
    assert (s.base_model.value, s.base_model.source) == ("checkpoints/sft", "../configs/grpo.yaml:2")
    assert (s.per_device_batch_size.value, s.per_device_batch_size.source) == (8, "../configs/grpo.yaml:8")
    assert s.dataset.value == "Anthropic/hh-rlhf"
    assert s.kl_coef.value == 0.05


def test_launch_layouts_newer_and_older_than_the_readers_knew(tmp_path):
    # verl's later layout nests the reward under `reward.`; the file is cited where it is named
    verl = write(tmp_path, "v/run.sh", """
        python3 -m verl.trainer.main_ppo \\
            algorithm.adv_estimator=grpo \\
            actor_rollout_ref.model.path=Qwen/Qwen3-4B \\
            reward.custom_reward_function.path=/work/rewards/score.py \\
            reward.custom_reward_function.name=compute_score
    """)
    s = analyze(verl, []).settings
    assert (s.reward_functions.value, s.reward_functions.source) == (["/work/rewards/score.py:compute_score"], "run.sh:4")
    # EasyR1's layout with no estimator stated: its own default, grpo
    easyr1 = write(tmp_path, "e/run.sh", """
        python3 -m verl.trainer.main \\
            config=examples/config.yaml \\
            worker.actor.model.model_path=Qwen/Qwen2.5-7B \\
            worker.rollout.n=8
    """)
    assert analyze(easyr1, []).algorithm == "grpo"
    # a TRL GRPO config built from a dict: its `beta` is the KL coefficient, 0.0 stated
    write(tmp_path, "t/cfg.yaml", """
        training:
          learning_rate: 5.0e-6
          beta: 0.0
    """)
    trl = write(tmp_path, "t/train_grpo.py", """
        import yaml
        from trl import GRPOConfig, GRPOTrainer

        config = yaml.safe_load(open("cfg.yaml"))
        training = config.get("training", {})
        kwargs = {"learning_rate": float(training.get("learning_rate", 1e-6)), "beta": float(training.get("beta", 0.04))}
        GRPOTrainer(model="Qwen/Qwen2.5-0.5B", reward_funcs=[], args=GRPOConfig(**{k: v for k, v in kwargs.items()}),
                    train_dataset=None).train()
    """)
    s = analyze(trl, [tmp_path / "t/cfg.yaml"]).settings
    assert (s.kl_coef.value, s.kl_coef.source) == (0.0, "cfg.yaml:3")


def test_a_trl_config_set_after_it_is_built_and_one_read_from_config_sections(tmp_path):
    # fields set on the config object after it is built, by setattr or by assignment, are said last
    script = write(tmp_path, "s/train_dpo.py", """
        from datasets import load_dataset
        from trl import DPOConfig, DPOTrainer

        training_args = DPOConfig(output_dir="out", max_length=1024)
        setattr(training_args, 'per_device_train_batch_size', 4)
        setattr(training_args, 'max_length', 512)
        training_args.num_train_epochs = 3
        DPOTrainer(model="Qwen/Qwen2.5-0.5B-Instruct", args=training_args,
                   train_dataset=load_dataset("trl-lib/hh-rlhf-helpful-base", split="train")).train()
    """)
    s = analyze(script, []).settings
    assert (s.per_device_batch_size.value, s.per_device_batch_size.source) == (4, "train_dpo.py:5")
    assert (s.max_seq_length.value, s.max_seq_length.source) == (512, "train_dpo.py:6")
    assert (s.num_epochs.value, s.num_epochs.source) == (3, "train_dpo.py:7")
    assert ledger_of(analyze(script, []))["per_device_train_batch_size"] == 4
    # `conf = config.get("sft_training", config.get("training", {}))`, then `conf.get(key, default)`
    write(tmp_path, "y/config.yaml", """
        model:
          name_or_path: Qwen/Qwen2.5-1.5B-Instruct
        sft_training:
          learning_rate: 2.0e-5
          batch_size: 8
    """)
    yaml_script = write(tmp_path, "y/train_sft.py", """
        import yaml
        from trl import SFTConfig, SFTTrainer

        def load_config(path):
            return yaml.safe_load(open(path))

        config = load_config("config.yaml")
        conf = config.get("sft_training", config.get("training", {}))
        args = SFTConfig(output_dir="o", learning_rate=float(conf.get("learning_rate", 1e-4)),
                         per_device_train_batch_size=conf.get("batch_size", 4),
                         max_seq_length=conf.get("max_seq_length", 1024))
        SFTTrainer(model=config["model"]["name_or_path"], args=args, train_dataset=None).train()
    """)
    s = analyze(yaml_script, [tmp_path / "y/config.yaml"]).settings
    assert (s.per_device_batch_size.value, s.per_device_batch_size.source) == (8, "config.yaml:5")
    assert (s.learning_rate.value, s.learning_rate.source) == (2e-5, "config.yaml:4")
    assert (s.max_seq_length.value, s.max_seq_length.source) == (1024, "train_sft.py:11")  # the default
    # TRL's first PPOTrainer(config, model, ...) and a parquet folder given as data_dir
    legacy = write(tmp_path, "p/ppo.py", """
        from datasets import load_dataset
        from trl import AutoModelForCausalLMWithValueHead, PPOConfig, PPOTrainer

        data_folder = "/data/imdb/plain_text"
        imdb = load_dataset(path="parquet", data_dir=data_folder, data_files={"train": "train-0.parquet"})
        model = AutoModelForCausalLMWithValueHead.from_pretrained("/models/gemma-2b-it")
        config = PPOConfig(batch_size=1, mini_batch_size=1)
        ppo_trainer = PPOTrainer(config, model, ref_model=None, tokenizer=None)
    """)
    s = analyze(legacy, []).settings
    assert (s.dataset.value, s.dataset.source) == ("/data/imdb/plain_text", "ppo.py:4")
    assert s.base_model.value == "/models/gemma-2b-it"


def test_a_module_launch_alone_a_data_file_read_by_hand_and_a_usage_comment_before_main(tmp_path):
    # `python -m pkg.train_rl` with dotted flags, the module not given: the flags are the plan, as a
    # script's would be (an RL loop's train_batch_size counts prompts; `*_prompt_length` is the limit)
    launcher = write(tmp_path, "l/run_rl.sh", """
        export TOKENIZERS_PARALLELISM=false
        python -m mylab.rl.train_rl \\
            --model.name_or_path "Qwen/Qwen2.5-1.5B-Instruct" \\
            --data.dataset_name "openai/gsm8k" \\
            --batch.train_batch_size 32 \\
            --gen.query_prompt_length 384 \\
            --gen.max_new_tokens 256 \\
            --grpo.group_size 8 \\
            --grpo.lr 1e-6
    """)
    plan = analyze(launcher, [])
    assert (plan.framework, plan.algorithm) == ("pytorch", "grpo")
    assert plan.warnings and any("mylab.rl.train_rl" in w.message for w in plan.warnings)
    s = plan.settings
    assert (s.global_batch_size.value, s.global_batch_size.source) == (32, "run_rl.sh:5")
    assert (s.max_prompt_length.value, s.max_prompt_length.source) == (384, "run_rl.sh:6")
    assert (s.num_generations.value, s.learning_rate.value) == (8, 1e-6)
    # too little stated to plan from: still refused, with what to pass
    bare = write(tmp_path, "b/run.sh", "python -m mylab.train --seed 1\n")
    with pytest.raises(MintMigrateError, match="pass the training script it runs with --config"):
        analyze(bare, [])
    # rows read from a JSON file by hand (no datasets loader): the file is the dataset; a config
    # file or an evaluation file opened the same way is not
    sft = write(tmp_path, "s/sft.py", """
        import json
        from datasets import Dataset
        from trl import SFTConfig, SFTTrainer

        with open("ds_config.json") as f:
            ds_config = json.load(f)
        with open("data/qa_pairs.jsonl", "r") as f:
            rows = [json.loads(line) for line in f]
        with open("eval_rows.json") as f:
            held_out = json.load(f)
        SFTTrainer(model="Qwen/Qwen2.5-0.5B", args=SFTConfig(output_dir="o"),
                   train_dataset=Dataset.from_list(rows)).train()
    """)
    s = analyze(sft, []).settings
    assert (s.dataset.value, s.dataset.source) == ("data/qa_pairs.jsonl", "sft.py:7")
    # a launch quoted in a comment above `def main`, after set-up commands on the same line: it runs
    # this file, so its overrides are the example's values; a comment naming another script is not
    loop = write(tmp_path, "t/recipes/weighted_sft.py", """
        import chz
        import tinker
        from tinker_cookbook.supervised.data import conversation_to_datum

        @chz.chz
        class Config:
            model_name: str = "Qwen/Qwen3-8B"
            learning_rate: float = 1e-4
            lora_rank: int = 32

        # python recipes/eval.py model_name=Qwen/Qwen3-4B
        # cd repo && conda activate env; python recipes/weighted_sft.py model_name=Qwen/Qwen3-30B-A3B lora_rank=16
        def main(config: Config):
            client = tinker.ServiceClient().create_lora_training_client(base_model=config.model_name, rank=config.lora_rank)
            rows = [conversation_to_datum(m, None, 512, None) for m in []]

            def weighted_nll(data, logprobs):
                return -sum((lp * 1.0).sum() for lp in logprobs), {}

            client.forward_backward_custom(rows, weighted_nll).result()
            client.optim_step(tinker.AdamParams(learning_rate=config.learning_rate)).result()
    """)
    plan = analyze(loop, [])
    # a custom loss over supervised rows, nothing sampled: supervised fine-tuning
    assert (plan.framework, plan.algorithm) == ("tinker", "sft")
    assert (plan.settings.base_model.value, plan.settings.base_model.source) == ("Qwen/Qwen3-30B-A3B", "weighted_sft.py:12")
    assert plan.settings.lora.value.rank == 16


def test_a_fallback_path_a_get_chain_a_classic_ppo_step_loop_and_a_field_set_before_use(tmp_path):
    # the data file from a `.get` chain on the loaded YAML; a fallback the machine's disk decides is
    # not what the script asks for
    write(tmp_path, "c/run.yaml", """
        model:
          name_or_path: Qwen/Qwen2.5-0.5B-Instruct
        sft:
          data_file: data/pairs.jsonl
    """)
    script = write(tmp_path, "c/train_sft.py", """
        import os
        import yaml
        from datasets import load_dataset
        from trl import SFTConfig, SFTTrainer

        config = yaml.safe_load(open("run.yaml"))
        data_file = config.get("sft", {}).get("data_file", "pairs.json")
        if not os.path.exists(data_file):
            data_file = "backup.jsonl"
        rows = load_dataset("json", data_files=data_file, split="train")
        SFTTrainer(model=config["model"]["name_or_path"], args=SFTConfig(output_dir="o"), train_dataset=rows).train()
    """)
    s = analyze(script, [tmp_path / "c/run.yaml"]).settings
    assert (s.dataset.value, s.dataset.source) == ("data/pairs.jsonl", "run.yaml:4")
    # classic TRL PPO stepped by hand: the loop's bound is the step count, mini_batch_size the
    # per-device batch
    ppo = write(tmp_path, "p/ppo_loop.py", """
        from trl import AutoModelForCausalLMWithValueHead, PPOConfig, PPOTrainer

        TRAIN_STEPS = 40
        model = AutoModelForCausalLMWithValueHead.from_pretrained("gpt2")
        settings = {"mini_batch_size": 2, "batch_size": 8, "learning_rate": 1.4e-5}
        trainer = PPOTrainer(PPOConfig(**settings), model, ref_model=None, tokenizer=None)
        for it in range(TRAIN_STEPS):
            queries, responses, rewards = [], [], []
            trainer.step(queries, responses, rewards)
    """)
    plan = analyze(ppo, [])
    assert plan.algorithm == "ppo"
    assert (plan.settings.max_steps.value, plan.settings.max_steps.source) == (40, "ppo_loop.py:3")
    assert (plan.settings.per_device_batch_size.value, plan.settings.per_device_batch_size.source) == (2, "ppo_loop.py:5")
    # a parsed field overwritten before it is used: the overwrite, which here is computed (unknown),
    # not the field's default
    lora = write(tmp_path, "l/train.py", """
        from dataclasses import dataclass
        from peft import LoraConfig
        from transformers import HfArgumentParser
        from trl import GRPOConfig, GRPOTrainer

        @dataclass
        class LoraArgs:
            modules: str = "all"
            rank: int = 32
            alpha: int = 64

        def linear_names(model):
            return [n for n, _ in model.named_modules()]

        def main():
            lora_args, args = HfArgumentParser((LoraArgs, GRPOConfig)).parse_args_into_dataclasses()
            model = "Qwen/Qwen2.5-0.5B"
            lora_args.modules = linear_names(model)
            peft = LoraConfig(target_modules=lora_args.modules, r=lora_args.rank, lora_alpha=lora_args.alpha)
            GRPOTrainer(model=model, reward_funcs=[], args=args, peft_config=peft, train_dataset=None).train()

        main()
    """)
    s = analyze(lora, []).settings
    assert (s.lora.value.rank, s.lora.value.alpha, s.lora.value.target_modules) == (32, 64, None)


def test_a_dataset_class_of_the_projects_and_per_device_batches_by_other_names(tmp_path):
    # the project's own Dataset class handed a data file: that file is the dataset
    script = write(tmp_path, "d/train_dpo.py", """
        from torch.utils.data import Dataset
        from trl import DPOConfig, DPOTrainer

        class PairsDataset(Dataset):
            def __init__(self, path, tokenizer=None):
                self.rows = open(path).read().splitlines()

        rows = PairsDataset("corpus/pairs_1k.json", tokenizer=None)
        DPOTrainer(model="Qwen/Qwen2.5-0.5B", args=DPOConfig(output_dir="o"), train_dataset=rows).train()
    """)
    s = analyze(script, []).settings
    assert (s.dataset.value, s.dataset.source) == ("corpus/pairs_1k.json", "train_dpo.py:8")
    # handed a folder rather than a file, a Dataset class still names the data
    folder = write(tmp_path, "f/train_sft.py", """
        from trl import SFTConfig, SFTTrainer
        from mydata import ChatDataset

        rows = ChatDataset("/data/corpora/chat_zh", max_len=512)
        SFTTrainer(model="Qwen/Qwen2.5-0.5B", args=SFTConfig(output_dir="o"), train_dataset=rows).train()
    """)
    s = analyze(folder, []).settings
    assert (s.dataset.value, s.dataset.source) == ("/data/corpora/chat_zh", "train_sft.py:4")
    # so may a dataset builder of its own, here through an argparse default
    builder = write(tmp_path, "g/train_grpo.py", """
        import argparse
        from trl import GRPOConfig, GRPOTrainer
        from sqltask.data import build_dataset

        parser = argparse.ArgumentParser()
        parser.add_argument("--corpus-dir", default="data/spider_data")
        args = parser.parse_args()
        rows = build_dataset(args.corpus_dir, limit=200)
        GRPOTrainer(model="Qwen/Qwen2.5-0.5B", reward_funcs=[], args=GRPOConfig(output_dir="o"), train_dataset=rows).train()
    """)
    s = analyze(builder, []).settings
    assert (s.dataset.value, s.dataset.source) == ("data/spider_data", "train_grpo.py:6")
    # `--batch_size` handed to a wrapper of TRL (which has no global batch) is the per-device batch;
    # `--micro_batch` and `--batch_size_per_gpu` are per-device batches by their names
    trl_wrapper = write(tmp_path, "w/run.sh", """
        BATCH="${BATCH:-4}"
        python -m lab.trl.sft --model_name_or_path Qwen/Qwen2.5-0.5B --dataset_name trl-lib/Capybara \\
            --batch_size $BATCH --learning_rate 2e-5
    """)
    plan = analyze(trl_wrapper, [])
    assert plan.framework == "trl"
    assert (plan.settings.per_device_batch_size.value, plan.settings.per_device_batch_size.source) == (4, "run.sh:1")
    own = write(tmp_path, "o/run.sh", "python finetune.py --base_model gpt2 --data_path d.json --micro_batch 8 --lr 1e-4\n")
    assert analyze(own, []).settings.per_device_batch_size.value == 8
    gpu = write(tmp_path, "g/run.sh", "python run_grpo.py --model Qwen/Qwen3-8B --batch_size_per_gpu 2 --num_generations 4 --lr 1e-6\n")
    assert analyze(gpu, []).settings.per_device_batch_size.value == 2
    # run_clm's `--block_size` is the sequence length
    clm = write(tmp_path, "b/run.sh", "python run_clm.py --model_name_or_path gpt2 --train_file t.txt --block_size 1024 "
                "--per_device_train_batch_size 2 --learning_rate 5e-5\n")
    assert analyze(clm, []).settings.max_seq_length.value == 1024


def test_a_reward_file_named_through_a_variable_is_cited_where_the_flag_names_it(tmp_path):
    # `path:function` is made of two keys: it is cited at the key that names the file, not at the
    # variable the key reads (LABELING's reward_functions rule)
    launcher = write(tmp_path, "v/run.sh", """
        REWARD_FILE=./rewards/judge.py
        python3 -m verl.trainer.main_ppo \\
            algorithm.adv_estimator=grpo \\
            data.train_files=train.parquet \\
            actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B \\
            custom_reward_function.path=$REWARD_FILE \\
            custom_reward_function.name=judge
    """)
    s = analyze(launcher, []).settings
    assert (s.reward_functions.value, s.reward_functions.source) == (["./rewards/judge.py:judge"], "run.sh:6")
    openrlhf = write(tmp_path, "o/run.sh", """
        RM=./reward_func.py
        python3 -m openrlhf.cli.train_ppo_ray --pretrain Qwen/Qwen2.5-0.5B --prompt_data d.jsonl \\
            --advantage_estimator group_norm --n_samples_per_prompt 4 \\
            --remote_rm_url $RM
    """)
    s = analyze(openrlhf, []).settings
    assert (s.reward_functions.value, s.reward_functions.source) == (["./reward_func.py:reward_func"], "run.sh:4")


def test_a_script_launched_by_another_machines_path_and_defaults_read_through_an_env_wrapper(tmp_path):
    # `$PY /gpfs/me/proj/src/train.py`: the launched script is the project's src/train.py, checked out
    # here; its dataclass fields default through a wrapper of os.environ.get
    write(tmp_path, "proj/src/train_rl.py", """
        import os
        from dataclasses import dataclass, field

        import tinker

        def _env(key, default=None, cast=str):
            value = os.environ.get(key, default)
            return None if value is None else cast(value)

        @dataclass
        class Config:
            model_name: str = field(default_factory=lambda: _env("RL_MODEL", "Qwen/Qwen3-8B"))
            learning_rate: float = field(default_factory=lambda: _env("RL_LR", 4e-5, float))
            group_size: int = field(default_factory=lambda: _env("RL_GROUP", 8, int))

        def main():
            config = Config()
            client = tinker.ServiceClient().create_lora_training_client(base_model=config.model_name, rank=16)
            sampler = client.save_weights_and_get_sampling_client("s")
            for step in range(10):
                rewards, advantages = [], []
                sampler.sample(prompt=None, num_samples=config.group_size, sampling_params=None).result()
                client.forward_backward([], "importance_sampling").result()
                client.optim_step(tinker.AdamParams(learning_rate=config.learning_rate)).result()

        main()
    """)
    launcher = write(tmp_path, "proj/scripts/run.slurm", """
        #!/bin/bash
        #SBATCH --gres=gpu:1
        BASE=/gpfs/work/someone/proj
        PY=$BASE/envs/rl/bin/python
        $PY $BASE/src/train_rl.py --max-steps 10
    """)
    plan = analyze(launcher, [])
    assert plan.framework == "tinker"
    s = plan.settings
    assert (s.base_model.value, s.base_model.source) == ("Qwen/Qwen3-8B", "../src/train_rl.py:12")
    assert (s.learning_rate.value, s.num_generations.value) == (4e-5, 8)


def test_a_policy_loops_beta_is_its_kl_weight_never_a_dpo_beta(tmp_path):
    loop = write(tmp_path, "grpo_one.py", """
        import torch
        from transformers import AutoModelForCausalLM

        model_path = "Qwen/Qwen2.5-0.5B"
        beta = 0.04
        group_size = 8
        model = AutoModelForCausalLM.from_pretrained(model_path)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-6)

        def grpo_step(logps, ref_logps, advantages):
            kl = torch.exp(ref_logps - logps) - (ref_logps - logps) - 1
            loss = -(torch.exp(logps - logps.detach()) * advantages - beta * kl).mean()
            loss.backward()
            opt.step()

        for step in range(100):
            rewards = torch.randn(group_size)
            grpo_step(torch.zeros(4), torch.zeros(4), (rewards - rewards.mean()) / rewards.std())
    """)
    plan = analyze(loop, [])
    assert plan.algorithm == "grpo"
    assert (plan.settings.kl_coef.value, plan.settings.kl_coef.source) == (0.04, "grpo_one.py:5")
    assert plan.settings.beta is None


def test_a_launcher_in_scripts_names_a_root_config_whose_sections_feed_the_trainer_and_evaluates_after(tmp_path):
    """`bash scripts/run.sh` from the project's root: `--config configs/x.yaml` is found at the root,
    its nested `grpo:` section and its `rewards: [{name: ...}]` list are the run's, `--report_to none`
    stays the word "none", an unpassed `"$@"` adds nothing, and the evaluation under `src/eval/`
    lends the run none of its flags."""
    write(tmp_path, "src/trainers/grpo.py", """
        import argparse
        import yaml
        from trl import GRPOConfig, GRPOTrainer

        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--config", required=True)
            parser.add_argument("--output_dir", default="out")
            parser.add_argument("--report_to", default="wandb")
            args = parser.parse_args()
            cfg = yaml.safe_load(open(args.config))
            grpo_config = GRPOConfig(output_dir=args.output_dir, report_to=args.report_to, **dict(cfg["grpo"]))
            trainer = GRPOTrainer(model=cfg["model_name_or_path"], reward_funcs=build_rewards(cfg), args=grpo_config)
            trainer.train()

        if __name__ == "__main__":
            main()
    """)
    write(tmp_path, "configs/run.yaml", """
        model_name_or_path: Qwen/Qwen2.5-1.5B-Instruct
        rewards:
          - name: correctness
            weight: 1.0
          - name: format
            weight: 0.5
        grpo:
          learning_rate: 1.0e-6
          num_generations: 6
          max_completion_length: 1024
    """)
    launcher = write(tmp_path, "scripts/run.sh", """
        CONFIG="configs/run.yaml"
        REPORT_TO="${REPORT_TO:-none}"
        accelerate launch src/trainers/grpo.py --config "$CONFIG" --output_dir results/run1 --report_to "$REPORT_TO" "$@"
        python src/eval/runner.py --config configs/eval.yaml --output_dir results/eval
    """)
    plan = analyze(launcher, [tmp_path / "src/trainers/grpo.py"])
    assert (plan.framework, plan.algorithm) == ("trl", "grpo")
    assert plan.settings.base_model.value == "Qwen/Qwen2.5-1.5B-Instruct"
    assert plan.settings.learning_rate.value == 1e-6 and plan.settings.learning_rate.source.endswith("configs/run.yaml:8")
    assert plan.settings.num_generations.value == 6
    assert plan.settings.reward_functions.value == ["correctness", "format"]
    ledger = ledger_of(plan)
    assert ledger["report_to"] == "none"
    assert ledger["output_dir"] == "results/run1"  # the training's, not the evaluation's


def test_a_script_handing_a_loaded_model_to_the_projects_own_training_function_is_a_pytorch_loop(tmp_path):
    """A typer script that loads the policy and calls `train_grpo(policy=..., ...)` imported from a
    module not given: a hand-written loop named for GRPO; its steps, clip range and scorer are read,
    and the sampling parameters of its final evaluation are not the run's."""
    write(tmp_path, "proj/scripts/run_rl.py", """
        import torch
        import typer
        from transformers import AutoModelForCausalLM
        from vllm import SamplingParams
        from proj.rl import train_grpo
        from proj.grader import r1_zero_reward_fn

        app = typer.Typer()

        @app.command()
        def main(model_path: str = "Qwen/Qwen2.5-Math-1.5B", n_grpo_steps: int = 200, group_size: int = 8,
                 learning_rate: float = 1e-5, cliprange: float = 0.2):
            policy = AutoModelForCausalLM.from_pretrained(model_path, torch_dtype=torch.bfloat16).to("cuda")
            train_grpo(policy=policy, reward_fn=r1_zero_reward_fn, n_grpo_steps=n_grpo_steps, group_size=group_size,
                       learning_rate=learning_rate, cliprange=cliprange)
            eval_sampling_params = SamplingParams(temperature=1.0, max_tokens=1024)
            return eval_sampling_params

        if __name__ == "__main__":
            app()
    """)
    plan = analyze(tmp_path / "proj/scripts/run_rl.py", [])
    assert (plan.framework, plan.algorithm) == ("pytorch", "grpo")
    assert plan.settings.base_model.value == "Qwen/Qwen2.5-Math-1.5B"
    assert plan.settings.max_steps.value == 200
    assert plan.settings.clip_ratio.value == 0.2
    assert plan.settings.temperature is None and plan.settings.max_response_length is None


def test_a_grpo_loop_counting_steps_from_one_scoring_with_its_own_function_beside_a_group_size(tmp_path):
    """`for step in range(1, cfg.max_steps + 1)` runs cfg.max_steps times; `rewards = score_completions(...)`
    is the loop's reward."""
    source = write(tmp_path, "train_grpo.py", """
        from dataclasses import dataclass
        import torch
        from nano.model import load_model, generate_completions
        from nano.utils import score_completions

        @dataclass
        class Config:
            model_name: str = "Qwen/Qwen2.5-0.5B"
            lr: float = 1e-6
            batch_size: int = 4
            group_size: int = 8
            max_steps: int = 200
            clip_epsilon: float = 0.2

        def train(cfg: Config):
            model, tokenizer = load_model(cfg.model_name)
            optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
            for step in range(1, cfg.max_steps + 1):
                gen = generate_completions(model, tokenizer, num_samples=cfg.group_size)
                rewards = score_completions(gen["completions"], group_size=cfg.group_size)
                rewards_t = torch.tensor(rewards)
                advantages = (rewards_t - rewards_t.mean()) / (rewards_t.std() + 1e-8)
                loss = -(advantages * gen["logps"]).mean()
                loss.backward()
                optimizer.step()

        if __name__ == "__main__":
            train(Config())
    """)
    plan = analyze(source, [])
    assert (plan.framework, plan.algorithm) == ("pytorch", "grpo")
    assert (plan.settings.max_steps.value, plan.settings.max_steps.source) == (200, "train_grpo.py:12")
    assert plan.settings.reward_functions.value == ["score_completions"]
    assert plan.settings.num_generations.value == 8
    assert plan.settings.clip_ratio.value == 0.2


def test_a_script_written_for_python_3_12_f_strings_is_read(tmp_path):
    """PEP 701 lets an f-string reuse its quote inside a replacement field; Python 3.11 cannot parse
    that, so those inner quotes are swapped before reading (same lines, same meaning)."""
    source = write(tmp_path, "train.py", """
        import os
        import torch
        from transformers import AutoModelForCausalLM

        print(f"HF_HOME: {os.getenv("HF_HOME")}")
        cfg = {"model": "allenai/OLMo-2-0425-1B", "lr": 1e-5}
        model = AutoModelForCausalLM.from_pretrained(cfg["model"])
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
        for step in range(100):
            print(f"step {step} lr {cfg["lr"]:.1e}")
            loss = model(input_ids=torch.zeros(1, 4, dtype=torch.long)).loss
            loss.backward()
            optimizer.step()
    """)
    plan = analyze(source, [])
    assert plan.framework == "pytorch"
    assert (plan.settings.learning_rate.value, plan.settings.max_steps.value) == (1e-5, 100)


def test_a_dataset_repository_fetched_from_the_hub_names_the_data_unless_it_is_a_missing_files_fallback(tmp_path):
    """`hf_hub_download(REPO, "pairs.jsonl", repo_type="dataset")` names the dataset at REPO's line; the
    same call under `if not os.path.exists(path):` only stands in for a file the machine lacks."""
    loop = """
        import os
        import torch
        from huggingface_hub import hf_hub_download
        from transformers import AutoModelForCausalLM

        PAIRS_REPO = "someone/pref-pairs"
        DATA = "data/pairs.jsonl"
        model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
        {fetch}
        for row in open(path):
            loss = model(input_ids=torch.zeros(1, 4, dtype=torch.long)).loss
            loss.backward()
            optimizer.step()
    """
    fetched = write(tmp_path, "fetched/train.py", loop.replace(
        "{fetch}", 'path = hf_hub_download(PAIRS_REPO, "pairs.jsonl", repo_type="dataset")'))
    plan = analyze(fetched, [])
    assert (plan.settings.dataset.value, plan.settings.dataset.source) == ("someone/pref-pairs", "train.py:6")
    fallback = write(tmp_path, "fallback/train.py", loop.replace("{fetch}", (
        'path = DATA\n'
        '        if not os.path.exists(path):\n'
        '            path = hf_hub_download(PAIRS_REPO, "pairs.jsonl", repo_type="dataset")')))
    plan = analyze(fallback, [])
    assert plan.settings.dataset is None or plan.settings.dataset.value != "someone/pref-pairs"


def test_a_wrapper_runs_its_child_launcher_by_another_machines_path_and_with_an_environment_prefix(tmp_path):
    """`bash /home/me/TinyZero/scripts/grpo/grpo.sh` is the checkout's scripts/grpo/grpo.sh, found by its
    last parts (never this machine's path); `CUDA_VISIBLE_DEVICES=0,1 bash scripts/x.sh` runs it too,
    with what the wrapper exported."""
    write(tmp_path, "scripts/grpo/grpo.sh", """
        python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo \\
          data.train_files=$DATA_DIR/train.parquet data.train_batch_size=64 \\
          actor_rollout_ref.model.path=$BASE_MODEL actor_rollout_ref.actor.optim.lr=1e-6 \\
          actor_rollout_ref.rollout.n=5
    """)
    for name, call in (("scripts/grpo/run.sh", "bash /home/me/TinyZero/scripts/grpo/grpo.sh > /home/me/log.txt 2>&1"),
                       ("run_env.sh", "CUDA_VISIBLE_DEVICES=0,1 \\\n        bash scripts/grpo/grpo.sh")):
        launcher = write(tmp_path, name, f"""
            export BASE_MODEL=Qwen/Qwen2.5-3B
            export DATA_DIR=data/countdown
            {call}
        """)
        plan = analyze(launcher, [])
        assert (plan.framework, plan.algorithm) == ("verl", "grpo"), name
        assert plan.settings.base_model.value == "Qwen/Qwen2.5-3B"
        assert plan.settings.num_generations.value == 5


def test_a_trl_trainer_handed_a_dataset_a_project_function_builds_from_a_name(tmp_path):
    """`dataset = get_math_questions("gsm8k", split="train")` ... `GRPOTrainer(train_dataset=dataset)`:
    the name the project's builder is given is the dataset."""
    source = write(tmp_path, "train_grpo.py", """
        from trl import GRPOConfig, GRPOTrainer
        from data_utils import get_math_questions
        from rewards import accuracy_reward

        def train():
            dataset = get_math_questions("gsm8k", split="train")
            args = GRPOConfig(output_dir="out", learning_rate=5e-6, num_generations=4)
            trainer = GRPOTrainer(model="Qwen/Qwen2.5-1.5B-Instruct", args=args, train_dataset=dataset,
                                  reward_funcs=[accuracy_reward])
            trainer.train()

        if __name__ == "__main__":
            train()
    """)
    plan = analyze(source, [])
    assert (plan.settings.dataset.value, plan.settings.dataset.source) == ("gsm8k", "train_grpo.py:6")


def test_a_verifiers_grpo_script_with_typer_options_is_trl_grpo_with_its_options_defaults(tmp_path):
    """verifiers drives TRL's GRPO: `args = vf.grpo_defaults(...)` then `args.learning_rate = learning_rate`,
    each value a typer option's declared default."""
    source = write(tmp_path, "scripts/train_gsm8k.py", """
        import typer
        import verifiers as vf

        app = typer.Typer()

        @app.command()
        def train(
            model: str = typer.Option("Qwen/Qwen2.5-7B-Instruct", "--model", "-m", help="model"),
            num_generations: int = typer.Option(8, help="samples per prompt"),
            learning_rate: float = typer.Option(1e-5, "--learning-rate", "-lr"),
            kl_beta: float = typer.Option(0.0, "--kl-beta"),
        ):
            vf_env = vf.load_environment(env_id="gsm8k")
            model, tokenizer = vf.get_model_and_tokenizer(model)
            training_args = vf.grpo_defaults(run_name="gsm8k")
            training_args.num_generations = num_generations
            training_args.learning_rate = learning_rate
            training_args.beta = kl_beta
            trainer = vf.GRPOTrainer(model=model, processing_class=tokenizer, env=vf_env, args=training_args)
            trainer.train()

        if __name__ == "__main__":
            app()
    """)
    plan = analyze(source, [])
    assert (plan.framework, plan.algorithm) == ("trl", "grpo")
    assert (plan.settings.learning_rate.value, plan.settings.learning_rate.source) == (1e-5, "train_gsm8k.py:10")
    assert plan.settings.num_generations.value == 8
    assert plan.settings.kl_coef.value == 0.0


def test_a_script_run_without_flags_reads_the_config_its_config_option_defaults_to(tmp_path):
    """`parser.add_argument("--config", default="configs/grpo.yaml")`, the script run as given from the
    project's root: that YAML is read from disk, sections and all (`tcfg = cfg["training"]`)."""
    write(tmp_path, "configs/grpo.yaml", """
        dataset:
          name: openai/gsm8k
        training:
          per_device_train_batch_size: 2
          learning_rate: 2.0e-5
          num_generations: 4
    """)
    source = write(tmp_path, "scripts/run_grpo.py", """
        import argparse
        import yaml
        from datasets import load_dataset
        from trl import GRPOConfig, GRPOTrainer

        p = argparse.ArgumentParser()
        p.add_argument("--config", default="configs/grpo.yaml")
        args = p.parse_args()
        with open(args.config) as f:
            cfg = yaml.safe_load(f)
        tcfg = cfg["training"]
        ds = load_dataset(cfg["dataset"]["name"], "main", split="train")
        config = GRPOConfig(output_dir="out", per_device_train_batch_size=tcfg["per_device_train_batch_size"],
                            learning_rate=tcfg["learning_rate"], num_generations=tcfg["num_generations"])
        GRPOTrainer(model="Qwen/Qwen2.5-0.5B", args=config, train_dataset=ds, reward_funcs=[]).train()
    """)
    plan = analyze(source, [])
    assert plan.settings.dataset.value == "openai/gsm8k"
    assert (plan.settings.learning_rate.value, plan.settings.learning_rate.source) == (2e-5, "../configs/grpo.yaml:5")
    assert (plan.settings.per_device_batch_size.value, plan.settings.num_generations.value) == (2, 4)


def test_a_module_of_a_src_layout_and_a_loop_handed_the_projects_own_grpo_config(tmp_path):
    """`python -m pkg.train_dpo` from the root of a src-layout project is src/pkg/train_dpo.py; a loop
    handed `GrpoConfig(...)` of its own (not TRL's) is named for GRPO, and its trainer's
    `train(dataset, num_steps=1)` is the run's length."""
    write(tmp_path, "src/pkg/train_dpo.py", """
        from trl import DPOConfig, DPOTrainer

        def main():
            args = DPOConfig(output_dir="out", per_device_train_batch_size=1, beta=0.1, learning_rate=5e-7)
            DPOTrainer(model="Qwen/Qwen2.5-0.5B", args=args, train_dataset=None).train()

        if __name__ == "__main__":
            main()
    """)
    launcher = write(tmp_path, "scripts/run.sh", """
        cd "$(dirname "$0")/.."
        python -m pkg.train_dpo
    """)
    plan = analyze(launcher, [])
    assert (plan.framework, plan.algorithm) == ("trl", "dpo")
    assert (plan.settings.per_device_batch_size.value, plan.settings.beta.value) == (1, 0.1)
    loop = write(tmp_path, "loop/train_model.py", """
        import torch
        from transformers import AutoModelForCausalLM
        from rl.trainer import CustomRLTrainer, GrpoConfig

        def main():
            model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-1.5B-Instruct")
            config = GrpoConfig(group_size=4, learning_rate=1e-6, max_new_tokens=256)
            trainer = CustomRLTrainer(model=model, config=config)
            trainer.train(["2+2"], num_steps=1)

        if __name__ == "__main__":
            main()
    """)
    plan = analyze(loop, [])
    assert (plan.framework, plan.algorithm) == ("pytorch", "grpo")
    assert (plan.settings.num_generations.value, plan.settings.max_steps.value) == (4, 1)


def test_a_trl_import_left_unused_beside_the_transformers_trainer_that_trains_is_not_trl(tmp_path):
    """`import trl; from trl import GRPOConfig, GRPOTrainer` copied in and never used, while
    transformers' Trainer runs the SFT: the run is the Trainer's (a vendored TRL whose classes the
    file does use stays TRL, see the vendored-copy tests)."""
    source = write(tmp_path, "SFT.py", """
        import trl
        from trl import GRPOConfig, GRPOTrainer
        from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments

        tokenizer = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")
        model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")

        def encode(example):
            return {"input_ids": tokenizer.encode(example["text"], truncation=True, max_length=512)}

        args = TrainingArguments(output_dir="out", per_device_train_batch_size=4, learning_rate=2e-5)
        Trainer(model=model, args=args, train_dataset=None).train()
    """)
    plan = analyze(source, [])
    assert (plan.framework, plan.algorithm) == ("pytorch", "sft")
    assert (plan.settings.max_seq_length.value, plan.settings.per_device_batch_size.value) == (512, 4)
