"""Scaffolds -> train.py: render a jinja2 template from options (or a MigrationPlan), check it parses.

One template per kind lives in scaffolds/ (sft, grpo, dpo, distill); the helpers every kind shares
(.env loading, tokenizer, JSONL data, METRIC logging, checkpoint/resume, async sampling) are
partials included into each, so every rendered train.py stands alone. Values reach the template
only through the `py` filter, which writes Python literals: a base model name can never become code.
"""

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from mcp_server.errors import MintMigrateError
from mcp_server.plan import LossFn, MigrationPlan, ScaffoldKind
from mcp_server.sdk_facts import DEFAULT_BASE_MODEL, RL_LOSSES, loss_fn_config_defaults
from mcp_server.workspace import write_text

# loss_fn_config each RL loss gets unless the caller gives one. ppo/cispo take ratio bounds
# (clip_low_threshold/clip_high_threshold), dro a beta: values and reasons in sdk_facts.
DEFAULT_LOSS_FN_CONFIGS: dict[str, dict[str, float] | None] = loss_fn_config_defaults()

# Per-kind defaults. Learning rates are LoRA rates: 20-100x a full fine-tune's (api_facts §8.8).
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

TEMPLATES = {"sft": "sft.py.j2", "grpo": "grpo.py.j2", "dpo": "dpo.py.j2", "distill": "distill.py.j2"}
ASYNC_KINDS = {"grpo", "distill"}
SAMPLING_KINDS = {"grpo", "distill"}


class ScaffoldRenderError(RuntimeError):
    """A template rendered to something that is not valid Python: a bug in the scaffolds."""


class ScaffoldOptions(BaseModel):
    kind: ScaffoldKind
    base_model: str | None = Field(default=None, description="Default --base-model in the script.")
    loss_fn: LossFn | None = Field(default=None, description="RL loss; grpo only.")
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
    header: list[str] = Field(default_factory=list, description="Comment lines put at the top of the script.")


class ScaffoldResult(BaseModel):
    kind: ScaffoldKind
    source: str
    path: str | None = Field(default=None, description="Where the source was written, if it was.")


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
        if len(flat) <= 80 or not items:
            return flat
        pad = " " * (indent + 4)
        return "{\n" + "".join(f"{pad}{item},\n" for item in items) + " " * indent + "}"
    raise TypeError(f"no Python literal for {type(value).__name__}")


@cache
def _environment():
    import jinja2

    from mcp_server.bundled import bundled_path

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
        **KIND_DEFAULTS[kind],
    }
    given = options.model_dump(exclude={"kind", "header", "loss_fn_config"}, exclude_none=True)
    values.update({k: v for k, v in given.items() if k in values})
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
    values["is_async"] = kind in ASYNC_KINDS
    values["samples"] = kind in SAMPLING_KINDS
    values["header_lines"] = [_comment_line(line) for line in options.header if _comment_line(line)]
    return values


def scaffold_variants() -> list[tuple[ScaffoldKind, LossFn | None]]:
    """Every kind with each loss it trains with (None: the kind's own loss)."""
    return [("sft", None), *(("grpo", loss) for loss in RL_LOSSES), ("dpo", None), ("distill", None)]


def check_parses(source: str, what: str) -> None:
    import libcst

    try:
        libcst.parse_module(source)
    except libcst.ParserSyntaxError as exc:
        raise ScaffoldRenderError(f"{what} rendered to invalid Python (a mint-migrate bug): {exc}") from exc


def render_scaffold(options: ScaffoldOptions) -> str:
    """The train.py source for options.kind, parsed with libcst before it is returned."""
    values = template_values(options)
    source = _environment().get_template(TEMPLATES[options.kind]).render(**values)
    check_parses(source, f"the {options.kind} scaffold")
    return source


def plan_options(plan: MigrationPlan) -> ScaffoldOptions:
    """The scaffold options a migration plan asks for (its `mint` choices)."""
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
        "dpo": {"batch_size": choices.batch_size, "max_length": choices.max_length, "beta": choices.beta},
        "grpo": {
            "loss_fn": choices.loss_fn,
            "loss_fn_config": choices.loss_fn_config,
            "group_size": choices.group_size,
            "groups_per_batch": choices.groups_per_batch,
            "max_tokens": choices.max_tokens,
            "temperature": choices.temperature,
        },
        "distill": {
            "batch_size": choices.batch_size or choices.groups_per_batch,
            "group_size": choices.group_size,
            "max_tokens": choices.max_tokens,
            "temperature": choices.temperature,
        },
    }[kind]
    try:
        return ScaffoldOptions(
            kind=kind,
            base_model=choices.base_model,
            learning_rate=choices.learning_rate,
            lora_rank=choices.lora_rank,
            steps=choices.steps,
            header=header,
            **per_kind,
        )
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise MintMigrateError(
            f"The plan's MinT choices cannot become a train.py ({problems}); correct them in the plan."
        ) from exc


def render_plan(plan: MigrationPlan) -> str:
    """The train.py for plan.mint.kind with the plan's MinT choices as the argument defaults."""
    return render_scaffold(plan_options(plan))


def scaffold(options: ScaffoldOptions, *, output_path: str | None, workspace: Path, overwrite: bool) -> ScaffoldResult:
    """Render; write to output_path (inside the workspace, never over a file unasked) when given."""
    source = render_scaffold(options)
    written = None
    if output_path is not None:
        written = str(write_text(output_path, source, workspace, overwrite=overwrite))
    return ScaffoldResult(kind=options.kind, source=source, path=written)
