"""Shell launch scripts: quoting, continuations, variables, $((...)) arithmetic, launchers, flags and overrides."""

import shutil
import subprocess

import pytest

from mint_migrate.analyze.evidence import Level, Loc, Value
from mint_migrate.analyze.shell import ShellScript, _eval_words, commands_in_text
from mint_migrate.errors import MintMigrateError


def only_command(text: str):
    script = ShellScript(text, "run.sh")
    assert len(script.commands) == 1, script.commands
    return script, script.commands[0]


def args_of(command) -> dict:
    return {a.name: (a.value.value if a.value else None) for a in command.args if a.kind != "positional"}


def test_variables_arithmetic_and_defaults_resolve_in_script_order():
    script, cmd = only_command(
        "NODES=${NODES:-2}\n"
        "GPUS=8\n"
        "BS=$((NODES * GPUS * (4 + 4) / 2))\n"
        "GPUS=4  # redefined after the command would not matter; before it does\n"
        "python3 -m verl.trainer.main_ppo data.train_batch_size=$BS trainer.n_gpus_per_node=${GPUS}\n"
    )
    assert args_of(cmd) == {"data.train_batch_size": 64, "trainer.n_gpus_per_node": 4}
    by_name = {a.name: a for a in cmd.args}
    assert by_name["data.train_batch_size"].value.loc == Loc("run.sh", 3)  # traced to the arithmetic line
    assert by_name["trainer.n_gpus_per_node"].value.loc == Loc("run.sh", 4)
    assert cmd.module == "verl.trainer.main_ppo"


def test_bash_integer_division_truncates_toward_zero():
    _, cmd = only_command("A=-7\npython t.py --x $((A / 2)) --y $((7 % 3)) --z $((2 ** 5))\n")
    assert args_of(cmd) == {"x": -3, "y": 1, "z": 32}


def test_quotes_escapes_and_continuations_with_physical_lines():
    _, cmd = only_command(
        "python train.py \\\n"
        '    --run_name "my run" \\\n'
        "    --stop '$NOT_EXPANDED' \\\n"
        "    --path \\$HOME/x \\\n"
        "    --lr=1e-5\n"
    )
    by_name = {a.name: a for a in cmd.args}
    assert by_name["run_name"].value.value == "my run"
    assert by_name["stop"].value.value == "$NOT_EXPANDED"
    assert by_name["path"].value.value == "$HOME/x"
    assert by_name["lr"].value.value == 1e-5 and by_name["lr"].value.loc == Loc("run.sh", 5)


def test_environment_dependent_values_stay_unresolved_but_keep_their_text():
    script, cmd = only_command("DATA=$HOME/data\npython t.py --train_files $DATA/train.parquet --n $((X + 1)) $@\n")
    by_name = {a.name: a for a in cmd.args}
    assert by_name["train_files"].value is None
    assert by_name["train_files"].literal(Level.COMMAND).value == "$HOME/data/train.parquet"
    assert by_name["n"].value is None
    assert script.unresolved  # reported, not guessed


def test_a_variable_required_from_the_environment_keeps_its_name_not_an_empty_default():
    script, cmd = only_command(
        "MODEL_PATH=${MODEL_PATH:-}\n"  # 1: the environment's, or nothing: the user must say
        "CODE_PATH=${CODE_PATH:=}\n"  # 2
        'if [ -z "$MODEL_PATH" ]; then exit 1; fi\n'
        "NODES=${NODES:-2}\n"  # a default that says something is still taken
        'python3 -m verl.trainer.main_ppo actor.model.path=$MODEL_PATH data.train_files="[\\"$CODE_PATH/a.pkl\\"]" '
        "trainer.nnodes=$NODES\n"
    )
    by_name = {a.name: a for a in cmd.args}
    assert by_name["actor.model.path"].value is None
    assert by_name["actor.model.path"].literal(Level.COMMAND).value == "$MODEL_PATH"
    assert by_name["data.train_files"].literal(Level.COMMAND).value == ["$CODE_PATH/a.pkl"]
    assert by_name["actor.model.path"].loc == Loc("run.sh", 1)
    assert by_name["trainer.nnodes"].value.value == 2


def test_wrapper_options_and_their_values_are_skipped_up_to_the_program():
    script = ShellScript(
        'srun --overlap -N 1 -n 1 -w "$head_node" ray job submit --address="http://127.0.0.1:8265" \\\n'
        "  -- python3 -m openrlhf.cli.train_ppo_ray --pretrain Qwen/Qwen2.5-1.5B\n"
        "nice -n 10 python train.py --lr 1e-5\n",
        "run.sh",
    )
    assert [(c.program, c.module, c.script) for c in script.commands] == [
        ("python", "openrlhf.cli.train_ppo_ray", None), ("python", None, "train.py")]
    assert args_of(script.commands[0]) == {"pretrain": "Qwen/Qwen2.5-1.5B"}


def test_multi_value_flags_bare_flags_and_negative_numbers():
    _, cmd = only_command(
        "python t.py --target_modules q_proj v_proj --bf16 --max_steps -1 --betas 0.9 0.95 --use_peft\n"
    )
    assert args_of(cmd) == {
        "target_modules": ["q_proj", "v_proj"],
        "bf16": True,
        "max_steps": -1,
        "betas": [0.9, 0.95],
        "use_peft": True,
    }


