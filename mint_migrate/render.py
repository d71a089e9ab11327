"""Scaffolds -> train.py: render a jinja2 template from options (or a MigrationPlan), check it parses.

One template per kind lives in scaffolds/ (sft, grpo, dpo, distill); the plumbing every kind shares
(.env loading, tokenizer, data, schedule, reward adapters, METRIC logging, checkpoint/resume, async
sampling) is rendered once, from the partials, into the companion mint_run.py that is written beside
train.py and is the same for every kind: train.py imports it and keeps the recipe. Values reach the
templates only through the `py` filter, which writes Python literals: a base model name can never
become code.
"""

import ast
import json
import math
import os
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from mint_migrate.analyze.optimizer import MINT_DEFAULTS as MINT_ADAM
from mint_migrate.analyze.optimizer import PARAMS as ADAM_PARAMS
from mint_migrate.errors import MintMigrateError
from mint_migrate.plan import LossFn, LossNormalization, LrSchedule, MigrationPlan, RewardStyle, ScaffoldKind
from mint_migrate.pyparse import PythonSyntaxError, parse_ast
from mint_migrate.sdk_facts import DEFAULT_BASE_MODEL, RL_LOSSES, loss_fn_config_defaults
from mint_migrate.workspace import read_text_checked, resolve_output, write_text

# loss_fn_config each RL loss gets unless the caller gives one. ppo/cispo take ratio bounds
# (clip_low_threshold/clip_high_threshold), dro a beta: values and reasons in sdk_facts.
DEFAULT_LOSS_FN_CONFIGS: dict[str, dict[str, float] | None] = loss_fn_config_defaults()

# Per-kind defaults. Learning rates are LoRA rates: 10x a full fine-tune's (mint_facts' LoRA policy).
KIND_DEFAULTS: dict[str, dict[str, Any]] = {
    "sft": {"learning_rate": 2e-4, "lora_rank": 32, "loss_fn": "cross_entropy", "batch_size": 8, "max_length": 2048},
    "grpo": {
        "learning_rate": 4e-5,
        "lora_rank": 16,
        "loss_fn": "importance_sampling",
        "groups_per_batch": 8,
        "group_size": 8,
        "max_tokens": 256,
        "temperature": 1.0,
        "max_concurrent_requests": 16,
    },
    "dpo": {"learning_rate": 1e-5, "lora_rank": 16, "batch_size": 8, "max_length": 1024, "beta": 0.1},
    "distill": {
        "learning_rate": 1e-4,
        "lora_rank": 16,
        "batch_size": 8,
        "group_size": 4,
        "max_tokens": 256,
        "temperature": 1.0,
        "max_concurrent_requests": 16,
    },
}

# What every kind shares: one pass over the data, a constant learning rate, MinT's summed loss.
COMMON_DEFAULTS: dict[str, Any] = {
    "epochs": 1,
    "optimizer": dict(MINT_ADAM),
    "seed": 0,
    "lr_schedule": "constant",
    "warmup_steps": 0,
    "warmup_ratio": 0.0,
    "min_lr_ratio": 0.0,
    "loss_normalization": "sum",
    "minibatches": 1,
    "updates_per_batch": 1,
    "normalize_advantages": False,
    "max_prompt_tokens": None,
    "max_prompt_length": None,
    "train_on": "completion",
}

TEMPLATES = {"sft": "sft.py.j2", "grpo": "grpo.py.j2", "dpo": "dpo.py.j2", "distill": "distill.py.j2"}
THROUGHPUT_TEMPLATE = "grpo_throughput.py.j2"
PREPARE_DATA_TEMPLATE = "prepare_data.py.j2"
COMPANION_TEMPLATE = "mint_run.py.j2"
COMPANION = "mint_run.py"  # written beside train.py (and prepare_data.py), which import it


class ScaffoldRenderError(RuntimeError):
    """A template rendered to something that is not valid Python: a bug in the scaffolds."""


