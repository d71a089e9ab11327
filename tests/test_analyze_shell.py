"""Shell launch scripts: quoting, continuations, variables, $((...)) arithmetic, launchers, flags and overrides."""

import pytest

from mint_migrate.analyze.evidence import Level, Loc, Value
from mint_migrate.analyze.shell import ShellScript, commands_in_text
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