def test_hydra_overrides_with_prefixes_lists_and_dashes_in_flag_names():
    _, cmd = only_command(
        "python -m verl.trainer.main_ppo +actor_rollout_ref.rollout.n=5 ++a.b=null "
        '\'trainer.logger=["console","wandb"]\' --per-device-train-batch-size 4\n'
    )
    args = args_of(cmd)
    assert args["actor_rollout_ref.rollout.n"] == 5
    assert args["a.b"] is None
    assert args["trainer.logger"] == ["console", "wandb"]
    assert args["per_device_train_batch_size"] == 4


@pytest.mark.parametrize(
    "line, program, module, script, world",
    [
        (
            "torchrun --standalone --nnodes=2 --nproc_per_node=8 -m verl.trainer.fsdp_sft_trainer x.y=1",
            "torchrun",
            "verl.trainer.fsdp_sft_trainer",
            None,
            16,
        ),
        (
            "deepspeed --num_gpus 4 --module openrlhf.cli.train_sft --max_len 8",
            "deepspeed",
            "openrlhf.cli.train_sft",
            None,
            4,
        ),
        ("accelerate launch --config_file z3.yaml --num_processes 8 sft.py --lr 1", "accelerate", None, "sft.py", 8),
        ("python -m torch.distributed.run --nproc_per_node 2 train.py --lr 1", "torchrun", None, "train.py", 2),
        ("CUDA_VISIBLE_DEVICES=0,1 nohup python3 -u train.py --lr 1", "python", None, "train.py", None),
        ("uv run python -m apps.grpo.main --config c.yaml", "python", "apps.grpo.main", None, None),
    ],
)
def test_launchers_are_unwrapped(line, program, module, script, world):
    _, cmd = only_command(line + "\n")
    assert (cmd.program, cmd.module, cmd.script) == (program, module, script)
    assert (cmd.world_size.value if cmd.world_size else None) == world


def test_ray_job_submit_runs_the_command_after_double_dash():
    _, cmd = only_command(
        'ray job submit --address="http://127.0.0.1:8265" --runtime-env-json=\'{"a": 1}\' '
        "-- python3 -m openrlhf.cli.train_ppo_ray --pretrain m\n"
    )
    assert cmd.launchers == ["ray", "python"] and cmd.module == "openrlhf.cli.train_ppo_ray"
    assert args_of(cmd) == {"pretrain": "m"}


def test_trl_cli_subcommand():
    _, cmd = only_command("trl grpo --model_name_or_path Qwen/Qwen3-0.6B --num_generations 4\n")
    assert (cmd.program, cmd.subcommand) == ("trl", "grpo")
    assert args_of(cmd)["num_generations"] == 4


def test_comments_redirections_and_control_flow_are_skipped():
    script = ShellScript(
        "#!/bin/bash\n"
        "set -x  # trace\n"
        "cat <<EOF > notes.txt\n"
        "python fake.py --lr 9\n"
        "EOF\n"
        "if [[ $1 != x ]]; then\n"
        "  echo start > log.txt 2>&1\n"
        "  python real.py --lr 1 2>&1 | tee out.log &\n"
        "fi\n",
        "run.sh",
    )
    assert [c.script for c in script.commands] == ["real.py"]
    assert args_of(script.commands[0]) == {"lr": 1}


def test_a_heredoc_read_into_a_variable_is_split_into_words_with_their_own_lines():
    script = ShellScript(
        "read -r -d '' CMD <<EOF\n"  # 1
        "openrlhf.cli.train_dpo \\\n"  # 2
        "   --pretrain $MODEL_DIR/base \\\n"  # 3
        "   --beta 0.1 \\\n"  # 4
        "   --learning_rate 5e-7\n"  # 5
        "EOF\n"
        'if [[ "$1" != "slurm" ]]; then\n'
        "    deepspeed --module $CMD\n"
        "fi\n",
        "run.sh",
    )
    [cmd] = script.commands
    assert cmd.module == "openrlhf.cli.train_dpo"
    by_name = {a.name: a for a in cmd.args}
    assert by_name["beta"].value == Value(0.1, Loc("run.sh", 4), Level.COMMAND)
    assert by_name["learning_rate"].value.loc == Loc("run.sh", 5)
    assert by_name["pretrain"].value is None and by_name["pretrain"].raw == "$MODEL_DIR/base"


def test_unquoted_expansion_splits_quoted_does_not():
    _, cmd = only_command('FLAGS="--lr 2e-5 --epochs 3"\nNAME="my run"\npython t.py $FLAGS --name "$NAME"\n')
    assert args_of(cmd) == {"lr": 2e-5, "epochs": 3, "name": "my run"}
    assert {a.name: a.value.loc.line for a in cmd.args} == {"lr": 1, "epochs": 1, "name": 2}


