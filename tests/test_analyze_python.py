"""Python sources through libcst: constants, argparse, dataclasses, HfArgumentParser, YAML reads, lines."""

import textwrap
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from mint_migrate.analyze.evidence import Level, Loc, Value
from mint_migrate.analyze.pyvalues import PySource
from mint_migrate.analyze.usage import usage_commands
from mint_migrate.analyze.yamlconf import YamlConfig
from mint_migrate.errors import MintMigrateError
from mint_migrate.pylines import node_lines


def src(text: str) -> PySource:
    return PySource(textwrap.dedent(text).lstrip("\n"), "train.py")


def kwarg(source: PySource, call_name: str, key: str) -> Value | None:
    [call] = source.calls_named(call_name)
    return call.kwarg(key)


def test_module_constants_and_arithmetic_trace_to_their_definition():
    s = src(
        """
        BASE_LR = 1e-6
        FACTOR = 2 ** 3
        LR = BASE_LR * FACTOR
        cfg = Config(learning_rate=LR, warmup=-FACTOR, name="a" "b", sizes=[1, FACTOR])
        """
    )
    assert kwarg(s, "Config", "learning_rate") == Value(8e-6, Loc("train.py", 3), Level.CODE)
    assert kwarg(s, "Config", "warmup").value == -8
    assert kwarg(s, "Config", "name").value == "ab"
    assert kwarg(s, "Config", "sizes").value == [1, 8]


def test_function_locals_win_over_module_constants_and_params_give_defaults():
    s = src(
        """
        LR = 1.0
        def main(batch_size: int = 16):
            LR = 2.0
            run(lr=LR, bs=batch_size)
        """
    )
    assert kwarg(s, "run", "lr").value == 2.0
    bs = kwarg(s, "run", "bs")
    assert bs.value == 16 and bs.level == Level.DEFAULT and bs.loc.line == 2


def test_argparse_defaults_types_and_command_line_overrides():
    s = src(
        """
        import argparse
        def get_args():
            p = argparse.ArgumentParser()
            p.add_argument("--learning-rate", "--lr", dest="lr", type=float, default="3e-5")
            p.add_argument("--epochs", type=int, default=3)
            p.add_argument("--use-peft", action="store_true")
            return p.parse_args()
        args = get_args()
        train(lr=args.lr, epochs=args.epochs, peft=args.use_peft)
        """
    )
    assert kwarg(s, "train", "lr") == Value(3e-5, Loc("train.py", 4), Level.DEFAULT)
    assert kwarg(s, "train", "peft").value is False
    s.use_command_line({"learning_rate": Value("1e-4", Loc("run.sh", 7), Level.COMMAND)})
    assert kwarg(s, "train", "lr") == Value(1e-4, Loc("run.sh", 7), Level.COMMAND)  # type=float applied
    assert kwarg(s, "train", "epochs").value == 3


def test_dataclass_fields_hfargumentparser_command_line_and_yaml():
    s = src(
        """
        from dataclasses import dataclass, field
        from transformers import HfArgumentParser
        @dataclass
        class Args:
            model: str = "Qwen/Qwen3-0.6B"
            rank: int = field(default=8, metadata={"help": "LoRA rank"})
            modules: list = field(default_factory=lambda: ["q_proj"])
        @dataclass
        class More(Args):
            steps: int = 10
        parser = HfArgumentParser((More, TrainingArguments))
        more, targs = parser.parse_args_into_dataclasses()
        go(model=more.model, rank=more.rank, modules=more.modules, steps=more.steps, lr=targs.learning_rate)
        """
    )
    assert kwarg(s, "go", "model") == Value("Qwen/Qwen3-0.6B", Loc("train.py", 5), Level.DEFAULT)
    assert kwarg(s, "go", "rank").value == 8
    assert kwarg(s, "go", "modules").value == ["q_proj"]
    assert kwarg(s, "go", "lr") is None  # a framework class's field: only the command line or a config says it
    s.use_configs([YamlConfig("learning_rate: 2e-5\nsteps: 50\n", "recipe.yaml")])
    assert kwarg(s, "go", "lr") == Value(2e-5, Loc("recipe.yaml", 1), Level.CONFIG)
    assert kwarg(s, "go", "steps").value == 50
    s.use_command_line({"steps": Value(7, Loc("run.sh", 2), Level.COMMAND)})
    assert kwarg(s, "go", "steps").value == 7
    assert s.parsed_dataclasses() == [("More", Loc("train.py", 11)), ("TrainingArguments", Loc("train.py", 11))]


