"""The user's task, beyond the settings: their data, their reward and their schedule.

Each framework says these three things its own way: TRL in config fields and `reward_funcs`,
verl in hydra keys (`data.prompt_key`, `custom_reward_function.path`, `optim.warmup_style`),
OpenRLHF in flags (`--input_key`, `--remote_rm_url`, `--lr_warmup_ratio`), torchforge in its app
config and actors, Tinker and plain PyTorch in code. This module reads them from the parsed
Project (and the Evidence the framework analyzer collected) into the plan's DataPlan, RewardPlan
and SchedulePlan. Framework defaults that decide the outcome (TRL's linear LR decay, OpenRLHF's
cosine-with-min-lr, verl's token-mean loss) are applied and said so in the reasons.
"""

import os
from dataclasses import dataclass, field
from pathlib import Path

from mcp_server.analyze.evidence import Evidence, Value
from mcp_server.analyze.inputs import InputFile, Project, add_file
from mcp_server.analyze.openrlhf import is_openrlhf_command
from mcp_server.analyze.pycommon import dataset_calls
from mcp_server.analyze.pyvalues import PySource
from mcp_server.analyze.scalars import as_int, as_number
from mcp_server.analyze.verl import is_verl_command
from mcp_server.plan import (
    Algorithm,
    DataPlan,
    PlanWarning,
    RewardFunction,
    RewardPlan,
    ScaffoldKind,
    SchedulePlan,
    Settings,
)
from mcp_server.pyparse import parse_ast

DATA_SUFFIXES = (".parquet", ".jsonl", ".json", ".csv")
# TRL's built-in reward functions (trl.rewards) and verl's built-in scorers live in framework
# packages a MinT machine does not have.
_TRL_BUILTIN_REWARDS = {"accuracy_reward", "think_format_reward", "get_soft_overlong_punishment"}
_REWARD_WORDS = ("reward", "score", "correct", "grade", "accuracy", "check_answer")


@dataclass
class Task:
    data: DataPlan | None = None
    reward: RewardPlan | None = None
    schedule: SchedulePlan = field(default_factory=SchedulePlan)
    throughput: str | None = None  # why the source asks for the throughput variant, if it does
    warnings: list[PlanWarning] = field(default_factory=list)

    def warn(self, code: str, message: str, source: str | None = None) -> None:
        self.warnings.append(PlanWarning(code=code, message=message, source=source))


def extract(project: Project, ev: Evidence, framework: str, algorithm: Algorithm, kind: ScaffoldKind,
            settings: Settings) -> Task:
    """Data, reward and schedule of the source, for the scaffold `kind`."""
    task = Task()
    reader = _READERS.get(framework)
    if reader is not None:
        reader(project, ev, algorithm, kind, settings, task)
    if task.data is None and settings.dataset is not None:
        task.data = _data_source(project, settings.dataset.value, settings.dataset.source)
    if task.data is not None:
        _default_fields(task.data, kind)
    if kind != "grpo":
        task.reward = None
    elif task.reward is None:
        task.reward = RewardPlan(style="plain", status="placeholder", reason="the inputs name no reward function; "
                                 "train.py's placeholder (last number equals the answer) stands in: replace it, or "
                                 "pass --reward FILE:FUNCTION")
    epochs = settings.num_epochs
    if epochs is not None and as_number(epochs.value) and task.schedule.epochs is None:
        task.schedule.epochs = float(as_number(epochs.value))
    return task


# --- data ----------------------------------------------------------------------------------------


def _data_source(project: Project, value: object, where: str | None) -> DataPlan | None:
    """A DataPlan for a dataset setting: a local file (found beside the inputs), or a Hub id."""
    if isinstance(value, list):
        value = value[0] if value else None
    if not isinstance(value, str) or not value:
        return None
    data = DataPlan(source=value, source_loc=where)
    local = _local_file(project, value)
    if local is not None:
        data.source_kind, data.local_path = "local", str(local)
    elif value.lower().endswith(DATA_SUFFIXES) or value.startswith(("/", ".", "~", "$")):
        data.source_kind = "local"
        data.notes.append(f"{value} is not on this machine: train.py looks for it there at run time "
                          "($VARS and ~ expanded); pass --data FILE to use another copy")
    elif "/" in value or value.replace("-", "").replace("_", "").isalnum():
        data.source_kind = "hub"
    return data