def test_exit_guards_positional_defaults_and_functions():
    script = ShellScript(
        'if [ "$#" -lt 2 ]; then\n'
        '    echo "usage: $0 <gpus> <out>"\n'
        "    exit 1\n"
        "fi\n"
        "[ -n \"$DEBUG\" ] && exit 0\n"
        "GPUS=${1:-8}\n"
        "OUT=$2\n"
        "shift 2\n"
        "launch() {\n"
        "    torchrun --nproc_per_node=$GPUS -m verl.trainer.fsdp_sft_trainer optim.lr=$1 trainer.out=$OUT $@\n"
        "}\n"
        "launch 1e-5\n"
        "exit 0\n"
        "python never.py --lr 3\n",
        "run.sh",
    )
    [cmd] = script.commands
    assert cmd.module == "verl.trainer.fsdp_sft_trainer" and cmd.world_size.value == 8
    assert cmd.world_size.loc == Loc("run.sh", 6)  # the default written in ${1:-8}
    args = {a.name: a for a in cmd.args}
    assert args["optim.lr"].value == Value(1e-5, Loc("run.sh", 12), Level.COMMAND)  # the call's argument
    assert args["trainer.out"].value is None and args["trainer.out"].raw == "$2"


def test_braced_and_bare_variables_are_kept_as_written_when_unresolved():
    _, cmd = only_command("python -m verl.trainer.main_ppo data.a=${HOME}/x data.b=$HOME/y\n")
    raws = {a.name: a.raw for a in cmd.args}
    assert raws == {"data.a": "${HOME}/x", "data.b": "$HOME/y"}


def test_flags_cut_off_by_a_comment_line_are_reported():
    script = ShellScript("python t.py --a 1 \\\n  # --b 2 \\\n  --c 3\n", "run.sh")
    assert args_of(script.commands[0]) == {"a": 1}
    assert script.stray_flags == [Loc("run.sh", 3)]


def test_unterminated_quote_names_the_line():
    with pytest.raises(MintMigrateError, match=r"run\.sh:2: cannot parse shell: unterminated"):
        ShellScript("echo ok\npython t.py --name 'oops\n", "run.sh")


def test_usage_commands_in_prose_are_found_and_prose_is_ignored():
    text = (
        "Fine-tune a model. Here's how:\n"
        "\n"
        "    accelerate launch sft.py \\\n"
        "        --learning_rate 2e-5\n"
        "It's that simple: don't worry.\n"
    )
    [cmd] = commands_in_text(text, "sft.py", 10)
    lr = cmd.args[0].value
    assert lr.value == 2e-5 and lr.loc == Loc("sft.py", 13) and lr.level == Level.EXAMPLE


def test_an_inline_bash_c_script_is_run_with_its_own_lines():
    script = ShellScript(
        "BETA=$1\n"
        'srun --nodes=1 bash -c "\n'
        "export MODEL=Qwen/Qwen3-8B\n"
        "accelerate launch train.py loss=dpo ++model.name_or_path=\\$MODEL ++loss.beta=${BETA}\n"
        '"\n',
        "run.sh",
    )
    [cmd] = script.commands
    args = {a.name: a for a in cmd.args}
    assert args["model.name_or_path"].value == Value("Qwen/Qwen3-8B", Loc("run.sh", 3), Level.COMMAND)
    assert args["loss.beta"].value is None and args["loss.beta"].raw == "$1"  # the outer shell expanded ${BETA}


def test_run_names_built_with_basename_and_dirname_resolve_other_commands_stay_as_written():
    script, cmd = only_command(
        "MODEL_PATH=/ckpt/base/Qwen2.5-3B-Instruct/\n"
        'MODEL=$(basename $MODEL_PATH)\n'
        'ROOT="$(dirname "$MODEL_PATH")"\n'
        'STAMP=$(date +%s)\n'
        'python3 -m verl.trainer.main_ppo trainer.experiment_name="grpo-${MODEL}" trainer.default_local_dir=$ROOT/out '
        'trainer.project_name=run-$STAMP\n'
    )
    args = args_of(cmd)
    assert args["trainer.experiment_name"] == "grpo-Qwen2.5-3B-Instruct"
    assert args["trainer.default_local_dir"] == "/ckpt/base/out"
    assert args["trainer.project_name"] is None  # `date` is never run
    assert script.variables["MODEL"].loc == Loc("run.sh", 2)


def test_a_variable_exported_after_it_is_set_is_exported_and_machine_values_are_kept_as_written():
    script = ShellScript(
        "NNODES=${SLURM_JOB_NUM_NODES}\n"
        "export NNODES\n"
        "export GPUS_PER_NODE=8\n"
        "export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)\n"
        "UNEXPORTED=1\n"
        "python3 -m verl.trainer.main_ppo trainer.nnodes=$NNODES\n",
        "run.sh",
    )
    exports = {name: value.value for name, value in script.exports.items()}
    assert exports == {"NNODES": "${SLURM_JOB_NUM_NODES}", "GPUS_PER_NODE": "8",
                       "MASTER_ADDR": "$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)"}
    assert script.exports["NNODES"].loc == Loc("run.sh", 1)