class DataOptions(BaseModel):
    """Where the training data lives and how its columns map onto the rows train.py reads."""

    source: str | None = Field(default=None, description="Hub dataset id or file, as the source names it.")
    file: str | None = Field(default=None, description="train.py's default --data (relative to train.py).")
    subset: str | None = Field(default=None, description="Hub dataset config name.")
    split: str | None = None
    fields: dict[str, str] = Field(default_factory=dict, description="train.py column -> source column (dotted).")
    chat_template: bool | None = Field(default=None, description="String prompts become a user chat message.")
    system_prompt: str | None = None
    prompt_template: str | None = Field(default=None, description="Format string with {} for string prompts.")
    answer_after: str | None = Field(default=None, description="grpo: keep the answer after this marker.")
    max_samples: int | None = Field(default=None, ge=1)


class RewardOptions(BaseModel):
    """grpo: your reward functions and the framework signature train.py calls them with."""

    style: RewardStyle = "plain"
    file: str = Field(description="The module defining them (relative to train.py, or absolute).")
    functions: list[str] = Field(min_length=1)
    weights: list[float] | None = None
    kwargs: dict[str, Any] = Field(default_factory=dict, description="verl: custom_reward_function.reward_kwargs.")


class ScaffoldOptions(BaseModel):
    kind: ScaffoldKind = Field(description="sft, grpo, dpo or distill.")
    base_model: str | None = Field(default=None, description="Default --base-model in the script.")
    loss_fn: LossFn | None = Field(
        default=None, description=f"grpo only: {', '.join(RL_LOSSES)} (the first is the default)."
    )
    loss_fn_config: dict[str, float] | None = Field(default=None, description="grpo: default --loss-fn-config.")
    learning_rate: float | None = Field(default=None, gt=0, description="Default --learning-rate (a LoRA rate).")
    lora_rank: int | None = Field(default=None, ge=1, le=1024, description="Default --lora-rank.")
    batch_size: int | None = Field(
        default=None, ge=1, description="sft/dpo: examples (pairs) per step; distill: prompts per step."
    )
    group_size: int | None = Field(
        default=None, ge=1, description="grpo: answers per prompt (>= 2); distill: samples per prompt."
    )
    groups_per_batch: int | None = Field(default=None, ge=1, description="grpo: prompts per step.")
    max_tokens: int | None = Field(default=None, ge=1, description="grpo/distill: longest sampled answer.")
    max_length: int | None = Field(default=None, ge=8, description="sft/dpo: longest training sequence.")
    temperature: float | None = Field(default=None, gt=0, description="grpo/distill: sampling temperature.")
    beta: float | None = Field(default=None, gt=0, description="dpo: the DPO beta.")
    steps: int | None = Field(default=None, ge=1, description="Default --steps (None: one pass over the data).")
    save_every: int | None = Field(default=None, ge=0, description="Default --save-every.")
    seed: int | None = Field(default=None, ge=0, description="Default --seed (data order and sampling).")
    optimizer: dict[str, float] | None = Field(
        default=None,
        description="types.AdamParams settings besides the rate: beta1, beta2, eps, weight_decay, grad_clip_norm "
        "(missing ones: MinT's choice, 0.9 / 0.95 / 1e-8 / 0 / 0).",
    )
    throughput: bool = Field(
        default=False,
        description="grpo: the throughput variant (sampling while training, streaming minibatches, tail grace, "
        "request window) instead of the plain recipe.",
    )
    epochs: float | None = Field(default=None, gt=0, description="Passes over the data when steps is not set.")
    lr_schedule: LrSchedule | None = Field(default=None, description="Learning-rate decay after warmup.")
    warmup_steps: int | None = Field(default=None, ge=0, description="Linear warmup steps (wins over warmup_ratio).")
    warmup_ratio: float | None = Field(default=None, ge=0, lt=1, description="Warmup as a share of all steps.")
    min_lr_ratio: float | None = Field(default=None, ge=0, le=1, description="Decay floor, as a share of the LR.")
    loss_normalization: LossNormalization | None = Field(
        default=None, description="sft/grpo: sum (MinT), or the source's token_mean / sequence_mean / constant."
    )
    minibatches: int | None = Field(default=None, ge=1, description="grpo: optim_steps per sampled batch.")
    updates_per_batch: int | None = Field(default=None, ge=1, description="grpo: passes over each sampled batch.")
    normalize_advantages: bool | None = Field(default=None, description="grpo: divide advantages by the group std.")
    max_prompt_tokens: int | None = Field(default=None, ge=1, description="grpo/distill: longest prompt kept.")
    max_prompt_length: int | None = Field(default=None, ge=1, description="dpo: longest prompt kept.")
    train_on: Literal["completion", "all", "conversation"] | None = Field(
        default=None, description="sft: completion (prompt masked), all tokens, or conversation (every token of a "
        "messages row, the completion of a prompt/completion row: TRL's default)."
    )
    data: DataOptions | None = Field(default=None, description="The source's data and its column mapping.")
    reward: RewardOptions | None = Field(default=None, description="grpo: your reward functions.")
    header: list[str] = Field(default_factory=list, description="Comment lines put at the top of the script.")


