"""TRL: trainers and configs in Python, `trl <cmd>` / script command lines, and recipe YAML files.

A TRL config field can be set in four places, all read here with their line: a keyword of the
config constructor (`SFTConfig(learning_rate=2e-5)`), a flag on the launch command or in the
script's usage docstring (when the script parses TRL classes with TrlParser/HfArgumentParser),
and a recipe YAML passed with `--config`. Field names follow TRL 1.x, with the legacy names still
in the wild (`max_seq_length`, `rloo_k`, `response_length`, `tokenizer=`).
"""

from pathlib import Path

import libcst as cst

from mint_migrate.analyze.evidence import Evidence, Level, Loc, Value
from mint_migrate.analyze.inputs import InputFile, Project, command_flags
from mint_migrate.analyze.pycommon import (
    TEACHER_FLAG,
    algorithm_in_name,
    built_by_a_call,
    dataset_calls,
    dataset_id,
    function_names,
    infra_imports,
    loaded_model,
    lora_from_peft,
    passed_in,
    server_side,
    teacher_warning,
    trainer_runs,
    vote_by_keys,
    vote_by_values,
    written_at,
)
from mint_migrate.analyze.pyvalues import CallSite, PySource
from mint_migrate.analyze.registry import Analyzer
from mint_migrate.analyze.scalars import as_int
from mint_migrate.analyze.task import (
    Task,
    data_source,
    load_dataset_call,
    mapped_rows,
    normalize_loss,
    python_reward,
    schedule_from,
)
from mint_migrate.plan import Algorithm, RewardPlan, ScaffoldKind, Settings
from mint_migrate.pyindex import dotted_name, iter_nodes, literal_value

TRAINERS: dict[str, Algorithm] = {
    "SFTTrainer": "sft", "DPOTrainer": "dpo", "GRPOTrainer": "grpo", "PPOTrainer": "ppo",
    "RLOOTrainer": "reinforce", "KTOTrainer": "kto", "ORPOTrainer": "orpo", "CPOTrainer": "dpo",
    "BCOTrainer": "kto", "RewardTrainer": "reward_model", "PRMTrainer": "reward_model",
    "GKDTrainer": "distillation", "OnlineDPOTrainer": "dpo", "NashMDTrainer": "other", "XPOTrainer": "other",
    "DistillationTrainer": "distillation", "GOLDTrainer": "distillation", "MiniLLMTrainer": "distillation",
}
CONFIGS: dict[str, Algorithm] = {
    "SFTConfig": "sft", "DPOConfig": "dpo", "GRPOConfig": "grpo", "PPOConfig": "ppo", "RLOOConfig": "reinforce",
    "KTOConfig": "kto", "ORPOConfig": "orpo", "CPOConfig": "dpo", "BCOConfig": "kto", "RewardConfig": "reward_model",
    "PRMConfig": "reward_model", "GKDConfig": "distillation", "OnlineDPOConfig": "dpo",
    "DistillationConfig": "distillation", "GOLDConfig": "distillation", "MiniLLMConfig": "distillation",
}
_VARIANTS = {"CPOTrainer": "cpo", "CPOConfig": "cpo", "BCOTrainer": "bco", "BCOConfig": "bco",
             "OnlineDPOTrainer": "online_dpo", "OnlineDPOConfig": "online_dpo", "RLOOTrainer": "rloo",
             "RLOOConfig": "rloo", "NashMDTrainer": "nash_md", "XPOTrainer": "xpo"}
TRL_CLASSES = set(CONFIGS) | {"TrainingArguments", "Seq2SeqTrainingArguments", "ModelConfig", "ScriptArguments",
                              "GRPOScriptArguments", "SFTScriptArguments", "DPOScriptArguments"}
SUBCOMMANDS: dict[str, Algorithm] = {"sft": "sft", "dpo": "dpo", "grpo": "grpo", "kto": "kto", "rloo": "reinforce",
                                     "reward": "reward_model", "ppo": "ppo", "orpo": "orpo", "gkd": "distillation"}

FIELDS = {
    "model_name_or_path": "base_model",
    "dataset_name": "dataset",
    "learning_rate": "learning_rate",
    "per_device_train_batch_size": "per_device_batch_size",
    "gradient_accumulation_steps": "gradient_accumulation_steps",
    "num_train_epochs": "num_epochs",
    "max_steps": "max_steps",
    "max_seq_length": "max_seq_length",
    "max_length": "max_seq_length",
    "max_prompt_length": "max_prompt_length",
    "max_completion_length": "max_response_length",
    "response_length": "max_response_length",
    "num_generations": "num_generations",
    "rloo_k": "num_generations",
    "temperature": "temperature",
    "kl_coef": "kl_coef",
    "epsilon": "clip_ratio",
    "cliprange": "clip_ratio",
}
# Fields that shape the MinT choices or warnings without being a Settings key.
EXTRAS = {"epsilon_high", "loss_type", "importance_sampling_level", "num_iterations", "scale_rewards", "use_vllm",
          "vllm_mode", "max_grad_norm", "weight_decay", "warmup_ratio", "lr_scheduler_type", "deepspeed", "fsdp",
          "gradient_checkpointing", "packing", "assistant_only_loss", "completion_only_loss", "use_peft",
          "lora_r", "lora_alpha", "lora_target_modules", "lora_dropout", "teacher_model_name_or_path",
          "reward_model_path", "sft_model_path", "vf_coef", "num_ppo_epochs", "load_in_4bit", "load_in_8bit",
          "desirable_weight", "undesirable_weight", "center_rewards_coefficient", "lmbda", "top_p", "top_k",
          # read by analyze/task.py: the data's columns and split, the reward weights, the LR warmup
          "warmup_steps", "dataset_text_field", "reward_weights", "dataset_train_split", "dataset_config",
          "steps_per_generation"}