def test_flags_kept_in_bash_arrays_expand_as_words_that_cite_their_own_lines():
    # OpenRLHF's agent launchers keep their flags in arrays and splice them into `ray job submit`
    script, cmd = only_command(
        'MODEL_PATH="Qwen/Qwen3-4B-Thinking-2507"\n'  # 1
        "SAVE_PATH=/ckpt/exp\n"  # 2
        "CKPT_ARGS=(\n"  # 3
        "   --actor.model_name_or_path ${MODEL_PATH}\n"  # 4
        "   # --reward.model_name_or_path ${REWARD_MODEL}\n"  # 5
        "   --ckpt.load_enable\n"  # 6
        '   --ckpt.path "${SAVE_PATH}/ckpt"\n'  # 7
        ")\n"  # 8
        "ROLLOUT_ARGS=(\n"  # 9
        "   --data.max_len 74240\n"  # 10
        "   --algo.dynamic_filtering_range 0.0 1.0\n"  # 11
        ")\n"  # 12
        "ROLLOUT_ARGS+=( --rollout.n_samples_per_prompt 8 )\n"  # 13
        'declare -a OPT_ARGS=(--actor.adam.lr 5e-7 --algo.advantage.estimator "reinforce_baseline")\n'  # 14
        'ray job submit --address="http://127.0.0.1:8265" \\\n'  # 15
        "   -- python3 -m openrlhf.cli.train_ppo_ray \\\n"  # 16
        "   ${CKPT_ARGS[@]} \\\n"  # 17
        '   "${ROLLOUT_ARGS[@]}" \\\n'  # 18
        "   ${OPT_ARGS[*]} --n_rollout_words ${#ROLLOUT_ARGS[@]} --second ${OPT_ARGS[1]} --last ${OPT_ARGS[-1]}\n"  # 19
    )
    assert cmd.module == "openrlhf.cli.train_ppo_ray"
    assert args_of(cmd) == {
        "actor.model_name_or_path": "Qwen/Qwen3-4B-Thinking-2507",
        "ckpt.load_enable": True,
        "ckpt.path": "/ckpt/exp/ckpt",
        "data.max_len": 74240,
        "algo.dynamic_filtering_range": [0.0, 1.0],
        "rollout.n_samples_per_prompt": 8,
        "actor.adam.lr": 5e-7,
        "algo.advantage.estimator": "reinforce_baseline",
        "n_rollout_words": 7,
        "second": 5e-7,
        "last": "reinforce_baseline",
    }
    lines = {a.name: a.value.loc.line for a in cmd.args}
    assert lines["actor.model_name_or_path"] == 1  # one variable: the line that assigns it
    assert (lines["ckpt.load_enable"], lines["data.max_len"], lines["algo.dynamic_filtering_range"]) == (6, 10, 11)
    assert (lines["rollout.n_samples_per_prompt"], lines["actor.adam.lr"], lines["second"]) == (13, 14, 14)


def test_an_empty_array_quoted_adds_no_word_and_a_quoted_star_joins_into_one():
    _, cmd = only_command(
        "EXTRA=()\n"
        "TAGS=(a b)\n"
        'python train.py "${EXTRA[@]}" --tags "${TAGS[*]}" --lr 1\n'
    )
    assert [(a.kind, a.name) for a in cmd.args] == [("flag", "tags"), ("flag", "lr")]
    assert args_of(cmd) == {"tags": "a b", "lr": 1}


def test_an_iterative_loop_runs_its_first_pass_with_the_model_set_before_the_loop():
    # OpenRLHF's iterative DPO: the policy is the SFT model on the first pass, its own output later
    script = ShellScript(
        "MODEL_OUTPUT_PATH=./checkpoint/llama-3-8b-iter-dpo/checkpoint\n"  # 1
        "ITER_LOG_PATH=null\n"  # 2
        "TRAINING_ITERS=5\n"  # 3
        "POLICY_MODEL_PATH=OpenRLHF/Llama-3-8b-sft-mixture\n"  # 4
        "iter=0\n"  # 5
        "if [ -f $ITER_LOG_PATH ]; then\n"  # 6: a file only the machine has (a resumed run)
        "   iter=$(cat $ITER_LOG_PATH)\n"  # 7
        "fi\n"  # 8
        "while (($iter < $TRAINING_ITERS)); do\n"  # 9
        "   if ((iter > 0)); then\n"  # 10
        "      POLICY_MODEL_PATH=$MODEL_OUTPUT_PATH\n"  # 11
        "   fi\n"  # 12
        "   deepspeed --module openrlhf.cli.train_dpo --pretrain $POLICY_MODEL_PATH --iter $iter\n"  # 13
        "   iter=$((iter + 1))\n"  # 14
        '   if [[ "$ITER_LOG_PATH" != "null" ]]; then\n'  # 15
        "      echo $iter >$ITER_LOG_PATH\n"  # 16
        "   fi\n"  # 17
        "done\n"  # 18
        "python after.py --iters $iter\n",  # 19
        "run.sh",
    )
    dpo, after = script.commands
    args = {a.name: a.value for a in dpo.args}
    assert args["pretrain"] == Value("OpenRLHF/Llama-3-8b-sft-mixture", Loc("run.sh", 4), Level.COMMAND)
    assert args["iter"] == Value(0, Loc("run.sh", 5), Level.COMMAND)
    assert (Loc("run.sh", 7), "iter=$(cat null)") in script.unresolved  # the other value, reported
    assert args_of(after) == {"iters": 1}  # after the first pass