class ScaffoldResult(BaseModel):
    kind: ScaffoldKind
    source: str
    path: str | None = Field(default=None, description="Where the source was written, if it was.")
    companion_source: str = Field(
        description=f"{COMPANION}: the plumbing train.py imports (the same for every kind); it goes beside train.py."
    )
    companion_path: str | None = Field(default=None, description=f"Where {COMPANION} was written, if it was.")


def py_literal(value: Any, indent: int = 0) -> str:
    """Python source for a literal value (str, number, bool, None, list, dict)."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot put a non-finite number ({value}) in a script")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid Python string literal
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(py_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        items = [f"{py_literal(k)}: {py_literal(v, indent + 4)}" for k, v in value.items()]
        flat = "{" + ", ".join(items) + "}"
        if len(flat) <= 96 - indent or not items:
            return flat
        pad = " " * (indent + 4)
        return "{\n" + "".join(f"{pad}{item},\n" for item in items) + " " * indent + "}"
    raise TypeError(f"no Python literal for {type(value).__name__}")


@cache
def _environment():
    import jinja2

    from mint_migrate.bundled import bundled_path

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(bundled_path("scaffolds"))),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["py"] = py_literal
    return env


def _comment_line(text: str) -> str:
    return " ".join(str(text).split())


def template_values(options: ScaffoldOptions) -> dict[str, Any]:
    """Everything a template reads: the kind's defaults with the options laid over them."""
    kind = options.kind
    values: dict[str, Any] = {
        "kind": kind,
        "base_model": DEFAULT_BASE_MODEL,
        "steps": None,
        "save_every": 20,
        "log_dir": f"runs/{kind}",
        **COMMON_DEFAULTS,
        **KIND_DEFAULTS[kind],
    }
    given = options.model_dump(exclude={"kind", "header", "loss_fn_config", "data", "reward"}, exclude_none=True)
    values.update({k: v for k, v in given.items() if k in values})
    values["lr_schedule"] = {
        "type": values.pop("lr_schedule"),
        "warmup_steps": values.pop("warmup_steps"),
        "warmup_ratio": values.pop("warmup_ratio"),
        "min_lr_ratio": values.pop("min_lr_ratio"),
    }
    unknown = set(values["optimizer"]) - set(ADAM_PARAMS)
    if unknown:
        raise MintMigrateError(f"optimizer takes {', '.join(ADAM_PARAMS)}, not {', '.join(sorted(unknown))}.")
    values["optimizer"] = {**MINT_ADAM, **{k: float(v) for k, v in values["optimizer"].items()}}
    values["data"] = (options.data or DataOptions()).model_dump()
    reward = options.reward
    if reward is not None and kind != "grpo":
        raise MintMigrateError(f"a reward function belongs to the grpo kind, not {kind}.")
    values["reward"] = None if reward is None else {
        "style": reward.style,
        "file": reward.file,
        "functions": reward.functions,
        "weights": reward.weights or [1.0] * len(reward.functions),
        "kwargs": reward.kwargs,
    }
    values["throughput"] = kind == "grpo" and options.throughput
    loss_fn = options.loss_fn or values.get("loss_fn")
    if kind == "sft" and loss_fn != "cross_entropy":
        raise MintMigrateError(f"sft trains with cross_entropy, not {loss_fn}; drop loss_fn or use kind=grpo.")
    if kind == "grpo":
        if loss_fn not in RL_LOSSES:
            raise MintMigrateError(f"grpo needs an RL loss: one of {', '.join(RL_LOSSES)} (got {loss_fn}).")
        if values["group_size"] < 2:
            raise MintMigrateError(
                f"grpo needs group_size >= 2 (got {values['group_size']}): advantages compare answers within a group."
            )
        configs = dict(DEFAULT_LOSS_FN_CONFIGS)
        if options.loss_fn_config is not None:
            configs[loss_fn] = dict(options.loss_fn_config)
        values["loss_fn"] = loss_fn
        values["loss_fn_configs"] = configs
    values["header_lines"] = [_comment_line(line) for line in options.header if _comment_line(line)]
    return values