_GENERIC_YAML_HINTS = {"model_name_or_path", "learning_rate", "per_device_train_batch_size", "num_train_epochs",
                       "gradient_accumulation_steps", "dataset_name", "dataset_mixer", "dataset_mixture",
                       "max_seq_length", "output_dir", "bf16", "lr_scheduler_type"}


def looks_like_recipe(keys: list[str]) -> bool:
    return len(_GENERIC_YAML_HINTS.intersection(keys)) >= 2


def analyze(project: Project, ev: Evidence) -> None:
    _vote_algorithm(project, ev)
    algorithm = ev.algorithm().algorithm if ev.algorithm() else "sft"
    fields: list[tuple[str, Value]] = []

    for f in project.pythons():
        _python(project, f, ev, fields)
    for command, script in project.launches:
        if command.program == "trl":
            fields += _flag_fields(command_flags(command)) + _left_to_fill(command)
            ev.construct(f"{command.text} (the TRL CLI)", command.loc, "python train.py (the MinT scaffold)")
        elif script is None and command.script and not command.auxiliary:
            fields += _flag_fields(command_flags(command)) + _left_to_fill(command)
            ev.warn("SCRIPT_NOT_GIVEN", f"The launch command runs {command.script}, which was not given: its "
                    "flags were read as TRL fields. Pass the script with --config to read it too.", command.loc)
    reads_recipe = (
        project.primary.yaml is not None
        or any(_parses_trl(f.python) or f.python.parsed_dataclasses() for f in project.pythons())
        or any(c.program == "trl" or (c.script and s is None) for c, s in project.launches)
    )
    if reads_recipe:
        for y in project.yamls():
            fields += [(key, value) for key, value in y.yaml.values.items() if "." not in key]
            dataset_mixture(y, ev)

    _apply_fields(fields, algorithm, ev)
    _warnings(algorithm, ev)


# --- algorithm -------------------------------------------------------------------------------------


def _named_items(value: object) -> list[str] | None:
    """`rewards: [{name: correctness, weight: 1.0}, format]` in a recipe a script builds its
    reward_funcs from: the names, else None (not a list of names)."""
    if not isinstance(value, list) or not value:
        return None
    names = [item if isinstance(item, str) else item.get("name") if isinstance(item, dict) else None for item in value]
    return names if all(isinstance(n, str) and n for n in names) else None


def _vote_algorithm(project: Project, ev: Evidence) -> None:
    bases = {name: info.bases for f in project.pythons() for name, info in f.python.classes.items()}
    for f in project.pythons():
        src = f.python
        for call in src.calls:
            name = _class_bound(src, call.name)
            if (trainer := trl_class(name, TRAINERS)) is not None:
                ev.vote(TRAINERS[trainer], call.loc, f"{name}(...)", 3)
                ev.set_variant(_VARIANTS.get(trainer), call.loc, override=False)
            elif (config := trl_class(name, CONFIGS)) is not None:
                ev.vote(CONFIGS[config], call.loc, f"{name}(...)", 2)
                ev.set_variant(_VARIANTS.get(config), call.loc, override=False)
            elif name in bases:  # the project's own `class MathGRPOTrainer(GRPOTrainer)`, in any file
                base = _trl_base(name, bases)
                if base in TRAINERS:
                    ev.vote(TRAINERS[base], call.loc, f"{name}(...) (a {base})", 3)
                    ev.set_variant(_VARIANTS.get(base), call.loc, override=False)
                elif base in CONFIGS:
                    ev.vote(CONFIGS[base], call.loc, f"{name}(...) (a {base})", 2)
        for name, loc in src.parsed_dataclasses():
            base = src.class_base(name, set(CONFIGS))
            if base:
                ev.vote(CONFIGS[base], loc, f"{name} parsed from the command line", 2)
    for command in project.commands():
        if command.program == "trl" and command.subcommand in SUBCOMMANDS:
            ev.vote(SUBCOMMANDS[command.subcommand], command.loc, f"trl {command.subcommand}", 3)
    for y in project.yamls():
        keys = set(y.yaml.keys())
        first = y.yaml.values[next(iter(y.yaml.values))].loc if y.yaml.values else Loc(y.label, 1)
        vote_by_keys(keys, first, ev)
        for part in reversed(Path(y.label).with_suffix("").parts):
            hit = next((alg for word, alg in (("grpo", "grpo"), ("dpo", "dpo"), ("orpo", "orpo"), ("kto", "kto"),
                                               ("sft", "sft"), ("rloo", "reinforce"), ("reward", "reward_model"))
                        if word in part.lower()), None)
            if hit:
                ev.vote(hit, first, f"the config's path names {hit}", 1)
                break
        if keys & {"dataset_text_field", "packing", "max_seq_length"}:
            ev.vote("sft", first, "SFT keys (max_seq_length / packing)", 1)
    if not any(v.weight >= 2 for v in ev.votes):  # the project's own trainer, defined in a file not given
        for f in project.pythons():
            for call in trainer_runs(f.python):
                named = algorithm_in_name(call.name)
                if named is not None and trl_class(call.name, TRAINERS) is None:
                    ev.vote(named, call.loc, f"{call.name}(...): what the trainer class's name says", 1)
    if not any(v.weight >= 2 for v in ev.votes):  # a launch of a script that was not given: its name, else its flags
        for command, script in project.launches:
            if not (command.script or command.module) or script is not None or command.auxiliary:
                continue
            if vote_by_values(command_flags(command), ev):  # `--rlhf_type DPO`: says it outright
                break
            named = algorithm_in_name(command.target_parts[-1])
            if named is not None:
                ev.vote(named, command.loc, f"{command.target} (not given): what its name says", 1)
            else:
                vote_by_keys({a.name for a in command.flags()}, command.loc, ev)
            break
    if not ev.votes:
        ev.vote("sft", None, "no trainer, config class, preference or RL keys found", 0)