def _local_file(project: Project, written: str) -> Path | None:
    """The data file a path names, relative to any input file's folder ($HOME and ~ expanded)."""
    expanded = os.path.expanduser(os.path.expandvars(written))
    candidates = [Path(expanded)] if Path(expanded).is_absolute() else [
        f.path.parent / expanded for f in project.files]
    for candidate in candidates:
        if candidate.is_file() and candidate.suffix.lower() in DATA_SUFFIXES:
            return candidate.resolve()
    return None


def _default_fields(data: DataPlan, kind: ScaffoldKind) -> None:
    if data.format == "unknown":
        data.format = {"grpo": "prompt_answer", "distill": "prompt_answer", "dpo": "preference"}.get(kind, "unknown")


def _load_dataset_call(project: Project, data: DataPlan) -> None:
    """load_dataset(name, subset, split=...) in the sources: the subset and split it reads."""
    for f in project.pythons():
        for call in dataset_calls(f.python):
            subset, split = call.arg(1), call.kwarg("split")
            if subset is not None and isinstance(subset.value, str) and data.subset is None:
                data.subset = subset.value
            if split is not None and isinstance(split.value, str) and data.split is None:
                data.split = split.value
            return


# --- schedule helpers ------------------------------------------------------------------------------


def _schedule_from(task: Task, kind: str | None, warmup_steps: object = None, warmup_ratio: object = None,
                   min_lr_ratio: object = None, why: str = "") -> None:
    s = task.schedule
    if kind in ("constant", "linear", "cosine"):
        s.lr_schedule = kind
    if as_int(warmup_steps) and as_int(warmup_steps) > 0:
        s.warmup_steps = as_int(warmup_steps)
    if as_number(warmup_ratio) and 0 < as_number(warmup_ratio) < 1:
        s.warmup_ratio = float(as_number(warmup_ratio))
    if as_number(min_lr_ratio) and 0 < as_number(min_lr_ratio) <= 1:
        s.min_lr_ratio = float(as_number(min_lr_ratio))
    warm = f", warmup {s.warmup_steps} steps" if s.warmup_steps else (
        f", warmup {s.warmup_ratio:g} of the steps" if s.warmup_ratio else "")
    floor = f", floor {s.min_lr_ratio:g} x LR" if s.min_lr_ratio else ""
    s.reasons.append(f"learning rate: {s.lr_schedule}{warm}{floor} ({why}); train.py passes it to every "
                     "optim_step as AdamParams(learning_rate=...)")


def _norm(task: Task, mode: str, why: str) -> None:
    task.schedule.loss_normalization = mode
    what = {"token_mean": "divides by the trained tokens of the batch",
            "sequence_mean": "averages each sequence over its tokens, then over the sequences",
            "constant": "divides by a fixed length (max tokens) and the number of sequences",
            "sum": "sums over tokens, as MinT does"}[mode]
    task.schedule.reasons.append(f"loss {mode}: the source {what} ({why}); MinT sums, so train.py scales the "
                                 "per-token weights/advantages (LOSS_NORMALIZATION)")


def _updates(task: Task, batch: int | None, mini: int | None, mini_why: str, epochs: int | None,
             epochs_why: str) -> None:
    """PPO's shape: the sampled batch split into mini-batches (one optim_step each), and passes over it."""
    if batch and mini and 0 < mini < batch and batch % mini == 0:
        task.schedule.minibatches = batch // mini
        task.schedule.reasons.append(f"{batch // mini} optim_steps per sampled batch = {mini_why}")
    if epochs and epochs > 1:
        task.schedule.updates_per_batch = epochs
        task.schedule.reasons.append(f"{epochs} passes over each sampled batch ({epochs_why})")


# --- TRL -----------------------------------------------------------------------------------------


_TRL_LOSS_TYPES = {"grpo": "sequence_mean", "bnpo": "token_mean", "dapo": "token_mean", "dr_grpo": "constant"}