def test_instances_environment_defaults_and_yaml_subscripts():
    s = src(
        """
        import os, yaml
        class Cfg:
            lr: float = 1e-4
            rank: int = 4
        cfg = Cfg(rank=16)
        conf = yaml.safe_load(open("conf/train.yaml"))
        run(lr=cfg.lr, rank=cfg.rank, model=os.environ.get("MODEL", "Qwen/Qwen3-8B"),
            steps=conf["trainer"]["steps"], bs=int(conf["data"]["batch"]))
        """
    )
    s.use_configs([YamlConfig("trainer:\n  steps: 300\ndata:\n  batch: '8'\n", "train.yaml")])
    assert kwarg(s, "run", "lr").value == 1e-4
    assert kwarg(s, "run", "rank").value == 16
    model = kwarg(s, "run", "model")
    assert model.value == "Qwen/Qwen3-8B" and model.level == Level.DEFAULT
    assert kwarg(s, "run", "steps") == Value(300, Loc("train.yaml", 2), Level.CONFIG)
    assert kwarg(s, "run", "bs").value == 8


def test_unresolvable_expressions_are_none_not_guesses():
    s = src(
        """
        import random
        def main(lr):
            run(a=lr, b=random.random(), c=f"{lr}", d=undefined_name, e=1 / 0)
        """
    )
    for key in "abcde":
        assert kwarg(s, "run", key) is None, key


def test_imports_calls_awaits_and_assigned_calls():
    s = src(
        """
        import torch.nn.functional as F
        from trl import SFTTrainer as T
        async def main(sc):
            tc = await sc.create_lora_training_client(base_model="m")
            model = AutoModelForCausalLM.from_pretrained("m").eval()
            T(model=model)
            F.cross_entropy(x, y)
        """
    )
    names = {c.qualname: c for c in s.calls}
    assert "trl.SFTTrainer" in names and "torch.nn.functional.cross_entropy" in names
    assert names["sc.create_lora_training_client"].awaited
    assert names["AutoModelForCausalLM.from_pretrained"].assigned_to == "model"
    assert s.imports_module("trl") == Loc("train.py", 2)


def test_docstring_usage_commands_carry_example_level():
    s = src(
        '''
        """Train it.

            python train.py --lr 5e-5 \\
                --epochs 2
        """
        '''
    )
    [cmd] = usage_commands(s)
    assert {a.name: (a.value.value, a.value.loc.line, a.value.level) for a in cmd.args} == {
        "lr": (5e-5, 3, Level.EXAMPLE),
        "epochs": (2, 4, Level.EXAMPLE),
    }


@pytest.mark.parametrize("program", ["~/vllm-env/bin/python", ".venv/bin/python3", "/usr/bin/python3.11"])
def test_a_usage_command_run_by_a_python_at_a_path_is_read(program):
    s = src(f'''
        """GRPO on GSM8K.

        用法：
          {program} scripts/train_grpo.py \\
            --base_model models/gemma-2-2b-it --lr 5e-6
        """
        ''')
    [cmd] = usage_commands(s)
    assert {a.name: a.value.value for a in cmd.args} == {"base_model": "models/gemma-2-2b-it", "lr": 5e-6}


def test_syntax_errors_name_file_line_and_column():
    with pytest.raises(MintMigrateError, match=r"train\.py:3:\d+: cannot parse Python"):
        src("x = 1\ny = 2\ndef broken(:\n    pass\n")


def test_start_lines_match_libcst_position_provider():
    """lines.py computes start lines in one cheap pass; they must equal PositionProvider's."""
    import mint_migrate.analyze.pyvalues as module

    code = Path(module.__file__).read_text(encoding="utf-8")
    tree = cst.parse_module(code)
    mine = node_lines(tree)
    positions = MetadataWrapper(tree, unsafe_skip_copy=True).resolve(PositionProvider)
    assert len(mine) > 1000
    assert all(positions[node].start.line == line for node, line in mine.items())