def _class_bound(src: PySource, name: str) -> str:
    """The class a local name is bound to before it is called (`Trainer = DPOTrainer` or, on a switch,
    `Trainer = NewDPOTrainer`, a subclass: the first binding), else the name itself."""
    if name in src.classes or name not in src.assigns:
        return name
    for assignment in src.assigns[name]:
        bound = dotted_name(assignment.value) if len(assignment.targets) == 1 else None
        if bound is not None:
            return bound.rsplit(".", 1)[-1]
    return name


def trl_class(name: str, known: dict[str, Algorithm]) -> str | None:
    """The TRL class `name` is, also when a wrapper package prefixes it (`GaudiSFTTrainer`,
    `UnslothGRPOTrainer`): the longest known name it ends with, after a capitalised prefix that is a
    word of its own (not the start of a longer acronym: `SPPOTrainer`, `IPPOConfig`)."""
    if name in known:
        return name
    ends = [k for k in known if name.endswith(k) and name[: -len(k)][:1].isupper()
            and not (name[: -len(k)][-1].isupper() and k[1:2].isupper())]  # `SPPOTrainer` is not a PPOTrainer
    return max(ends, key=len) if ends else None


def _trl_base(name: str, bases: dict[str, list[str]]) -> str | None:
    """The TRL trainer or config class a project class derives from, through the project's files."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop(0).rsplit(".", 1)[-1]
        if current in TRAINERS or current in CONFIGS:
            return current
        if current not in seen and current in bases:
            seen.add(current)
            todo.extend(bases[current])
    return None


# --- python ------------------------------------------------------------------------------------------


def _parses_trl(src: PySource) -> bool:
    return any(src.class_base(name, TRL_CLASSES) for name, _ in src.parsed_dataclasses())


def _python(project: Project, f: InputFile, ev: Evidence, fields: list[tuple[str, Value]]) -> None:
    src = f.python
    infra_imports(src, ev)
    if _parses_trl(src):
        fields += _flag_fields(src.cli)
        parsed = ", ".join(name for name, _ in src.parsed_dataclasses())
        loc = src.parsed_dataclasses()[0][1]
        ev.construct(f"TrlParser/HfArgumentParser(({parsed}))", loc,
                     "argparse flags of the MinT train.py (--base-model, --learning-rate, ...)")
    for call in src.calls:
        base = call.name if call.name in TRL_CLASSES else trl_class(call.name, CONFIGS) or (
            src.class_base(call.name, TRL_CLASSES) if call.name in src.classes else None)
        if base:
            for key, value in call.kwargs().items():
                fields.append((key, value))
            if call.assigned_to:  # then `args.max_length = 512` / `setattr(args, "max_length", 512)`: said last
                fields += src.attribute_writes(call.assigned_to)
            if base in CONFIGS:
                ev.construct(f"{call.name}(...)", call.loc, _config_target(CONFIGS[base]))
        elif call.name.endswith("_defaults") and call.qualname.split(".", 1)[0] == "verifiers" and call.assigned_to:
            # `args = vf.grpo_defaults(run_name=...)`, then `args.learning_rate = lr`: a GRPOConfig verifiers fills
            fields += list(call.kwargs().items()) + src.attribute_writes(call.assigned_to)
        elif (trainer := trl_class(call.name, TRAINERS)) is not None:
            _trainer(project, call, trainer, src, ev, fields)
        elif call.name == "LoraConfig" and not call.discarded():
            lora_from_peft(call, ev)
        elif call.name == "get_peft_config":
            ev.extra("get_peft_config", Value(True, call.loc))
            ev.construct("get_peft_config(model_args)", call.loc, "create_lora_training_client(base_model, rank=lora_r)")
    loads = dataset_calls(src)
    if loads:
        ev.setting("dataset", dataset_id(loads[0]))
        ev.construct(f"{loads[0].name}(...)", loads[0].loc, "JSONL rows passed with --data", None)
    _step_loop(src, ev)


def _step_loop(src: PySource, ev: Evidence) -> None:
    """Classic TRL PPO driven by hand, `for i in range(steps): ... ppo_trainer.step(queries, responses,
    rewards)`: one optimisation step per pass, so the loop's bound is the run's step count."""
    trainers = {c.node.func.value.value for c in src.calls
                if c.name == "step" and isinstance(c.node.func, cst.Attribute) and isinstance(c.node.func.value, cst.Name)
                and (made := src.assigned_call(c.node.func.value, c.scope)) is not None
                and trl_class(made.name, TRAINERS) is not None}
    if not trainers:
        return
    steps = {f"{t}.step" for t in trainers}
    for node in iter_nodes(src.module):
        if not (isinstance(node, cst.For) and isinstance(node.iter, cst.Call) and dotted_name(node.iter.func) == "range"
                and node.iter.args):
            continue
        if any(isinstance(n, cst.Call) and dotted_name(n.func) in steps for n in iter_nodes(node.body)):
            scope = next((sc for _t, it, sc, _loc in src.loops if it is node.iter), None)
            bound = src.evaluate(node.iter.args[-1].value if len(node.iter.args) == 1 else node.iter.args[1].value, scope)
            if bound is not None and (as_int(bound.value) or 0) > 0:
                ev.setting("max_steps", bound)
            return


def _made_here(project: Project, node: cst.Name, src: PySource, scope) -> bool:
    """`reward_fn = make_reward_fn(cfg)` with `make_reward_fn` defined in the inputs: one reward function
    of the project's, named where it is passed (a plural name is a list; a factory the inputs do not
    hold may pick any function by name)."""
    made_by = src.assigned_call(node, scope)
    return made_by is not None and not node.value.endswith("s") \
        and any(made_by.name in f.python.functions for f in project.pythons())


def _trainer(project: Project, call: CallSite, trainer: str, src: PySource, ev: Evidence,
             fields: list[tuple[str, Value]]) -> None:
    ev.construct(f"{call.name}(...)", call.loc, _trainer_target(TRAINERS[trainer]))
    model = call.kwarg_node("model") or call.arg_node(0)
    config = src.assigned_call(model, call.scope) if model is not None else None
    if config is not None and config.name in TRL_CLASSES:  # TRL's first PPOTrainer(config, model, ref, tokenizer)
        model = call.arg_node(1)
    if model is not None:
        value = src.evaluate(model, call.scope)
        if value is not None and isinstance(value.value, str):
            fields.append(("trained_model", value))
        else:
            loaded = loaded_model(src, model, call.scope)
            if loaded is not None:
                fields.append(("trained_model", loaded))
    for key in ("ref_model", "teacher_model", "reward_model", "value_model"):
        node = call.kwarg_node(key)
        if node is None or (isinstance(node, cst.Name) and node.value == "None"):
            continue
        ev.extra(f"trl.{key}", Value(True, src.loc(node)))
    rewards = call.kwarg_node("reward_funcs")
    if isinstance(rewards, cst.Call) or (isinstance(rewards, cst.Name) and rewards.value == "None") \
            or (built_by_a_call(rewards, src, call.scope) and not _made_here(project, rewards, src, call.scope)):
        # a list a factory built (from the recipe's reward_funcs list), a model a loader built, or none at all
        rewards = None
    passed = passed_in(project, src, call.scope, rewards) if rewards is not None else None
    # `def train_model(..., reward_funcs)`: the list is written at its caller, in its file
    rewards, at, scope = passed if passed is not None else (rewards, src, call.scope)
    if isinstance(rewards, cst.SimpleString | cst.ConcatenatedString):  # TRL loads a string as a reward model
        ev.warn("REWARD_MODEL_SCORING", f"reward_funcs={literal_value(rewards)!r} is a reward model TRL loads, not a "
                "function. MinT serves no reward-model head: score in Python (a rule-based reward), or call a MinT "
                "sampler as a judge.", at.loc(rewards))
        rewards = None
    if rewards is not None:
        names = function_names(rewards, at, scope)
        if names:
            written = written_at(rewards, at, scope)
            where = at.loc(written if isinstance(written, cst.List | cst.Tuple) else rewards)
            ev.setting("reward_functions", Value(names, where, Level.CODE))
            for name in names:
                fn = at.functions.get(name)
                where = at.at(fn.line) if fn else at.loc(rewards)
                ev.construct(f"reward function {name}", where, "reward_fn(prompt, completion, row) -> float in train.py",
                             "a plain Python function: copy its body into the scaffold's reward")
    peft = call.kwarg_node("peft_config")
    if peft is not None and not (isinstance(peft, cst.Name) and peft.value == "None"):
        ev.extra("peft_passed", Value(True, src.loc(peft)))
    train = call.kwarg_node("train_dataset")
    if train is not None:
        node = train.value if isinstance(train, cst.Subscript) else train
        loader = src.assigned_call(node, call.scope)
        if loader is not None and loader.name in {"load_dataset", "load_from_disk"}:
            ev.setting("dataset", dataset_id(loader))
    args = call.kwarg_node("args")
    if args is not None:
        config = src.assigned_call(args, call.scope)
        if config is not None and config.name in src.classes:
            base = src.class_base(config.name, set(CONFIGS))
            if base:
                ev.vote(CONFIGS[base], config.loc, f"{config.name} (a {base})", 2)


def _left_to_fill(command) -> list[tuple[str, Value]]:
    """The model and data flags whose values only the machine knows (`--model_name_or_path "$MODEL_PATH"`),
    as written: the plan shows what the user fills, never a positional parameter alone."""
    out = []
    for arg in command.flags():
        if arg.value is None and FIELDS.get(arg.name) in ("base_model", "dataset"):
            written = arg.setting_literal(Level.COMMAND)
            if written is not None:
                out.append((arg.name, written))
    return out


def _flag_fields(flags: dict[str, Value]) -> list[tuple[str, Value]]:
    return [(name, value) for name, value in flags.items() if name in FIELDS or name in EXTRAS
            or name in {"beta", "reward_funcs", "dataset_mixer", "sft_model_path"}]


def dataset_mixture(y: InputFile, ev: Evidence) -> None:
    """A recipe's dataset_mixer (ids with weights) or dataset_mixture (a list of datasets): its ids."""
    mixer = y.yaml.under("dataset_mixer")  # {id: weight}, flattened by the reader: `dataset_mixer.<id>`
    if mixer:
        first = next(iter(mixer.values()))
        ids = list(mixer)
        ev.setting("dataset", first.with_value(ids))  # a mixture, even of one: as dataset_mixture reads
    mixture = y.yaml.get("dataset_mixture.datasets")
    if mixture is not None and isinstance(mixture.value, list):
        ids = list(dict.fromkeys(d.get("id") for d in mixture.value if isinstance(d, dict) and d.get("id")))
        if ids:  # the distinct ids (a mixture may take several splits of one), cited at the first id
            line = y.yaml.item_lines.get("dataset_mixture.datasets.0.id", mixture.loc.line)
            ev.setting("dataset", Value(ids, Loc(mixture.loc.path, line), mixture.level))