def _trl(project: Project, ev: Evidence, algorithm: Algorithm, kind: ScaffoldKind, settings: Settings,
         task: Task) -> None:
    x = ev.extras
    if settings.dataset is not None:
        task.data = _data_source(project, settings.dataset.value, settings.dataset.source)
    if task.data is not None:
        _load_dataset_call(project, task.data)
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
    _schedule_from(task, str(scheduler.value) if scheduler is not None else "linear",
                   steps.value if steps else None, ratio.value if ratio else None,
                   why=where or "TrainingArguments' default lr_scheduler_type=linear, no warmup")
    if kind == "sft":
        _norm(task, "token_mean", "SFTTrainer averages the loss over the batch's trained tokens")
        only = x.get("trl.assistant_only_loss")
        if only is not None and only.value is True:
            task.schedule.reasons.append(f"chat rows train the assistant's answer (assistant_only_loss, {only.loc}); "
                                         "train.py trains the last assistant message")
        else:
            task.warn("TRAIN_ON", "TRL trains every token of a conversational ('messages') dataset unless "
                      "assistant_only_loss=True; train.py trains only the last assistant message (TRAIN_ON = "
                      "'completion'). Set TRAIN_ON = 'all' if your data is conversational and you want TRL's "
                      "objective exactly.")
    if kind == "grpo":
        loss = x.get("trl.loss_type")
        mode = _TRL_LOSS_TYPES.get(str(loss.value) if loss else "dapo", "token_mean")
        _norm(task, mode, f"loss_type={loss.value} ({loss.loc})" if loss else "GRPOConfig's default loss_type=dapo")
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
    plan = _python_reward(project, names, weights, "trl", where)
    builtin = [n for n in names if n in _TRL_BUILTIN_REWARDS or "/" in n]
    if plan.status == "user" or not builtin:
        return plan
    plan.reason = (f"{', '.join(builtin)} {'is' if len(builtin) == 1 else 'are'} TRL's own (trl.rewards) or a reward "
                   "model, which a MinT machine does not have: write them as Python functions (or pip install trl "
                   "and pass --reward FILE:NAME)")
    return plan


def _python_reward(project: Project, names: list[str], weights: list[float], style: str,
                   where: str | None) -> RewardPlan:
    """Reward functions named in the sources: defined in a Python input (extracted) or imported
    from a local module (referenced)."""
    functions = [RewardFunction(name=n.rsplit(".", 1)[-1], weight=w) for n, w in zip(names, weights, strict=True)]
    for f in project.pythons():
        defined = [n for n in (fn.name for fn in functions) if n in f.python.functions or n in f.python.classes]
        if len(defined) == len(functions):
            importable = _importable(f.python)
            return RewardPlan(style=style, status="user", functions=functions, file=str(f.path.resolve()),
                              extract=not importable, source=where,
                              reason=f"{', '.join(defined)} from {f.label}" + (
                                  "" if importable else " (copied verbatim into rewards.py: importing the script "
                                  "itself would need its training framework, or start training)"))
    for f in project.pythons():
        modules = {f.python.imports[fn.name].rpartition(".")[0] for fn in functions if fn.name in f.python.imports}
        if len(modules) == 1 and all(fn.name in f.python.imports for fn in functions):
            module = next(iter(modules))
            if module.split(".")[0] in {"trl", "verl", "openrlhf", "forge", "tinker_cookbook"}:
                return RewardPlan(style=style, status="placeholder", functions=functions, source=where,
                                  reason=f"{', '.join(n.name for n in functions)} come from {module}, a framework "
                                         "package a MinT machine does not have: write them as Python functions and "
                                         "pass --reward FILE:NAME")
            found = _module_file(project, f, module)
            if found is not None:
                return RewardPlan(style=style, status="user", functions=functions, file=str(found), source=where,
                                  reason=f"{', '.join(n.name for n in functions)} from {found.name} (imported by "
                                         f"{f.label})")
    return RewardPlan(style=style, status="placeholder", functions=functions, source=where,
                      reason=f"{', '.join(n.name for n in functions)}: not defined in the inputs; pass the file that "
                             "defines them with --config, or --reward FILE:NAME to train.py")


_FRAMEWORK_MODULES = ("trl", "verl", "openrlhf", "forge", "tinker", "tinker_cookbook", "datasets", "transformers",
                      "accelerate", "deepspeed", "vllm", "ray", "peft", "monarch", "mint")