def scaffold_variants() -> list[tuple[ScaffoldKind, LossFn | None, bool]]:
    """Every kind with each loss it trains with (None: the kind's own loss), and the grpo
    throughput variant (the third item: throughput=True)."""
    return [
        ("sft", None, False),
        *(("grpo", loss, False) for loss in RL_LOSSES),
        ("grpo", None, True),
        ("dpo", None, False),
        ("distill", None, False),
    ]


def check_parses(source: str, what: str) -> None:
    import libcst

    try:
        libcst.parse_module(source)
    except libcst.ParserSyntaxError as exc:
        raise ScaffoldRenderError(f"{what} rendered to invalid Python (a mint-migrate bug): {exc}") from exc


def render_scaffold(options: ScaffoldOptions) -> str:
    """The train.py source for options.kind, parsed with libcst before it is returned."""
    values = template_values(options)
    template = THROUGHPUT_TEMPLATE if values["throughput"] else TEMPLATES[options.kind]
    source = _environment().get_template(template).render(**values)
    check_parses(source, f"the {options.kind} scaffold")
    return source


@cache
def render_companion() -> str:
    """mint_run.py: the plumbing every train.py (and prepare_data.py) imports; one text for every kind."""
    source = _environment().get_template(COMPANION_TEMPLATE).render()
    check_parses(source, COMPANION)
    return source


def imports_companion(source: str) -> bool:
    """Whether a script imports mint_run (a train.py or prepare_data.py written by mint-migrate)."""
    try:
        tree = parse_ast(source)  # user source: the bounded, serialised door, never a bare ast.parse
    except PythonSyntaxError:
        return False
    module = COMPANION.removesuffix(".py")
    return any(
        (isinstance(node, ast.ImportFrom) and node.module == module)
        or (isinstance(node, ast.Import) and any(alias.name == module for alias in node.names))
        for node in ast.walk(tree)
    )


def with_companion(script: Path, text: str | None = None) -> str:
    """A script's text (`text` when already read), followed by its mint_run.py's when it imports one
    that sits beside it: where a mint-migrate train.py's common flags (--smoke, --steps, --log-dir,
    --parity-dump, ...) are defined. Both are read through the MCP read fence when one is active."""
    if text is None:
        text = read_text_checked(script, errors="replace")
    companion = script.parent / COMPANION
    if imports_companion(text) and companion.is_file():
        text += "\n" + read_text_checked(companion, errors="replace")
    return text