# --- fields -> settings -------------------------------------------------------------------------------


def _apply_fields(fields: list[tuple[str, Value | None]], algorithm: Algorithm, ev: Evidence) -> None:
    lora: dict[str, Value] = {}
    for name, value in fields:
        if value is None or not name:
            continue
        if name == "trained_model" or (name == "sft_model_path" and algorithm == "ppo"):
            ev.setting("base_model", value)  # PPO's policy starts from sft_model_path
        elif name == "model_name_or_path" and algorithm == "ppo":
            continue  # in TRL's PPO it only loads the tokenizer
        elif name == "max_steps" and (as_int(value.value) or 0) <= 0:
            continue  # -1: "not set", train by epochs
        elif name == "mini_batch_size" and algorithm == "ppo":
            ev.setting("per_device_batch_size", value)  # classic PPOConfig: the batch of one forward/backward
        elif name == "beta" and algorithm != "distillation":  # GKD's beta interpolates its JSD: neither
            ev.setting("kl_coef" if algorithm in {"grpo", "reinforce", "ppo"} else "beta", value)
        elif name == "reward_funcs":
            names = value.value if isinstance(value.value, list) else [value.value]
            ev.setting("reward_functions", value.with_value([str(n) for n in names]))
        elif name in {"rewards", "reward_functions", "reward_fns"} and _named_items(value.value):
            ev.setting("reward_functions", value.with_value(_named_items(value.value)))  # the recipe's own list
        elif name in FIELDS:
            ev.setting(FIELDS[name], value)
        elif name in {"lora_r", "lora_alpha", "lora_target_modules", "use_peft"}:
            lora[name] = value if name not in lora or value.level >= lora[name].level else lora[name]
        elif name in EXTRAS:
            ev.extra(f"trl.{name}", value)
    use_peft = lora.get("use_peft")
    if use_peft is not None and use_peft.value is True:
        ev.extra("used_lora", use_peft)
        ev.setting("lora.rank", lora.get("lora_r"))
        ev.setting("lora.alpha", lora.get("lora_alpha"))
        ev.setting("lora.target_modules", lora.get("lora_target_modules"))
        ev.construct("--use_peft --lora_r", use_peft.loc, "create_lora_training_client(base_model, rank=lora_r)")
        if "lora_alpha" in lora or "lora_target_modules" in lora:
            ev.warn("LORA_OPTIONS", "lora_alpha / lora_target_modules have no MinT equivalent: MinT takes only "
                    "the rank and trains attention, MLP and unembedding.", use_peft.loc)
    elif "lora_r" in lora:
        ev.construct("--lora_r without --use_peft", lora["lora_r"].loc, "(ignored)",
                     "TRL only builds a LoRA adapter when use_peft is true; this run trains all parameters")