def _importable(src: PySource) -> bool:
    """Can train.py import this file as it is: only definitions at module level (importing it starts
    no training), and no training framework imported (a MinT machine has none)?"""
    import ast

    if src.imports_module(*_FRAMEWORK_MODULES) is not None:
        return False
    allowed = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign,
               ast.AnnAssign, ast.Expr, ast.If)
    for node in parse_ast(src.text, src.label).body:
        if not isinstance(node, allowed):
            return False
        if isinstance(node, ast.If) and "__name__" not in ast.unparse(node.test):
            return False
        if isinstance(node, ast.Expr) and not isinstance(node.value, ast.Constant):
            return False
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
            name = ast.unparse(node.value.func)
            if not name.startswith(("re.compile", "logging.getLogger", "TypeVar", "frozenset", "set", "dict")):
                return False
    return True


def _module_file(project: Project, f: InputFile, module: str) -> Path | None:
    relative = Path(*module.split(".")).with_suffix(".py")
    for base in {f.path.parent, *(g.path.parent for g in project.files)}:
        candidate = base / relative
        if candidate.is_file():
            return candidate.resolve()
    return None


# --- verl ----------------------------------------------------------------------------------------


def _hydra(project: Project) -> dict[str, Value]:
    """verl's config: the YAML files, then the launch command's key=value overrides on top."""
    config: dict[str, Value] = {}
    for y in project.yamls():
        config.update(y.yaml.values)
    command = next((c for c in project.commands() if is_verl_command(c)), None)
    for arg in command.overrides() if command is not None else []:
        if arg.value is not None:
            config[arg.name] = arg.value
    return config


_VERL_AGG = {"token-mean": "token_mean", "seq-mean-token-mean": "sequence_mean", "seq-mean-token-sum": "sum",
             "seq-mean-token-sum-norm": "constant"}


def _verl(project: Project, ev: Evidence, algorithm: Algorithm, kind: ScaffoldKind, settings: Settings,
          task: Task) -> None:
    c = _hydra(project)

    def get(key: str):
        return c[key].value if key in c else None

    data = None
    if settings.dataset is not None:
        data = task.data = _data_source(project, settings.dataset.value, settings.dataset.source)
    if kind == "sft":
        if data is not None:
            prompt_key, response_key = get("data.prompt_key") or "prompt", get("data.response_key") or "response"
            prompt_sub, response_sub = get("data.prompt_dict_keys"), get("data.response_dict_keys")
            prompt_sub = prompt_sub[0] if isinstance(prompt_sub, list) and prompt_sub else None
            response_sub = response_sub[0] if isinstance(response_sub, list) and response_sub else None
            data.fields = {"prompt": f"{prompt_key}.{prompt_sub}" if prompt_sub else str(prompt_key),
                           "completion": f"{response_key}.{response_sub}" if response_sub else str(response_key)}
            data.chat_template, data.format = True, "prompt_completion"
            data.notes.append("verl's SFT dataset puts the prompt in a user message (chat template) and appends the "
                              "response and eos")
        _schedule_from(task, str(get("optim.warmup_style") or get("optim.lr_scheduler") or "cosine"),
                       why="verl's fsdp_sft_trainer: cosine after a warmup of optim.warmup_steps_ratio",
                       warmup_ratio=get("optim.warmup_steps_ratio"))
        _norm(task, "token_mean", "verl's SFT loss averages over the batch's response tokens")
        return
    if data is not None:
        prompt_key = get("data.prompt_key") or "prompt"
        # verl forks name the answer column (EasyR1's data.answer_key); verl keeps it in reward_model
        data.fields = {"prompt": str(prompt_key), "answer": str(get("data.answer_key") or "reward_model.ground_truth")}
        data.format = "prompt_answer"
        data.max_samples = as_int(get("data.train_max_samples")) if (as_int(get("data.train_max_samples")) or 0) > 0 \
            else None
        data.notes.append("verl's RL parquet: a chat `prompt` column (messages), the answer in "
                          "reward_model.ground_truth, data_source and extra_info for the reward")
    optim = "actor_rollout_ref.actor.optim."
    style = get(optim + "warmup_style") or get(optim + "lr_scheduler_type") or "constant"
    steps = get(optim + "lr_warmup_steps")
    _schedule_from(task, str(style), steps if (as_int(steps) or -1) > 0 else None,
                   get(optim + "lr_warmup_steps_ratio"), get(optim + "min_lr_ratio"),
                   why="actor_rollout_ref.actor.optim (verl's default: constant, no warmup)")
    agg = get("actor_rollout_ref.actor.loss_agg_mode") or "token-mean"
    _norm(task, _VERL_AGG.get(str(agg), "token_mean"), f"loss_agg_mode={agg}")
    norm = c.get("algorithm.norm_adv_by_std_in_grpo")
    task.schedule.normalize_advantages = norm is None or norm.value is not False
    prompts, mini = as_int(get("data.train_batch_size")), as_int(get("actor_rollout_ref.actor.ppo_mini_batch_size"))
    _updates(task, prompts, mini, f"data.train_batch_size {prompts} / ppo_mini_batch_size {mini}",
             as_int(get("actor_rollout_ref.actor.ppo_epochs")), "ppo_epochs")
    if str(get("actor_rollout_ref.rollout.mode") or "") == "async":
        task.throughput = f"actor_rollout_ref.rollout.mode=async ({c['actor_rollout_ref.rollout.mode'].loc})"
    task.reward = _verl_reward(project, c)