def test_conditions_over_the_scripts_own_variables_take_the_branch_bash_takes():
    script = ShellScript(
        "ALGO=grpo\n"  # 1
        "N=8\n"  # 2
        "if [[ $ALGO == gr* && ( $N != 0 || -z $N ) ]]; then ADV=grpo; else ADV=gae; fi\n"  # 3
        'if [ "$N" -gt 16 ]; then MICRO=1; elif [ "$N" -gt 4 ]; then MICRO=2; else MICRO=4; fi\n'  # 4
        'LR=""\n'  # 5
        '[ -z "$LR" ] && LR=1e-6\n'  # 6
        "ROLLOUT=16\n"  # 7
        '[ -z "$ROLLOUT" ] && ROLLOUT=4\n'  # 8
        "until [ 1 -eq 1 ]; do python never.py; done\n"  # 9
        "if ! (( N % 2 )); then EVEN=1; fi\n"  # 10
        "for SEED in 42 43; do\n"  # 11
        "  python3 -m verl.trainer.main_ppo algorithm.adv_estimator=$ADV actor.micro=$MICRO optim.lr=$LR \\\n"
        "      rollout.n=$ROLLOUT seed=$SEED even=$EVEN\n"
        "done\n",
        "run.sh",
    )
    [cmd] = script.commands
    assert args_of(cmd) == {"algorithm.adv_estimator": "grpo", "actor.micro": 2, "optim.lr": 1e-6,
                            "rollout.n": 16, "seed": 42, "even": 1}
    assert {a.name: a.value.loc.line for a in cmd.args}["seed"] == 11


def test_conditions_that_depend_on_the_machine_follow_every_branch_as_before():
    script = ShellScript(
        "NNODES=1\n"  # 1
        'if [ -n "$SLURM_JOB_NUM_NODES" ]; then\n'  # 2
        "    NNODES=$SLURM_JOB_NUM_NODES\n"  # 3: only the machine knows it: the script's 1 stays
        "    QUEUE=slurm\n"  # 4: a value the script states is followed, as before
        "fi\n"
        'if [[ "$1" == "70b" ]]; then MODEL=meta-llama/Llama-3-70B; else MODEL=meta-llama/Llama-3-8B; fi\n'  # 6
        "for s in $SEEDS; do\n"  # 7
        "    torchrun --nnodes=$NNODES -m verl.trainer.fsdp_sft_trainer model.partial_pretrain=$MODEL q=$QUEUE s=$s\n"
        "done\n",
        "run.sh",
    )
    [cmd] = script.commands
    args = {a.name: a for a in cmd.args}
    assert args["model.partial_pretrain"].value.value == "meta-llama/Llama-3-8B"  # the last branch, as before
    assert args["q"].value.value == "slurm"
    assert args["s"].value is None and args["s"].raw == "$s"
    assert cmd.launcher_args[0].value == Value(1, Loc("run.sh", 1), Level.COMMAND)


def test_machine_text_is_kept_as_written_with_the_scripts_own_variables_put_in():
    script, cmd = only_command(
        'SCRIPT_DIR="$(dirname "$0")"\n'
        'WORK_DIR=$(cd "$SCRIPT_DIR/../.." && pwd)\n'
        "NOW=$(date +%Y%m%d)\n"
        "export WANDB_DIR=gsm8k-grpo-lora-qwen2.5-7b-${NOW}\n"
        'SAVE_PATH="${WORK_DIR}/exp/DeepSeek-R1-Qwen-1.5B"\n'
        "python3 -m openrlhf.cli.train_ppo_ray --ckpt.output_dir ${SAVE_PATH} --tag `echo $NOW` \\\n"
        "    trainer.note=$(printf '%s' '$NOW' \"$NOW\")\n"
    )
    raws = {a.name: a.raw for a in cmd.args}
    assert raws == {
        "ckpt.output_dir": '$(cd "$(dirname "$0")/../.." && pwd)/exp/DeepSeek-R1-Qwen-1.5B',
        "tag": "`echo $(date +%Y%m%d)`",
        "trainer.note": "$(printf '%s' '$NOW' \"$(date +%Y%m%d)\")",  # single quotes stay literal
    }
    assert all(a.value is None and a.literal(Level.COMMAND) is not None for a in cmd.args)
    assert script.exports["WANDB_DIR"].value == "gsm8k-grpo-lora-qwen2.5-7b-$(date +%Y%m%d)"


def test_arithmetic_commands_update_variables_in_script_order():
    _, cmd = only_command(
        "GPUS=4\n"  # 1
        "((TOTAL = GPUS * 8))\n"  # 2
        "((GPUS++))\n"  # 3
        "((GPUS += 2))\n"  # 4
        'let "MICRO = TOTAL / 16" ACC=2\n'  # 5
        "((STEPS++))\n"  # 6: a value the script never set stays the machine's
        "i=0\n"  # 7
        "while ((i < 3)); do\n"  # 8
        "  python train.py --bs $TOTAL --gpus $GPUS --micro $MICRO --acc $ACC --steps $STEPS --i $i\n"
        "  ((i++))\n"
        "done\n"
    )
    assert args_of(cmd) == {"bs": 32, "gpus": 7, "micro": 2, "acc": 2, "steps": None, "i": 0}
    assert {a.name: a.value.loc.line for a in cmd.args if a.value} == {"bs": 2, "gpus": 4, "micro": 5, "acc": 5, "i": 7}


def test_a_flag_given_values_of_mixed_kinds_keeps_them_as_written():
    _, cmd = only_command("python t.py --ref_num_nodes 1 - --betas 0.9 0.95 --modules q_proj v_proj\n")
    assert args_of(cmd) == {"ref_num_nodes": ["1", "-"], "betas": [0.9, 0.95], "modules": ["q_proj", "v_proj"]}