# --- warnings and constructs ---------------------------------------------------------------------------


def _warnings(algorithm: Algorithm, ev: Evidence) -> None:
    x = ev.extras
    if "trl.use_vllm" in x and x["trl.use_vllm"].value is True:
        server_side(ev, "use_vllm (vLLM generation)", x["trl.use_vllm"].loc)
    for key in ("trl.deepspeed", "trl.fsdp"):
        if key in x and x[key].value:
            server_side(ev, f"{key.split('.')[1]}={x[key].value}", x[key].loc)
    for key in ("trl.load_in_4bit", "trl.load_in_8bit"):
        if key in x and x[key].value is True:
            ev.warn("QUANTIZATION", "Quantized loading is not a client choice on MinT: the server holds the base "
                    "model; drop load_in_4bit/8bit.", x[key].loc)
    if "trl.gradient_checkpointing" in x:
        ev.construct("gradient_checkpointing", x["trl.gradient_checkpointing"].loc, "(nothing)",
                     "memory is managed server-side")
    if "trl.max_grad_norm" in x:
        ev.construct(f"max_grad_norm={x['trl.max_grad_norm'].value}", x["trl.max_grad_norm"].loc,
                     f"AdamParams(grad_clip_norm={x['trl.max_grad_norm'].value})")
    if "trl.weight_decay" in x:
        ev.construct(f"weight_decay={x['trl.weight_decay'].value}", x["trl.weight_decay"].loc,
                     f"AdamParams(weight_decay={x['trl.weight_decay'].value})", "decoupled (AdamW-style) on MinT")
    if "trl.lr_scheduler_type" in x or "trl.warmup_ratio" in x:
        v = x.get("trl.lr_scheduler_type") or x["trl.warmup_ratio"]
        ev.construct("lr_scheduler_type / warmup_ratio", v.loc, "learning rate computed per step in train.py",
                     "MinT takes the learning rate in every optim_step(AdamParams(...)); schedule it client-side")
    if "trl.packing" in x and x["trl.packing"].value is True:
        ev.construct("packing=True", x["trl.packing"].loc, "one sequence per Datum",
                     "MinT batches Datums server-side; packing is not needed")
    if "trl.loss_type" in x and algorithm in {"grpo", "reinforce"}:
        loss = x["trl.loss_type"]
        if loss.value in {"dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo"}:
            ev.set_variant(str(loss.value), loss.loc)
    if "trl.importance_sampling_level" in x and x["trl.importance_sampling_level"].value == "sequence":
        ev.set_variant("gspo", x["trl.importance_sampling_level"].loc)
    if algorithm in {"grpo", "reinforce", "ppo"}:
        ev.extra("clip_high", x.get("trl.epsilon_high"))
        if "trl.epsilon_high" in x:
            ev.extra("clip_low", ev.candidates.get("clip_ratio", [None])[-1])
        loss = x.get("trl.loss_type")
        ev.warn("LOSS_AGGREGATION", "MinT's losses sum over tokens; TRL normalises them (loss_type="
                f"{loss.value if loss else 'dapo'}: per-token averages). Scale the advantages by 1/len(completion) "
                "to keep the same per-token weighting.", loss.loc if loss else None)
    if "trl.num_iterations" in x and isinstance(x["trl.num_iterations"].value, int) and x["trl.num_iterations"].value > 1:
        ev.warn("MULTI_UPDATE", f"num_iterations={x['trl.num_iterations'].value}: TRL reuses each batch for several "
                "updates. On MinT run that many forward_backward + optim_step passes over the same Datums "
                "(the importance-sampling ratio corrects for the drift), or keep one update per batch.",
                x["trl.num_iterations"].loc)
    if algorithm == "ppo" or "trl.vf_coef" in x or "trl.value_model" in x:
        loc = (x.get("trl.vf_coef") or x.get("trl.value_model") or Value(None, None)).loc
        ev.warn("CRITIC_GAE", "TRL PPO trains a value model (critic) for GAE advantages. MinT has no value "
                "model: the migration uses a group baseline (GRPO: several samples per prompt, advantages = "
                "reward - group mean) with the ppo clipped loss.", loc)
    if "trl.reward_model" in x or "trl.reward_model_path" in x:
        v = x.get("trl.reward_model") or x["trl.reward_model_path"]
        ev.warn("REWARD_MODEL_SCORING", "A learned reward model scores the rollouts. MinT serves no reward-model "
                "head: score in Python (a rule-based reward), or call a MinT sampler as a judge.", v.loc)
    if algorithm in {"grpo", "reinforce", "ppo"}:
        kl = ev.best("kl_coef")
        if kl is not None and isinstance(kl.value, int | float) and kl.value > 0:
            ev.warn("KL_REFERENCE", f"KL to the reference model (beta/kl_coef={kl.value}): MinT's built-in losses "
                    "have no KL term. Fold it into the reward (reward - coef * (logp - logp_ref), reference "
                    "logprobs from a base-model sampler's compute_logprobs), or drop it.", kl.loc)
    if algorithm in {"kto", "orpo"} or ev.variant in {"cpo", "bco"}:
        name = ev.variant.upper() if ev.variant in {"cpo", "bco"} else algorithm.upper()
        vote = ev.algorithm()
        ev.warn("CUSTOM_LOSS", f"{name} has no built-in MinT loss. The migration uses the DPO scaffold's "
                "forward_backward_custom path: replace its pairwise loss with the " + name + " objective "
                "(computed from the per-token logprobs the custom loss receives).", vote.loc if vote else None)
    if algorithm == "reward_model":
        vote = ev.algorithm()
        ev.warn("REWARD_MODEL_TRAINING", "Reward-model training (a scalar head trained on chosen/rejected pairs) "
                "has no MinT equivalent: MinT trains LoRA adapters of a causal LM, without a value head. The "
                "migration uses the DPO scaffold's pairwise forward_backward_custom, a Bradley-Terry loss on "
                "sequence logprobs: an approximation, not the same model.", vote.loc if vote else None)
    if algorithm == "distillation":
        v = x.get("trl.teacher_model") or x.get("trl.teacher_model_name_or_path")
        if v is not None:
            teacher_warning(ev, "the teacher model", v.loc)
            ev.construct("teacher model", v.loc, TEACHER_FLAG,
                         "GKD's generalised JSD becomes reverse KL via mint.mint.forward_backward_reverse_kl")