def _verl_reward(project: Project, c: dict[str, Value]) -> RewardPlan:
    path = c.get("custom_reward_function.path")
    if c.get("reward_model.enable") is not None and c["reward_model.enable"].value is True:
        return RewardPlan(style="verl", status="placeholder", source=str(c["reward_model.enable"].loc),
                          reason="reward_model.enable=True scores with a learned reward model, which MinT does not "
                                 "serve: write a Python reward (or call a MinT sampler as a judge)")
    given = [f for f in project.pythons() if "compute_score" in f.python.functions]
    if path is None and given:  # the reward module was given itself (with --config, or alone)
        return _python_reward(project, ["compute_score"], [1.0], "verl", None)
    if path is None:
        return RewardPlan(style="verl", status="placeholder",
                          reason="no custom_reward_function: verl scores with its built-in scorer for each row's "
                                 "data_source (verl.utils.reward_score, e.g. gsm8k, math), part of the verl package a "
                                 "MinT machine does not have; pass --reward FILE:compute_score")
    name = c.get("custom_reward_function.name")
    fn = str(name.value) if name is not None else "compute_score"
    kwargs = c.get("custom_reward_function.reward_kwargs")
    found = _reward_module(project, str(path.value))
    plan = RewardPlan(style="verl", status="placeholder", functions=[RewardFunction(name=fn)], source=str(path.loc),
                      kwargs=dict(kwargs.value) if kwargs is not None and isinstance(kwargs.value, dict) else {})
    if found is None or found.python is None:
        plan.reason = f"{path.value} was not given and is not beside the inputs: pass it with --config"
    elif fn not in found.python.functions:
        plan.reason = f"{found.label} defines no {fn}"
    else:
        plan.status, plan.file = "user", str(found.path.resolve())
        plan.reason = f"{fn} from {found.label} (custom_reward_function)"
    return plan


def _reward_module(project: Project, written: str) -> InputFile | None:
    found = project.find(written)
    if found is not None:
        return found
    for base in {f.path.parent for f in project.files}:
        candidate = base / os.path.expanduser(written)
        if candidate.is_file() and candidate.suffix == ".py":
            return add_file(project, candidate, auto=True)
    return None


# --- OpenRLHF ------------------------------------------------------------------------------------


def _flag(flags: dict, *names: str) -> Value | None:
    """A flag by its flat name or any dotted spelling ending in it (--data.input_key)."""
    for name in names:
        for key, arg in flags.items():
            if (key == name or key.endswith("." + name)) and arg.value is not None:
                return arg.value
    return None


def _switch(flags: dict, name: str) -> bool:
    return any(key == name or key.endswith("." + name) for key in flags)