def test_a_dataset_given_as_a_list_is_the_dataset_not_a_crash(tmp_path):
    """Hypothesis found `load_dataset([...])` raising TypeError (a list is not hashable) while the
    analyzer checked for a file-format builder name."""
    from mint_migrate.analyze import analyze

    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import torch
        from datasets import load_dataset
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained("gpt2")
        data = load_dataset(["a.jsonl", "b.jsonl"])
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        for batch in data:
            loss = model(**batch).loss
            loss.backward()
            optimizer.step()
        """))
    plan = analyze(script, [])
    assert plan.settings.dataset is not None
    assert plan.settings.dataset.value == ["a.jsonl", "b.jsonl"]
    assert plan.settings.dataset.source == "train.py:6"


def test_or_takes_the_first_operand_known_to_be_set_and_unknown_stays_unknown():
    s = src(
        """
        RESUME = None
        BASE = "org/base"
        def main(path):
            run(a=RESUME or BASE, b=RESUME or path, c="" or None)
        """
    )
    assert kwarg(s, "run", "a") == Value("org/base", Loc("train.py", 2), Level.CODE)
    assert kwarg(s, "run", "b") is None
    assert kwarg(s, "run", "c").value is None


def test_calls_under_an_if_know_whether_the_test_switches_them_off():
    s = src(
        """
        USE_LORA = False
        FULL = True
        if USE_LORA:
            LoraConfig(r=8)
        else:
            Plain(x=1)
        if unknown_flag:
            Maybe(x=1)
        if FULL:
            pass
        elif USE_LORA:
            Nested(x=1)
        """
    )
    off = {c.name: c.switched_off() for c in s.calls}
    assert off == {"LoraConfig": True, "Plain": False, "Maybe": False, "Nested": True}


def test_a_reward_that_may_be_none_is_no_reward_function(tmp_path):
    """TRL's online DPO example: `reward_funcs=reward_model`, a model or None, names no function."""
    from mint_migrate.analyze import analyze

    script = tmp_path / "online_dpo.py"
    script.write_text(textwrap.dedent(
        """
        from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification
        from trl import OnlineDPOConfig, OnlineDPOTrainer

        def main(reward_path=None):
            model = AutoModelForCausalLM.from_pretrained("org/policy")
            if reward_path is not None:
                reward_model = AutoModelForSequenceClassification.from_pretrained(reward_path)
            else:
                reward_model = None
            trainer = OnlineDPOTrainer(model=model, reward_funcs=reward_model, args=OnlineDPOConfig(output_dir="o"))
            trainer.train()
        """
    ))
    assert analyze(script, []).settings.reward_functions is None
    # the reward model's branch taken (a path given): still a model, not a reward function
    script.write_text(script.read_text().replace("def main(reward_path=None)", 'def main(reward_path="org/rm")'))
    assert analyze(script, []).settings.reward_functions is None


def test_a_nested_function_sees_the_parameters_of_the_one_around_it():
    """alpaca-lora style: `def train(cutoff_len=256): def tokenize(p): tokenizer(p, max_length=cutoff_len)`."""
    s = src(
        """
        def train(cutoff_len: int = 256):
            def tokenize(prompt):
                return tokenizer(prompt, max_length=cutoff_len)
            return tokenize
        """
    )
    assert kwarg(s, "tokenizer", "max_length") == Value(256, Loc("train.py", 1), Level.DEFAULT)


def test_an_assignment_in_a_branch_the_inputs_switch_off_never_ran():
    """alpaca-lora: `accum = batch // micro` then `if ddp: accum = accum // world_size`, with
    `world_size = int(os.environ.get("WORLD_SIZE", 1))`: on one process the first value stands."""
    s = src(
        """
        import os
        def train(batch_size=128, micro_batch_size=4):
            accum = batch_size // micro_batch_size
            world_size = int(os.environ.get("WORLD_SIZE", 1))
            ddp = world_size != 1
            if ddp:
                accum = accum // world_size
            run(steps=accum, single=world_size == 1, none=ddp is None)
        """
    )
    assert kwarg(s, "run", "steps").value == 32 and kwarg(s, "run", "steps").loc == Loc("train.py", 3)
    assert kwarg(s, "run", "single").value is True
    assert kwarg(s, "run", "none").value is False


def test_keywords_splatted_from_a_dict_built_for_the_call_are_its_keywords():
    s = src("""
        from trl import GRPOConfig

        def main(lr):
            grpo_kwargs = dict(
                learning_rate=lr,
                gradient_accumulation_steps=4,
                temperature=0.7,
            )
            extra = {"beta": 0.04, 7: "not a keyword"}
            return GRPOConfig(output_dir="out", **grpo_kwargs, **extra)

        main(5e-6)
    """)
    [call] = s.calls_named("GRPOConfig")
    assert call.keywords() == ["output_dir", "learning_rate", "gradient_accumulation_steps", "temperature", "beta"]
    assert call.kwarg("gradient_accumulation_steps") == Value(4, Loc("train.py", 6), Level.CODE)
    assert call.kwarg("temperature").value == 0.7 and call.kwarg("beta").value == 0.04
    assert call.kwarg("learning_rate") == Value(5e-6, Loc("train.py", 12), Level.CODE)  # main's one caller passes it