def _config_target(algorithm: Algorithm) -> str:
    return {
        "sft": "argparse flags + forward_backward(loss_fn='cross_entropy')",
        "dpo": "argparse flags + forward_backward_custom(DPO loss)",
        "grpo": "argparse flags + group sampling + forward_backward(loss_fn='importance_sampling')",
    }.get(algorithm, "argparse flags of the MinT train.py")


def _trainer_target(algorithm: Algorithm) -> str:
    return {
        "sft": "training loop: forward_backward(data, 'cross_entropy') + optim_step(AdamParams)",
        "dpo": "training loop: forward_backward_custom(pairs, dpo_loss) with step-0 reference logprobs",
        "grpo": "rollout loop: sample(num_samples=group_size) -> reward -> group advantages -> "
                "forward_backward(data, 'importance_sampling')",
        "ppo": "rollout loop with group advantages and loss_fn='ppo' (no critic)",
        "reinforce": "rollout loop with group (leave-one-out) advantages and 'importance_sampling'",
        "kto": "forward_backward_custom with a KTO loss (DPO scaffold)",
        "orpo": "forward_backward_custom with an ORPO loss (DPO scaffold)",
        "reward_model": "forward_backward_custom with a pairwise loss (approximation)",
        "distillation": "mint.mint.forward_backward_reverse_kl against the teacher",
    }.get(algorithm, "the MinT training loop")