def test_environment_prefixes_only_the_machine_knows_are_kept_as_written():
    _, cmd = only_command(
        "NODES=$SLURM_JOB_NODELIST\n"
        "MASTER_ADDR=$(scontrol show hostnames $NODES | head -n 1) WANDB_MODE=offline \\\n"
        "    env MASTER_PORT=$(find_free_port | tr -d '\\n') python train.py --lr 1\n"
    )
    env = {name: (value.value, value.loc.line) for name, value in cmd.env.items()}
    assert env == {"MASTER_ADDR": ("$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)", 2),
                   "WANDB_MODE": ("offline", 2), "MASTER_PORT": ("$(find_free_port | tr -d '\\n')", 3)}


def test_a_case_on_a_value_the_script_sets_takes_its_first_matching_clause():
    script = ShellScript(
        "MODEL_SIZE=7b\n"  # 1
        "case $MODEL_SIZE in\n"  # 2
        "  1.5b|3b) TP=1;;\n"  # 3
        "  7b)\n"  # 4
        "    TP=2\n"  # 5
        "    MICRO=4\n"  # 6
        "    ;;\n"
        '  "7"*) TP=4;;\n'  # 8: quoted: no pattern
        "  *) TP=8; MICRO=1;;\n"  # 9
        "esac\n"
        'case "$1" in\n'  # 11: an argument parser: every clause, as before
        "  --lr) LR=$2; shift 2;;\n"  # 12
        "  (--debug) DEBUG=1;;\n"  # 13
        "esac\n"
        "python3 -m verl.trainer.main_ppo rollout.tp=$TP actor.micro=$MICRO optim.lr=$LR debug=$DEBUG\n",
        "run.sh",
    )
    [cmd] = script.commands
    assert args_of(cmd) == {"rollout.tp": 2, "actor.micro": 4, "optim.lr": None, "debug": 1}
    assert {a.name: a.value.loc.line for a in cmd.args if a.value} == {"rollout.tp": 5, "actor.micro": 6, "debug": 13}
    assert script.stray_flags == []  # `--lr)` is a pattern, not a flag


def test_parameter_transformations_of_known_values_resolve_and_keep_the_definition_line():
    script, cmd = only_command(
        "MODEL_PATH=/ckpt/base/Qwen2.5-3B-Instruct\n"  # 1
        "CONFIG=configs/grpo.large.yaml\n"  # 2
        "RUN=${MODEL_PATH##*/}\n"  # 3
        "python3 -m verl.trainer.main_ppo trainer.experiment_name=${RUN,,} trainer.dir=${MODEL_PATH%/*} \\\n"
        "    c.stem=${CONFIG%%.*} c.ext=${CONFIG##*.} c.rest=${CONFIG#*.} c.base=${CONFIG%.*} \\\n"
        "    c.tag=${RUN//[-.]/_} c.first=${RUN/-/:} c.short=${RUN:0:5} c.tail=${RUN: -8} \\\n"
        "    c.wandb=${RUN:+wandb} c.home=${HOME##*/}\n"
    )
    assert args_of(cmd) == {
        "trainer.experiment_name": "qwen2.5-3b-instruct", "trainer.dir": "/ckpt/base",
        "c.stem": "configs/grpo", "c.ext": "yaml", "c.rest": "large.yaml", "c.base": "configs/grpo.large",
        "c.tag": "Qwen2_5_3B_Instruct", "c.first": "Qwen2.5:3B-Instruct", "c.short": "Qwen2", "c.tail": "Instruct",
        "c.wandb": "wandb", "c.home": None,
    }
    lines = {a.name: a.value.loc.line for a in cmd.args if a.value}
    assert (lines["trainer.experiment_name"], lines["c.ext"]) == (1, 2)  # the line that holds the text
    assert {a.name: a.raw for a in cmd.args}["c.home"] == "${HOME##*/}"
    assert script.variables["RUN"].value == "Qwen2.5-3B-Instruct"


def test_a_script_run_from_the_launchers_own_folder_is_found_while_its_path_stays_as_written():
    script = ShellScript(
        'SCRIPT_DIR="$(dirname "$0")"\n'
        'ROOT=$(cd "$(dirname "$0")/.." && pwd)\n'
        'python3 "$SCRIPT_DIR/train.py" --output_dir $ROOT/out\n'
        "torchrun --nproc_per_node 2 $ROOT/src/sft.py --lr 1\n"
        "python $(dirname $MODEL)/never.py --lr 2\n",  # a folder only the machine knows: not followed
        "run.sh",
    )
    assert [c.script for c in script.commands] == ["./train.py", "./../src/sft.py"]
    out = script.commands[0].args[0]
    assert out.value is None and out.raw == '$(cd "$(dirname "$0")/.." && pwd)/out'