def test_paths_below_the_scripts_own_folder_are_the_projects_paths_the_folder_itself_stays_unknown():
    s = src("""
        import os
        from pathlib import Path

        ROOT = Path(__file__).resolve().parents[2]
        TRAIN_FILE = ROOT / "data" / "sft" / "train.jsonl"
        script_dir = os.path.dirname(os.path.abspath(__file__))
        project_root = os.path.abspath(os.path.join(script_dir, ".."))
        train_path = os.path.join(project_root, "data/gsm8k/train.jsonl")
        cache = os.path.join(os.getcwd(), "cache", "run1")
        plain = os.path.join("outputs", "dpo")
        home = os.path.join(os.path.expanduser("~"), "models", "qwen")
        unknown = os.path.join(os.environ["DATA"], "train.jsonl")
        print(ROOT, TRAIN_FILE, project_root, train_path, cache, plain, home, unknown)
    """)
    [print_call] = s.calls_named("print")
    values = [s.evaluate(a.value, None) for a in print_call.node.args]
    assert [v.value if v is not None else None for v in values] == [
        None, "data/sft/train.jsonl", None, "data/gsm8k/train.jsonl", "cache/run1", "outputs/dpo", "models/qwen", None]
    assert values[1].loc == Loc("train.py", 5)


def test_a_parameter_of_a_function_called_once_takes_what_its_caller_passes():
    s = src("""
        import torch

        def train(data_path, *, lr: float = 1e-4, epochs: int = 3, warmup: int = 10):
            opt = torch.optim.AdamW([], lr=lr)
            print(epochs, warmup, data_path)

        def evaluate(batch_size=8):
            print(batch_size)

        def main():
            lr = 1e-5
            epochs = 1
            train("data/train.jsonl", lr=lr, epochs=epochs)
            evaluate(16)
            evaluate(32)

        main()
    """)
    opt = s.calls_named("AdamW")[0]
    assert opt.kwarg("lr") == Value(1e-5, Loc("train.py", 11), Level.CODE)  # main's, not the default
    printed = s.calls_named("print")
    first = [s.evaluate(a.value, printed[0].scope) for a in printed[0].node.args]
    assert [v.value for v in first] == [1, 10, "data/train.jsonl"]  # passed, default, by position
    assert first[1].level == Level.DEFAULT
    second = s.evaluate(printed[1].node.args[0].value, printed[1].scope)
    assert second.value == 8 and second.level == Level.DEFAULT  # called twice: only its default is certain


def test_a_config_dict_handed_to_the_training_function_is_read_entry_by_entry():
    s = src("""
        from typing import Dict

        def generate_rollouts(sampler, num_samples: int = 4, temperature: float = 0.8):
            return sampler.sample(num_samples=num_samples, temperature=temperature)

        def train(config: Dict):
            generate_rollouts(None, num_samples=config["samples_per_problem"], temperature=config["temperature"])

        def evaluate_model(sampler):
            generate_rollouts(sampler, num_samples=1, temperature=0.2)

        if __name__ == "__main__":
            config = {
                "samples_per_problem": 8,
                "temperature": 1.0,
            }
            train(config)
            evaluate_model(None)
    """)
    [sample] = s.calls_named("sample")
    # the training's call, not evaluate_model's; each entry cited at its own line
    assert sample.kwarg("num_samples") == Value(8, Loc("train.py", 14), Level.CODE)
    assert sample.kwarg("temperature") == Value(1.0, Loc("train.py", 15), Level.CODE)


def test_an_option_left_none_and_filled_in_after_parsing_takes_the_filled_value():
    s = src("""
        import argparse

        parser = argparse.ArgumentParser()
        parser.add_argument("--lora_r", type=int, default=32)
        parser.add_argument("--lora_alpha", type=int, default=None)
        args = parser.parse_args()
        if args.lora_alpha is None:
            args.lora_alpha = args.lora_r * 4
        print(args.lora_alpha)
    """)
    assert s.argparse_value("lora_alpha") == Value(128, Loc("train.py", 8), Level.DEFAULT)


def test_a_line_holding_only_a_backslash_does_not_shift_the_lines_after_it():
    # libcst counts `\\` + newline as no line at all; the parse door blanks such lines (same tree)
    s = src("""
        def main():
            x = 1
        \\

            config = dict(beta=0.0,
                          temperature=0.7)
    """)
    [call] = s.calls_named("dict")
    assert call.kwarg("temperature").loc.line == 6