_TRAINING_ARGUMENTS = {
    "per_device_batch_size": (8, "TrainingArguments.per_device_train_batch_size"),
    "gradient_accumulation_steps": (1, "TrainingArguments.gradient_accumulation_steps"),
    "num_epochs": (3.0, "TrainingArguments.num_train_epochs"),
}
_DEFAULTS: dict[str, dict[str, tuple[object, str]]] = {
    "sft": {"learning_rate": (2e-5, "SFTConfig.learning_rate"), "max_seq_length": (1024, "SFTConfig.max_length")},
    "dpo": {"learning_rate": (1e-6, "DPOConfig.learning_rate"), "beta": (0.1, "DPOConfig.beta"),
            "max_seq_length": (1024, "DPOConfig.max_length")},
    "grpo": {"learning_rate": (1e-6, "GRPOConfig.learning_rate"), "num_generations": (8, "GRPOConfig.num_generations"),
             "max_response_length": (512, "GRPOConfig.max_completion_length"),
             "temperature": (1.0, "GRPOConfig.temperature"), "kl_coef": (0.0, "GRPOConfig.beta"),
             "clip_ratio": (0.2, "GRPOConfig.epsilon")},
    "kto": {"learning_rate": (1e-6, "KTOConfig.learning_rate"), "beta": (0.1, "KTOConfig.beta")},
    "reward_model": {"learning_rate": (1e-4, "RewardConfig.learning_rate"),
                     "max_seq_length": (1024, "RewardConfig.max_length")},
}


def defaults(algorithm: Algorithm) -> dict[str, tuple[object, str]]:
    return {**_TRAINING_ARGUMENTS, **_DEFAULTS.get(algorithm, {})}


def optimizer_defaults(algorithm: Algorithm) -> dict[str, tuple[float, str]]:
    """transformers' TrainingArguments, which every TRL config extends (AdamW, clipping at 1.0)."""
    return {"beta1": (0.9, "TrainingArguments.adam_beta1"), "beta2": (0.999, "TrainingArguments.adam_beta2"),
            "eps": (1e-8, "TrainingArguments.adam_epsilon"), "weight_decay": (0.0, "TrainingArguments.weight_decay"),
            "grad_clip_norm": (1.0, "TrainingArguments.max_grad_norm")}


def _is_trl_command(command, script) -> bool:
    return command.program == "trl"

# --- the task: data, reward and schedule (the planner calls read_task through the registry) ----------


_TRL_BUILTIN_REWARDS = {"accuracy_reward", "think_format_reward", "get_soft_overlong_punishment"}


_TRL_LOSS_TYPES = {"grpo": "sequence_mean", "bnpo": "token_mean", "dapo": "token_mean", "dr_grpo": "constant"}