def _openrlhf(project: Project, ev: Evidence, algorithm: Algorithm, kind: ScaffoldKind, settings: Settings,
              task: Task) -> None:
    command = next((c for c in project.commands() if is_openrlhf_command(c)), None)
    if command is None:
        return
    flags = {a.name: a for a in command.flags()}

    def text(*names: str) -> str | None:
        v = _flag(flags, *names)
        return None if v is None else str(v.value)

    if settings.dataset is not None:
        data = task.data = _data_source(project, settings.dataset.value, settings.dataset.source)
        if data is not None:
            data.chat_template = _switch(flags, "apply_chat_template")
            data.prompt_template = text("input_template")
            data.split = text("prompt_split", "dataset_split") or data.split
            samples = _flag(flags, "max_samples")
            data.max_samples = as_int(samples.value) if samples is not None and (as_int(samples.value) or 0) < 10**8 \
                else None
            key = text("input_key") or "input"
            if kind == "grpo":
                data.fields = {"prompt": key, **({"answer": text("label_key")} if text("label_key") else {})}
            elif kind == "sft":
                data.fields = {"prompt": key, "completion": text("output_key") or "output"}
                data.format = "prompt_completion"
            elif kind == "dpo":
                prompt = text("prompt_key")
                data.fields = {"chosen": text("chosen_key") or "chosen", "rejected": text("rejected_key") or "rejected",
                               **({"prompt": prompt} if prompt else {})}
            data.notes.append("OpenRLHF's keys: " + ", ".join(f"{k} <- {v}" for k, v in data.fields.items())
                              + ("; --apply_chat_template: a string prompt becomes a user message"
                                 if data.chat_template else ""))
    scheduler = text("lr_scheduler") or "cosine_with_min_lr"
    ratio = _flag(flags, "lr_warmup_ratio")
    _schedule_from(task, "cosine" if "cosine" in scheduler else ("linear" if "linear" in scheduler else "constant"),
                   warmup_ratio=ratio.value if ratio is not None else 0.03,
                   min_lr_ratio=0.1 if scheduler == "cosine_with_min_lr" else None,
                   why=f"--lr_scheduler {scheduler}" + ("" if ratio is not None else ", OpenRLHF's default "
                                                        "--lr_warmup_ratio 0.03 and min lr 0.1 x LR"))
    _norm(task, "token_mean", "OpenRLHF's losses average over the action tokens")
    if kind != "grpo":
        return
    episodes = _flag(flags, "num_episodes")
    if episodes is not None and as_number(episodes.value):
        task.schedule.epochs = float(as_number(episodes.value))
        task.schedule.reasons.append(f"{episodes.value} passes over the prompts (num_episodes, {episodes.loc})")
    else:
        task.schedule.epochs = 1.0
    rollout, samples = as_int(text("rollout_batch_size")), as_int(text("n_samples_per_prompt")) or 1
    train = as_int(text("train_batch_size", "train.batch_size"))
    _updates(task, rollout * samples if rollout else None, train, f"rollout_batch_size {rollout} x "
             f"n_samples_per_prompt {samples} / train_batch_size {train}", as_int(text("max_epochs")), "max_epochs")
    estimator = text("advantage_estimator", "estimator") or "gae"
    task.schedule.normalize_advantages = estimator in {"group_norm", "reinforce_baseline"}
    if _switch(flags, "async_train"):
        task.throughput = "--async_train (rollouts run while the actor trains)"
    task.reward = _openrlhf_reward(project, flags)


def _openrlhf_reward(project: Project, flags: dict) -> RewardPlan:
    remote = _flag(flags, "remote_rm_url", "remote_url")
    model = _flag(flags, "reward_pretrain")
    if remote is None:
        why = f"a reward model ({model.value})" if model is not None else "no --remote_rm_url"
        return RewardPlan(style="openrlhf", status="placeholder", source=str(model.loc) if model else None,
                          reason=f"{why}: MinT serves no reward-model head; write a Python reward_func(queries, "
                                 "prompts, labels) and pass --reward FILE:reward_func")
    target = str(remote.value)
    if not target.endswith(".py"):
        return RewardPlan(style="openrlhf", status="placeholder", source=str(remote.loc),
                          reason=f"rewards come from a remote server ({target}); call it from a Python reward_func "
                                 "and pass --reward FILE:reward_func")
    found = _reward_module(project, target)
    plan = RewardPlan(style="openrlhf", status="placeholder", functions=[RewardFunction(name="reward_func")],
                      source=str(remote.loc))
    if found is None or found.python is None:
        plan.reason = f"{target} was not given and is not beside the inputs: pass it with --config"
    elif "reward_func" not in found.python.functions:
        plan.reason = f"{found.label} defines no reward_func"
    else:
        plan.status, plan.file = "user", str(found.path.resolve())
        plan.reason = f"reward_func from {found.label} (--remote_rm_url)"
    return plan


# --- torchforge ----------------------------------------------------------------------------------