def test_a_sourced_file_of_shared_flags_and_an_eval_of_them_cite_the_file_and_line_they_are_written_on():
    shared = ("export header=\"torchrun --nproc_per_node 1 \\\n"
              "-m acme.train\"\n"
              "export base_args=\"--learning_rate 2e-05 \\\n"
              "--lora_target_modules q_proj v_proj \\\n"
              "--fsdp 'full_shard auto_wrap'\"\n")
    files = {"common/args.sh": (shared, "common/args.sh")}
    script = ShellScript(
        "source common/args.sh\n"
        "data_dir=$1\n"
        "train_files=(\"$data_dir/a.jsonl\"\n"
        "    \"$data_dir/b.jsonl\")\n"
        "args=\"$base_args --train_files ${train_files[@]} 2>&1 | tee train.log\"\n"
        "eval \"$header\" \"$args\"\n",
        "run.sh", sources=files.get)
    assert len(script.commands) == 1
    cmd = script.commands[0]
    assert (cmd.program, cmd.module) == ("torchrun", "acme.train")
    by_name = {a.name: a for a in cmd.args}
    assert by_name["learning_rate"].value == Value(2e-05, Loc("common/args.sh", 3), Level.COMMAND)
    assert by_name["lora_target_modules"].value.value == ["q_proj", "v_proj"]
    assert by_name["lora_target_modules"].value.loc == Loc("common/args.sh", 4)
    assert by_name["fsdp"].value.value == "full_shard auto_wrap"  # eval removes the quotes, keeps the word
    files_arg = by_name["train_files"]
    assert files_arg.value is None  # $1: only the caller knows
    assert files_arg.literal(Level.COMMAND) == Value(["$1/a.jsonl", "$1/b.jsonl"], Loc("run.sh", 3), Level.COMMAND)
    assert "tee" not in by_name and "train.log" not in {a.raw for a in cmd.args}