def write_scripts(folder: Path, train_py: str, name: str = "train.py") -> Path:
    """Write a rendered train.py and its mint_run.py into `folder` (made if missing; no workspace
    fence: for benchmarks and tests that render into a folder of their own). Returns train.py's path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / COMPANION).write_text(render_companion(), encoding="utf-8")
    path = folder / name
    path.write_text(train_py, encoding="utf-8")
    return path


def render_prepare_data(options: ScaffoldOptions) -> str:
    """prepare_data.py: the data step beside train.py (the source's dataset -> the rows train.py reads)."""
    source = _environment().get_template(PREPARE_DATA_TEMPLATE).render(**template_values(options))
    check_parses(source, "the data step")
    return source


def plan_options(plan: MigrationPlan, out_dir: Path | None = None) -> ScaffoldOptions:
    """The scaffold options a migration plan asks for: its `mint` choices, data, reward and schedule.

    Paths (the data file, the reward module) are written relative to `out_dir`, the folder train.py
    goes to; without one they stay absolute.
    """
    choices = plan.mint
    if choices is None:
        raise MintMigrateError(
            "The plan has no MinT choices (plan.mint is empty), so there is nothing to render; "
            "the analysis could not settle the algorithm. Scaffold a kind directly instead."
        )
    kind = choices.kind
    inputs = ", ".join(plan.inputs) or "the given inputs"
    header = [
        f"Migrated from {inputs} ({plan.framework}, {plan.algorithm}) by mint-migrate; see MIGRATION.md.",
        f"learning rate {choices.learning_rate:g}: {choices.learning_rate_reason}",
    ]
    # Each kind takes the choices it has a knob for; distill's batch is prompts per step.
    per_kind = {
        "sft": {"loss_fn": choices.loss_fn, "batch_size": choices.batch_size, "max_length": choices.max_length},
        "dpo": {"batch_size": choices.batch_size, "max_length": choices.max_length, "beta": choices.beta,
                "max_prompt_length": choices.max_prompt_tokens},
        "grpo": {
            "loss_fn": choices.loss_fn,
            "loss_fn_config": choices.loss_fn_config,
            "group_size": choices.group_size,
            "groups_per_batch": choices.groups_per_batch,
            "max_tokens": choices.max_tokens,
            "max_prompt_tokens": choices.max_prompt_tokens,
            "temperature": choices.temperature,
            "throughput": choices.throughput,
        },
        "distill": {
            "batch_size": choices.batch_size or choices.groups_per_batch,
            "group_size": choices.group_size,
            "max_tokens": choices.max_tokens,
            "max_prompt_tokens": choices.max_prompt_tokens,
            "temperature": choices.temperature,
        },
    }[kind]
    per_kind.update(_task_options(plan, out_dir))
    try:
        return ScaffoldOptions(
            kind=kind,
            base_model=choices.base_model,
            learning_rate=choices.learning_rate,
            lora_rank=choices.lora_rank,
            steps=choices.steps,
            optimizer=choices.optimizer or None,
            save_every=choices.save_every,
            seed=choices.seed,
            header=header,
            **per_kind,
        )
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise MintMigrateError(
            f"The plan's MinT choices cannot become a train.py ({problems}); correct them in the plan."
        ) from exc


def _relative(path: str, out_dir: Path | None) -> str:
    if out_dir is None:
        return path
    return os.path.relpath(path, out_dir.resolve())


PREPARED_DATA = "train.jsonl"  # what prepare_data.py writes beside train.py
EXTRACTED_REWARDS = "rewards.py"  # reward functions copied out of a training script


def _task_options(plan: MigrationPlan, out_dir: Path | None) -> dict[str, Any]:
    """The data, reward and schedule options of a plan (see plan.DataPlan / RewardPlan / SchedulePlan)."""
    kind, options = plan.mint.kind, {}
    data = plan.data
    if data is not None:
        if data.local_path:
            file = _relative(data.local_path, out_dir)
        else:
            file = data.source if data.source_kind == "local" else PREPARED_DATA
        options["data"] = DataOptions(
            source=data.source, file=file, subset=data.subset, split=data.split, fields=data.fields,
            chat_template=data.chat_template, system_prompt=data.system_prompt,
            prompt_template=data.prompt_template, answer_after=data.answer_after, max_samples=data.max_samples,
        )
    reward = plan.reward
    if kind == "grpo" and reward is not None and reward.status == "user" and reward.file:
        options["reward"] = RewardOptions(
            style=reward.style,
            file=EXTRACTED_REWARDS if reward.extract else _relative(reward.file, out_dir),
            functions=[f.name for f in reward.functions],
            weights=[f.weight for f in reward.functions],
            kwargs=reward.kwargs,
        )
    schedule = plan.schedule
    if schedule is not None:
        options.update(
            epochs=schedule.epochs, lr_schedule=schedule.lr_schedule, warmup_steps=schedule.warmup_steps,
            warmup_ratio=schedule.warmup_ratio, min_lr_ratio=schedule.min_lr_ratio,
        )
        if kind in ("sft", "grpo"):
            options["loss_normalization"] = schedule.loss_normalization
        if kind == "sft":
            options["train_on"] = schedule.train_on
        if kind == "grpo":
            options.update(minibatches=schedule.minibatches, updates_per_batch=schedule.updates_per_batch,
                           normalize_advantages=schedule.normalize_advantages)
    return options


def render_plan(plan: MigrationPlan, out_dir: Path | None = None) -> str:
    """The train.py for plan.mint.kind with the plan's MinT choices as the argument defaults."""
    return render_scaffold(plan_options(plan, out_dir))


def train_py_constants(options: ScaffoldOptions) -> dict[str, Any]:
    """The defaults the rendered train.py holds, by constant name (what MIGRATION.md reports)."""
    values = template_values(options)
    names = {
        "BASE_MODEL": "base_model", "LEARNING_RATE": "learning_rate", "OPTIMIZER": "optimizer",
        "LR_SCHEDULE": "lr_schedule", "SAVE_EVERY": "save_every", "SEED": "seed",
        "LORA_RANK": "lora_rank", "STEPS": "steps", "EPOCHS": "epochs",
    }
    per_kind = {
        "sft": {"BATCH_SIZE": "batch_size", "MAX_LENGTH": "max_length", "TRAIN_ON": "train_on",
                "LOSS_NORMALIZATION": "loss_normalization"},
        "dpo": {"BATCH_SIZE": "batch_size", "MAX_LENGTH": "max_length", "BETA": "beta",
                "MAX_PROMPT_LENGTH": "max_prompt_length"},
        "grpo": {"LOSS_FN": "loss_fn", "GROUPS_PER_BATCH": "groups_per_batch", "GROUP_SIZE": "group_size",
                 "MAX_TOKENS": "max_tokens", "MAX_PROMPT_TOKENS": "max_prompt_tokens", "TEMPERATURE": "temperature",
                 "LOSS_NORMALIZATION": "loss_normalization", "NORMALIZE_ADVANTAGES": "normalize_advantages",
                 "MINIBATCHES": "minibatches", "UPDATES_PER_BATCH": "updates_per_batch"},
        "distill": {"BATCH_SIZE": "batch_size", "SAMPLES_PER_PROMPT": "group_size", "MAX_TOKENS": "max_tokens",
                    "MAX_PROMPT_TOKENS": "max_prompt_tokens", "TEMPERATURE": "temperature"},
    }[options.kind]
    if values["throughput"]:  # one optim_step per step, streamed: no mini-batch knobs
        per_kind = {k: v for k, v in per_kind.items() if k not in ("MINIBATCHES", "UPDATES_PER_BATCH")}
    constants = {name: values[key] for name, key in {**names, **per_kind}.items()}
    if options.kind == "grpo":
        constants["LOSS_FN_CONFIGS"] = values["loss_fn_configs"]
        constants["REWARD"] = values["reward"]
    constants["DATA"] = values["data"]
    return constants


def scaffold(options: ScaffoldOptions, *, output_path: str | None, workspace: Path, overwrite: bool) -> ScaffoldResult:
    """Render; with output_path, write train.py there and mint_run.py beside it (inside the workspace,
    never over a file unasked: both are checked before either is written)."""
    source, companion = render_scaffold(options), render_companion()
    result = ScaffoldResult(kind=options.kind, source=source, companion_source=companion)
    if output_path is not None:
        target = resolve_output(output_path, workspace, overwrite=overwrite)
        beside = resolve_output(target.parent / COMPANION, workspace, overwrite=overwrite)
        if beside == target:
            raise MintMigrateError(f"train.py cannot be called {COMPANION}: that is the name of the file beside it.")
        result.path = str(write_text(target, source, workspace, overwrite=overwrite))
        result.companion_path = str(write_text(beside, companion, workspace, overwrite=overwrite))
    return result