def _torchforge(project: Project, ev: Evidence, algorithm: Algorithm, kind: ScaffoldKind, settings: Settings,
                task: Task) -> None:
    config: dict[str, Value] = {}
    for y in project.yamls():
        config.update(y.yaml.values)

    def get(key: str):
        return config[key].value if key in config else None

    if settings.dataset is not None:
        data = task.data = _data_source(project, settings.dataset.value, settings.dataset.source)
        if data is not None and kind == "grpo":
            data.subset = str(get("dataset.revision")) if get("dataset.revision") else None
            data.split = str(get("dataset.data_split") or "train")
            data.fields, data.chat_template, data.answer_after = {"prompt": "question", "answer": "answer"}, True, "#### "
            data.system_prompt = _string_constant(project, "system_prompt")
            data.notes.append("torchforge's GSM8K transform: the question as a user message through the chat "
                              "template, the target after '#### '")
    warmup = get("trainer.lr_scheduler.warmup_steps") or get("lr_scheduler.warmup_steps")
    _schedule_from(task, "linear", warmup, why="torchtitan's LR scheduler: linear warmup, then linear decay to 0")
    if kind == "grpo":
        _norm(task, "sequence_mean", "simple_grpo_loss averages each response over its tokens, then the batch")
        task.schedule.normalize_advantages = True
        task.schedule.reasons.append("advantages divided by the group's std (ComputeAdvantages)")
        lag = config.get("off_by_n") or config.get("replay_buffer.max_policy_age")
        if lag is not None and (as_int(lag.value) or 0) >= 1:
            task.throughput = f"off-policy rollouts (max_policy_age {lag.value}, {lag.loc}): sampling runs while " \
                              "the trainer trains"
        task.reward = _torchforge_reward(project, settings)
    else:
        _norm(task, "token_mean", "the SFT app's cross-entropy averages over the batch's tokens")


def _torchforge_reward(project: Project, settings: Settings) -> RewardPlan:
    names = settings.reward_functions.value if settings.reward_functions is not None else []
    where = settings.reward_functions.source if settings.reward_functions is not None else None
    if not names:
        return RewardPlan(style="torchforge", status="placeholder",
                          reason="no reward_functions found: pass your reward class with --reward FILE:NAME")
    weights = [1.0 / len(names)] * len(names)  # RewardActor averages its functions
    return _python_reward(project, names, weights, "torchforge", where)


def _string_constant(project: Project, name: str) -> str | None:
    for f in project.pythons():
        for assignment in f.python.assigns.get(name, []):
            value = f.python.evaluate(assignment.value, assignment.scope)
            if value is not None and isinstance(value.value, str):
                return value.value
    return None


# --- Tinker and plain PyTorch loops ----------------------------------------------------------------


def _code(project: Project, ev: Evidence, algorithm: Algorithm, kind: ScaffoldKind, settings: Settings,
          task: Task) -> None:
    if settings.dataset is not None:
        task.data = _data_source(project, settings.dataset.value, settings.dataset.source)
        if task.data is not None:
            _load_dataset_call(project, task.data)
            _row_fields(project, task.data, kind)
    if kind == "sft":
        _norm(task, "token_mean", "the loop's cross-entropy (model(...).loss) averages over the batch's tokens")
        if any(_masks_only_padding(f.python) for f in project.pythons()):
            task.schedule.train_on = "all"
            task.schedule.reasons.append("every token trained: the loop's labels mask only padding")
    for f in project.pythons():
        for call in f.python.calls:
            if call.name.startswith("get_") and call.name.endswith("schedule_with_warmup"):
                kind_name = call.name.removeprefix("get_").split("_schedule")[0]
                _schedule_from(task, kind_name, call.kwarg("num_warmup_steps").value
                               if call.kwarg("num_warmup_steps") is not None else None, why=f"{call.name} ({call.loc})")
            elif call.name == "CosineAnnealingLR":
                _schedule_from(task, "cosine", why=f"CosineAnnealingLR ({call.loc})")
    if kind == "grpo":
        task.reward = _code_reward(project)


def _masks_only_padding(src: PySource) -> bool:
    text = src.text
    return "labels" in text and "masked_fill" in text and "attention_mask" in text and "prompt" not in text.lower()