def test_variables_set_in_a_sourced_file_are_cited_in_that_file_wherever_the_launcher_uses_them():
    shared = "# settings\nMODEL_PATH=\"\"  # fill in\nLR=2e-5\nNAME=\"run one\"\n"
    files = {"env.sh": (shared, "env.sh")}
    script = ShellScript("echo start\nsource env.sh\n"
                         "python train.py --model_name_or_path \"$MODEL_PATH\" --lr $LR --name \"$NAME\"\n",
                         "run.sh", sources=files.get)
    by_name = {a.name: a for a in script.commands[0].args}
    # left empty for the user: cited where env.sh leaves it empty, not at run.sh's line of that number
    assert by_name["model_name_or_path"].literal(Level.COMMAND) == Value("$MODEL_PATH", Loc("env.sh", 2), Level.COMMAND)
    assert by_name["lr"].value == Value(2e-05, Loc("env.sh", 3), Level.COMMAND)  # unquoted: split, one word
    assert by_name["name"].value == Value("run one", Loc("env.sh", 4), Level.COMMAND)  # quoted


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is the oracle")
def test_a_script_run_with_bash_is_a_child_shell_that_sees_the_exports_only(tmp_path):
    child = ("echo \"<${SHARED:-unset}> <${LOCAL:-unset}> <${1:-none}>\"\n"
             "LEAK=1\n"
             "python3 train.py --model $SHARED --local ${LOCAL:-fallback} --tag $1\n")
    parent = ("export SHARED=Qwen/Qwen2.5-3B\nLOCAL=kept-here\n"
              "bash ./scripts/train.sh run7\n"
              "python3 eval.py --leak ${LEAK:-absent}\n")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "train.sh").write_text(child.replace("python3", "echo python3"))
    shown = subprocess.run(["bash", "-c", parent.replace("python3 eval", "echo python3 eval")], cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout.splitlines()
    assert shown == ["<Qwen/Qwen2.5-3B> <unset> <run7>", "python3 train.py --model Qwen/Qwen2.5-3B --local fallback --tag run7",
                     "python3 eval.py --leak absent"]
    files = {"./scripts/train.sh": (child, "scripts/train.sh")}
    script = ShellScript(parent, "launch.sh", sources=files.get)
    train, evaluation = script.commands
    assert args_of(train) == {"model": "Qwen/Qwen2.5-3B", "local": "fallback", "tag": "run7"}  # as bash ran it
    assert {a.name: a.value.loc for a in train.args} == {"model": Loc("launch.sh", 1), "local": Loc("scripts/train.sh", 3),
                                                        "tag": Loc("launch.sh", 3)}
    assert script.included == ["scripts/train.sh"]
    assert args_of(evaluation) == {"leak": "absent"}  # what the child set stays in the child


@pytest.mark.parametrize("root", ['"$( cd "$( dirname "${BASH_SOURCE[0]}" )/.." && pwd )"',
                                  '$(cd $(dirname $0)/..; pwd)', '"$(cd "$(dirname "$BASH_SOURCE")/.." && pwd -P)"'])
def test_a_project_root_computed_from_the_scripts_own_folder_finds_the_script_below_it(root):
    script = ShellScript(f"PROJECT_ROOT={root}\n"
                         "deepspeed --include localhost:0,1 ${PROJECT_ROOT}/src/sft/train.py --learning_rate 5e-5\n",
                         "bin/run_sft.sh")
    (command,) = script.commands
    assert (command.program, command.script) == ("deepspeed", "./../src/sft/train.py")
    assert args_of(command) == {"learning_rate": 5e-05}


def test_a_source_of_a_file_not_among_the_inputs_leaves_its_variables_unknown():
    script = ShellScript("source missing.sh\npython train.py --lr $LR\n", "run.sh", sources=lambda written: None)
    assert args_of(script.commands[0]) == {"lr": None}


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is the oracle")
@pytest.mark.parametrize("setup", [
    'a=(x "y z" w); v="pre ${a[@]} post"',
    'v="--fsdp \'full_shard auto_wrap\' --n 3 --tag \\"q r\\" 2>&1 | cat"',
    'a=(one two); v="--files ${a[@]} --k=v; echo done"',
    'b="x  y"; v="$b"" z 2>/dev/null"',
])
def test_assignments_joining_arrays_and_eval_splitting_agree_with_bash(setup):
    shown = subprocess.run(["bash", "-c", f"{setup}\neval \"printf '<%s>\\n'\" \"$v\""], capture_output=True,
                           text=True, check=True).stdout
    script = ShellScript(f"{setup}\n", "run.sh")
    words = [w.partial for w in _eval_words(script._texts["v"])]  # what eval hands the command, word by word
    # only printf's lines: what follows a `;` runs as a command of its own (`echo done`)
    assert words == [line[1:-1] for line in shown.splitlines() if line.startswith("<") and line.endswith(">")]


@pytest.mark.parametrize("line", [
    "uv run train.py --lr 1e-5",
    "uv run --with torch python train.py --lr 1e-5",
    "conda run -n rl python train.py --lr 1e-5",
    "mpirun -np 8 -x NCCL_DEBUG python train.py --lr 1e-5",
    "timeout 3600 python train.py --lr 1e-5",
    "taskset 0x1 python train.py --lr 1e-5",
])
def test_environment_runners_and_process_wrappers_still_launch_the_script(line):
    _, cmd = only_command(line + "\n")
    assert (cmd.script, args_of(cmd)) == ("train.py", {"lr": 1e-5})


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is the oracle")
@pytest.mark.parametrize("word", [r"$'Question: {}\n\nAnswer: Let\'s think\n'", r"$'a\tb\x41\101\\c'",
                                  r"pre$'mid'post", r"$'say \"hi\"'"])
def test_ansi_c_quoted_words_read_as_bash_reads_them(word):
    shown = subprocess.run(["bash", "-c", f"printf '%s' {word}"], capture_output=True, text=True, check=True).stdout
    _, cmd = only_command(f"python t.py --template {word} --lr 1e-5\n")
    assert args_of(cmd) == {"template": shown, "lr": 1e-5}


def test_a_flag_value_keeps_its_blanks_and_a_list_its_items_trimmed():
    _, cmd = only_command("python t.py --template $'Q: {}\\nA: ' --sep ' ' --mods '[q_proj, v_proj]'\n")
    assert args_of(cmd) == {"template": "Q: {}\nA: ", "sep": " ", "mods": ["q_proj", "v_proj"]}


def test_a_getopts_argument_is_the_callers_like_a_positional_parameter():
    from mint_migrate.analyze.shell import POSITIONAL_ONLY

    assert POSITIONAL_ONLY.fullmatch("$OPTARG") and POSITIONAL_ONLY.fullmatch("$OPTARG$OPTARG")
    assert POSITIONAL_ONLY.fullmatch("${1}$2") and not POSITIONAL_ONLY.fullmatch("$OPTARG/train.parquet")


def test_a_command_run_in_a_container_is_the_command_after_the_image():
    script = ShellScript(
        "IMAGE=vllm:v3\n"
        "docker run --rm --gpus all --shm-size=16g \\\n"
        "    -e \"VLLM_USE_V1=1\" -v /data:/workspace/data \\\n"
        "    --workdir /opt/verl --entrypoint python3 $IMAGE \\\n"
        "    -m verl.trainer.main_ppo actor_rollout_ref.actor.optim.lr=2e-5\n"
        "apptainer exec --nv -B /scratch:/scratch image.sif torchrun --nproc_per_node 4 sft.py --lr 1e-4\n",
        "run.sh")
    verl, sft = script.commands
    assert (verl.program, verl.module) == ("python", "verl.trainer.main_ppo")
    assert args_of(verl) == {"actor_rollout_ref.actor.optim.lr": 2e-05}
    assert verl.env["VLLM_USE_V1"] == Value("1", Loc("run.sh", 3), Level.COMMAND)
    assert (sft.program, sft.script, args_of(sft)) == ("torchrun", "sft.py", {"lr": 1e-4})


def test_an_inline_script_behind_a_wrapper_option_with_a_value_is_read():
    script = ShellScript(
        "export LR=1e-6\n"
        "srun --jobid $SLURM_JOBID bash -c 'python -m torch.distributed.run --nproc_per_node 8 \\\n"
        "  ../train_dpo.py --learning_rate $LR'\n",
        "run.sh")
    [cmd] = script.commands
    assert (cmd.program, cmd.script, args_of(cmd)) == ("torchrun", "../train_dpo.py", {"learning_rate": 1e-6})


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is the oracle")
def test_an_unpassed_quoted_at_adds_no_word_and_a_flags_none_is_the_word_argparse_gets(tmp_path):
    """`"$@"` with no arguments expands to no word at all (bash says so), so the flag before it keeps
    its one value; `--report_to none` hands argparse the string "none", not a null."""
    text = 'R="${R:-none}"\npython train.py --report_to "$R" --save_steps 50 "$@"\n'
    script = tmp_path / "run.sh"
    script.write_text(text.replace("python train.py", "printf '<%s>' "))
    assert subprocess.run(["bash", str(script)], capture_output=True, text=True, check=True).stdout \
        == "<--report_to><none><--save_steps><50>"
    _, cmd = only_command(text)
    assert args_of(cmd) == {"report_to": "none", "save_steps": 50}
    _, called = only_command('f() { python t.py --a "$@"; }\nf 3 4\n')
    assert args_of(called) == {"a": [3, 4]}