def read_task(project: Project, ev: Evidence, algorithm: Algorithm, kind: ScaffoldKind, settings: Settings,
         task: Task) -> None:
    x = ev.extras
    if settings.dataset is not None:
        task.data = data_source(project, settings.dataset.value, settings.dataset.source)
    if task.data is not None:
        load_dataset_call(project, task.data)
        mapped_rows(project, task.data)
        split, subset = x.get("trl.dataset_train_split"), x.get("trl.dataset_config")
        task.data.split = str(split.value) if split is not None else task.data.split
        task.data.subset = str(subset.value) if subset is not None else task.data.subset
        text_field = x.get("trl.dataset_text_field")
        if kind == "sft" and text_field is not None and text_field.value != "text":
            task.data.fields["text"] = str(text_field.value)
        task.data.notes.append("TRL's column names carry over: prompt / completion / messages / text for SFT, "
                               "prompt / chosen / rejected for DPO, prompt (+ the reward's columns) for GRPO")
    scheduler, ratio, steps = x.get("trl.lr_scheduler_type"), x.get("trl.warmup_ratio"), x.get("trl.warmup_steps")
    where = ", ".join(str(v.loc) for v in (scheduler, ratio, steps) if v is not None)
    schedule_from(task, str(scheduler.value) if scheduler is not None else "linear",
                   steps.value if steps else None, ratio.value if ratio else None,
                   why=where or "TrainingArguments' default lr_scheduler_type=linear, no warmup")
    if kind == "sft":
        normalize_loss(task, "token_mean", "SFTTrainer averages the loss over the batch's trained tokens")
        only, completion_only = x.get("trl.assistant_only_loss"), x.get("trl.completion_only_loss")
        if only is not None and only.value is True:
            task.schedule.reasons.append(f"chat rows train the assistant's answer (assistant_only_loss, {only.loc}); "
                                         "train.py trains the last assistant message")
        elif completion_only is not None and completion_only.value is False:
            task.schedule.train_on = "all"
            task.schedule.reasons.append(f"every token is trained (completion_only_loss=False, {completion_only.loc})")
        else:  # TRL's defaults, whatever the rows turn out to be
            task.schedule.train_on = "conversation"
            task.schedule.reasons.append("TRL trains every token of a conversation ('messages' rows) and only the "
                                         "completion of a prompt/completion row (assistant_only_loss and "
                                         "completion_only_loss at their defaults): TRAIN_ON = 'conversation'")
    if kind == "grpo":
        loss = x.get("trl.loss_type")
        mode = _TRL_LOSS_TYPES.get(str(loss.value) if loss else "dapo", "token_mean")
        normalize_loss(task, mode, f"loss_type={loss.value} ({loss.loc})" if loss else "GRPOConfig's default loss_type=dapo")
        iterations = x.get("trl.num_iterations")
        if iterations is not None and (as_int(iterations.value) or 1) > 1:
            task.schedule.updates_per_batch = as_int(iterations.value)
            task.schedule.reasons.append(f"{iterations.value} updates per sampled batch (num_iterations, "
                                         f"{iterations.loc})")
        scale = x.get("trl.scale_rewards")
        task.schedule.normalize_advantages = scale is None or scale.value not in (False, "none", "false")
        task.schedule.reasons.append("advantages divided by the group's std" if task.schedule.normalize_advantages
                                     else f"advantages not scaled (scale_rewards={scale.value}, {scale.loc})")
        task.reward = _trl_reward(project, ev, settings)
    if x.get("trl.steps_per_generation") is not None:
        v = x["trl.steps_per_generation"]
        task.warn("STEPS_PER_GENERATION", f"steps_per_generation={v.value}: TRL splits each generation batch into "
                  "that many optimizer steps; train.py takes one sampled batch per step (use --minibatches).", str(v.loc))


def _trl_reward(project: Project, ev: Evidence, settings: Settings) -> RewardPlan:
    names = settings.reward_functions.value if settings.reward_functions is not None else []
    where = settings.reward_functions.source if settings.reward_functions is not None else None
    weights_value = ev.extras.get("trl.reward_weights")
    weights = [float(w) for w in weights_value.value] if weights_value is not None and isinstance(
        weights_value.value, list) else [1.0] * len(names)
    if len(weights) != len(names):
        weights = [1.0] * len(names)
    if not names:
        return RewardPlan(style="trl", status="placeholder", source=where, reason="no reward_funcs found")
    plan = python_reward(project, names, weights, "trl", where)
    builtin = [n for n in names if n in _TRL_BUILTIN_REWARDS or "/" in n]
    if plan.status == "user" or not builtin:
        return plan
    plan.reason = (f"{', '.join(builtin)} {'is' if len(builtin) == 1 else 'are'} TRL's own (trl.rewards) or a reward "
                   "model, which a MinT machine does not have: write them as Python functions (or pip install trl "
                   "and pass --reward FILE:NAME)")
    return plan


_IMPORTS = ("trl", "alignment", "open_r1", "verifiers")  # alignment-handbook, open-r1 and verifiers drive TRL trainers


def _shows_trl(src: PySource) -> Loc | None:
    """An import of TRL (or of a package driving it), or a TRL trainer class taken from a copy of TRL
    vendored under another name (`from trl_main import GRPOTrainer`)."""
    found = src.imports_module(*_IMPORTS) or src.imports_wrapper_of(*_IMPORTS)
    if found is not None:
        return found
    for local, qualified in src.imports.items():
        top = qualified.split(".")[0]
        if top.startswith("trl") and trl_class(local, TRAINERS) is not None:
            return src.imports_module(top)
    return None


ANALYZER = Analyzer(
    read_task=read_task,
    name="trl",
    signals="`from trl import SFTTrainer/DPOTrainer/GRPOTrainer/...`, `*Config(...)`, `TrlParser`/`HfArgumentParser`, "
            "`trl sft ...`, recipe YAMLs (`model_name_or_path`, `learning_rate`, ...), alignment-handbook or open-r1 "
            "entry points (they drive TRL trainers)",
    analyze=analyze,
    defaults=defaults,
    optimizer_defaults=optimizer_defaults,
    reserved_in={"ppo": ("model_name_or_path",)},  # PPO examples load only the tokenizer from it
    batch_is_per_device=True,
    imports=_IMPORTS,
    detect_python=_shows_trl,
    detect_command=_is_trl_command,
    detect_config=looks_like_recipe,
)