def _row_fields(project: Project, data: DataPlan, kind: ScaffoldKind) -> None:
    """The columns the loop reads from each row (row["question"], r["messages"], ...)."""
    import ast

    keys: list[str] = []
    chat = False
    for f in project.pythons():
        tree = parse_ast(f.python.text, f.label)
        for node in ast.walk(tree):
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and \
                    isinstance(node.slice.value, str) and isinstance(node.value, ast.Name) and \
                    node.value.id in {"row", "r", "example", "sample", "item", "x", "ex"}:
                keys.append(node.slice.value)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr == "apply_chat_template":
                chat = True
        template = _concatenated_template(tree)
        if template is not None and kind == "sft":
            (prompt, separator, completion) = template
            data.fields = {"prompt": prompt, "completion": completion}
            data.prompt_template = "{}" + separator
            data.format = "prompt_completion"
            data.notes.append(f"the loop trains on row['{prompt}'] + {separator!r} + row['{completion}'] + eos")
            return
    if "messages" in keys:
        data.format = "messages"
        return
    prompt = next((k for k in keys if k in {"question", "prompt", "problem", "instruction", "query", "input"}), None)
    answer = next((k for k in keys if k in {"answer", "solution", "label", "target", "output", "ground_truth"}), None)
    if prompt:
        data.fields["prompt"] = prompt
    if answer and kind in ("grpo", "distill"):
        data.fields["answer"] = answer
    data.chat_template = chat
    if answer and kind == "sft":
        data.fields["completion"] = answer


def _concatenated_template(tree) -> tuple[str, str, str] | None:
    """row["a"] + "sep" + row["b"] (+ eos): the loop's own text format."""
    import ast

    for node in ast.walk(tree):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)):
            continue
        parts, stack = [], [node]
        while stack:
            item = stack.pop()
            if isinstance(item, ast.BinOp) and isinstance(item.op, ast.Add):
                stack += [item.right, item.left]
            else:
                parts.append(item)
        keys = [p.slice.value for p in parts if isinstance(p, ast.Subscript) and isinstance(p.slice, ast.Constant)
                and isinstance(p.slice.value, str)]
        literals = [p.value for p in parts if isinstance(p, ast.Constant) and isinstance(p.value, str)]
        if len(keys) == 2 and len(literals) == 1 and isinstance(parts[1], ast.Constant):
            return keys[0], literals[0], keys[1]
    return None


def _code_reward(project: Project) -> RewardPlan:
    """A reward in a hand-written loop: a tinker-cookbook style problem Env (a class with
    check_answer) or a function named like a reward, that the loop calls; defined in the script or
    imported from a module beside it."""
    for f in project.pythons():
        src = f.python
        called = list(dict.fromkeys(c.name for c in src.calls))
        for name in called:
            found = _class_named(project, f, name)
            if found is not None and "check_answer" in _methods(found[0]):
                return _python_reward(project, [name], [1.0], "tinker_env", str(found[1].at(found[0].line)))
        for name in called:
            if any(w in name.lower() for w in _REWARD_WORDS) and (name in src.functions or name in src.imports):
                where = str(src.at(src.functions[name].line)) if name in src.functions else None
                return _python_reward(project, [name], [1.0], "plain", where)
    return RewardPlan(style="plain", status="placeholder", reason="no reward function found in the loop (a "
                      "framework recipe's own environment, or a reward the code does not call by name): pass "
                      "--reward FILE:FUNCTION")


def _class_named(project: Project, f: InputFile, name: str):
    """(the class `name` as `f` sees it, the file that defines it): defined in `f`, or in the local
    module `f` imports it from; None when neither."""
    if name in f.python.classes:
        return f.python.classes[name], f.python
    module = f.python.imports.get(name)
    path = _module_file(project, f, module.rsplit(".", 1)[0]) if module and "." in module else None
    if path is None:
        return None
    found = project.find(str(path)) or add_file(project, path, auto=True)
    if found.python is None or name not in found.python.classes:
        return None
    return found.python.classes[name], found.python


def _methods(info) -> set[str]:
    import libcst as cst

    return {item.name.value for item in info.node.body.body if isinstance(item, cst.FunctionDef)}


_READERS = {"trl": _trl, "verl": _verl, "openrlhf": _openrlhf, "torchforge": _torchforge, "tinker": _code,
            "pytorch": _code}
