"""Analyze source files (python, shell launch scripts, YAML configs) into a MigrationPlan.

`analyze()` is the pure part: inputs -> plan, nothing rendered or written. `migrate()` adds the
rendered train.py and the MIGRATION.md report, and writes them only when asked to.
"""

from pathlib import Path

from pydantic import BaseModel, Field

from mcp_server.analyze import choices, coverage, openrlhf, pytorch, task, tinker, torchforge, trl, verl
from mcp_server.analyze.detect import detect
from mcp_server.analyze.evidence import LORA_PARTS, Evidence
from mcp_server.analyze.inputs import Project, load_project
from mcp_server.analyze.pycommon import server_side
from mcp_server.plan import (
    SETTING_KEYS,
    Construct,
    LoraSetting,
    LoraValue,
    MigrationPlan,
    MintChoices,
    PlanWarning,
    Setting,
    Settings,
)

_ANALYZERS = {"trl": trl, "verl": verl, "openrlhf": openrlhf, "torchforge": torchforge, "tinker": tinker,
              "pytorch": pytorch}


class MigrationResult(BaseModel):
    plan: MigrationPlan
    train_py: str | None = Field(default=None, description="The rendered train.py.")
    report: str = Field(description="MIGRATION.md: what changed and why.")
    tinker_fixes: list[Construct] = Field(
        default_factory=list,
        description="For Tinker SDK sources: each 0.38-only call to change for tinker 0.22 (MinT), with file:line.",
    )
    companions: dict[str, str] = Field(
        default_factory=dict,
        description="Files written beside train.py: prepare_data.py (the data step), rewards.py (reward functions "
        "copied out of the training script).",
    )


def analyze(source_path: Path, config_paths: list[Path]) -> MigrationPlan:
    """Read the inputs and return the plan: framework, algorithm, traced settings, MinT choices."""
    plan, _ = _analyze(Path(source_path), [Path(p) for p in config_paths])
    return plan


def _analyze(source_path: Path, config_paths: list[Path]) -> tuple[MigrationPlan, Evidence]:
    project = load_project(source_path, config_paths)
    framework, where = detect(project)
    ev = Evidence()
    _ANALYZERS[framework].analyze(project, ev)
    _launch_context(project, ev)
    vote = ev.algorithm()
    algorithm = vote.algorithm if vote is not None else "other"
    settings = build_settings(ev)
    defaults = {
        key: Setting(value=_coerce(value), source=f"{framework} default: {name}")
        for key, (value, name) in _defaults(framework, algorithm).items()
        if getattr(settings, key) is None
    }
    mint, more = choices.choose(framework, algorithm, ev.variant, settings, defaults, ev)
    mint.reasons.insert(0, f"framework {framework}: recognised at {where}")
    facts = task.extract(project, ev, framework, algorithm, mint.kind, settings)
    _task_choices(mint, settings, facts)
    warnings = [*_still_open(ev.warnings, mint.kind, facts), *more, *facts.warnings, *_stray_flags(project)]
    if algorithm == "other" and vote is not None and vote.weight == 0:
        warnings.append(PlanWarning(code="ALGORITHM_UNKNOWN", message=f"Could not tell the algorithm: {vote.why}. "
                                    "Check the scaffold choice in MIGRATION.md."))
    plan = MigrationPlan(
        framework=framework,
        algorithm=algorithm,
        variant=ev.variant,
        settings=settings,
        framework_defaults=defaults,
        mint=mint,
        warnings=warnings,
        constructs=ev.constructs,
        data=facts.data,
        reward=facts.reward,
        schedule=facts.schedule,
        inputs=[f.label + (" (read because a launch command names it)" if f.auto else "") for f in project.files],
    )
    if facts.reward is not None and facts.reward.status == "placeholder":
        plan.warnings.append(PlanWarning(code="REWARD_PLACEHOLDER", message="train.py's reward is the scaffold's "
                                         f"placeholder, not yours: {facts.reward.reason}.",
                                         source=facts.reward.source))
    plan.setting_uses = coverage.setting_uses(plan)
    _reward_constructs(plan)
    return plan, ev


def _reward_constructs(plan: MigrationPlan) -> None:
    """The side-by-side rows of reward functions name what train.py really does with them."""
    reward = plan.reward
    if reward is None:
        return
    for construct in plan.constructs:
        if construct.mint.startswith("reward_fn("):
            if reward.status == "user":
                construct.mint = (f"called unchanged from train.py (REWARD, the {reward.style} signature)"
                                  + (", copied into rewards.py" if reward.extract else ""))
                construct.note = reward.reason
            else:
                construct.mint, construct.note = "train.py's placeholder reward", reward.reason


def _task_choices(mint: MintChoices, settings: Settings, facts: "task.Task") -> None:
    """The choices the task adds: the prompt limit, and the throughput variant when the source samples
    while it trains."""
    mint.max_prompt_tokens, why = coverage.prompt_limit(mint.kind, settings, mint.max_tokens)
    if why:
        mint.reasons.append(why)
    several = facts.schedule.minibatches > 1 or facts.schedule.updates_per_batch > 1
    if mint.kind == "grpo" and facts.throughput and several:
        mint.reasons.append(f"the plain GRPO recipe, although the source samples while it trains "
                            f"({facts.throughput}): only the plain recipe takes several optim_steps per batch")
    elif mint.kind == "grpo" and facts.throughput:
        mint.throughput = True
        mint.reasons.append(f"the throughput variant (sampling while training, streaming minibatches): the source "
                            f"samples while it trains ({facts.throughput})")


def _still_open(warnings: list[PlanWarning], kind: str, facts: "task.Task") -> list[PlanWarning]:
    """The analyzers' warnings, without the ones train.py now handles: the loss normalisation (in
    the datum weights / advantages) and several updates per batch (--updates-per-batch)."""
    handled = set()
    if kind in ("sft", "grpo"):
        handled.add("LOSS_AGGREGATION")
    if kind == "grpo" and facts.schedule.updates_per_batch > 1:
        handled.add("MULTI_UPDATE")
    return [w for w in warnings if w.code not in handled]


def _launch_context(project: Project, ev: Evidence) -> None:
    """What every framework's launch has in common: the process count, and launchers and cluster
    configs that become server-side on MinT."""
    main = project.main_command()
    if main is not None and main.world_size is not None and "world_size" not in ev.extras:
        ev.extra("world_size", main.world_size)
    for command in project.commands():
        for launcher in command.launchers:
            if launcher in {"torchrun", "deepspeed", "accelerate"}:
                server_side(ev, f"{launcher} (multi-process GPU launch)", command.loc)
            elif launcher == "ray":
                server_side(ev, "ray job submit (Ray cluster)", command.loc)
    for f in project.files:
        gpu_env = sorted(k for k in (f.shell.exports if f.shell else {}) if k.startswith(("VLLM_", "NCCL_", "CUDA_")))
        if gpu_env:
            server_side(ev, f"GPU engine environment ({', '.join(gpu_env)})", f.shell.exports[gpu_env[0]].loc)
    for f in project.infra_configs():
        values = f.yaml.values
        what = next((f"{k}={values[k].value}" for k in ("distributed_type", "deepspeed_config.zero_stage",
                                                        "zero_optimization.stage") if k in values), "cluster settings")
        loc = next((values[k].loc for k in ("distributed_type", "deepspeed_config.zero_stage",
                                            "zero_optimization.stage") if k in values), None)
        server_side(ev, f"{f.label} ({what})", loc)


def _defaults(framework: str, algorithm: str) -> dict[str, tuple[object, str]]:
    module = _ANALYZERS[framework]
    return module.defaults(algorithm) if hasattr(module, "defaults") else {}


def build_settings(ev: Evidence) -> Settings:
    values: dict[str, Setting] = {}
    for key in SETTING_KEYS:
        if key == "lora":
            continue
        best = ev.best(key)
        if best is not None and _coerce(best.value) is not None:
            values[key] = Setting(value=_coerce(best.value), source=str(best.loc))
    parts = {part: ev.best(part) for part in LORA_PARTS}
    if any(parts.values()):
        anchor = parts["lora.rank"] or next(v for v in parts.values() if v is not None)
        rank = parts["lora.rank"]
        alpha = parts["lora.alpha"]
        modules = parts["lora.target_modules"]
        lora = LoraValue(
            rank=int(rank.value) if rank is not None and _is_number(rank.value) else None,
            alpha=float(alpha.value) if alpha is not None and _is_number(alpha.value) else None,
            target_modules=_modules(modules.value) if modules is not None else None,
        )
        values["lora"] = LoraSetting(value=lora, source=str(anchor.loc))
    return Settings(**values)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _modules(value: object) -> list[str] | str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return None


def _coerce(value: object):
    """A Setting value: a scalar, a list of strings or a list of numbers."""
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        if all(_is_number(v) for v in value):
            return [float(v) for v in value]
        return [str(v) for v in value]
    if isinstance(value, dict):
        return [str(k) for k in value]
    return None


def _stray_flags(project: Project) -> list[PlanWarning]:
    out = []
    for f in project.files:
        if f.shell is None:
            continue
        for loc in f.shell.stray_flags:
            out.append(PlanWarning(code="STRAY_FLAGS", message="A line starts with a flag but is not part of a "
                                   "command: a comment or a missing backslash cut the command above it short, and "
                                   "bash ignores these flags too.", source=str(loc)))
    return out


def migrate(
    source_path: Path, config_paths: list[Path], *, output_dir: str | None, workspace: Path, overwrite: bool
) -> MigrationResult:
    """Plan the migration; with `output_dir`, also write DIR/train.py, DIR/MIGRATION.md and the task's
    companions (inside the workspace): prepare_data.py (the data step) and rewards.py (reward
    functions copied out of the training script)."""
    from mcp_server import report, workspace as ws
    from mcp_server.analyze.extract import extract_functions
    from mcp_server.render import (
        EXTRACTED_REWARDS,
        plan_options,
        render_prepare_data,
        render_scaffold,
        train_py_constants,
    )

    plan, ev = _analyze(Path(source_path), [Path(p) for p in config_paths])
    out = ws.resolve_output(output_dir, workspace, overwrite=True) if output_dir is not None else None
    options = plan_options(plan, out)
    files = {"train.py": render_scaffold(options)}
    if plan.data is not None and plan.data.source:
        files["prepare_data.py"] = render_prepare_data(options)
    if plan.mint.kind == "grpo" and plan.reward is not None and plan.reward.status == "user" and plan.reward.extract:
        origin = Path(plan.reward.file)
        files[EXTRACTED_REWARDS] = extract_functions(origin.read_text(encoding="utf-8"),
                                                     [f.name for f in plan.reward.functions], origin.name)
    text_of = dict(files)
    if out is not None:
        targets = [out / name for name in [*files, "MIGRATION.md"]]
        for target in targets:  # check every file before writing any: all or nothing
            ws.resolve_output(target, workspace, overwrite=overwrite)
        plan.files_written = [str(t) for t in targets]
    text = report.render_report(plan, ev.tinker_fixes, constants=train_py_constants(options))
    if out is not None:
        for name, content in [*text_of.items(), ("MIGRATION.md", text)]:
            ws.write_text(out / name, content, workspace, overwrite=overwrite)
    return MigrationResult(plan=plan, train_py=files["train.py"], report=text, tinker_fixes=ev.tinker_fixes,
                           companions={k: v for k, v in files.items() if k != "train.py"})


__all__ = ["MigrationResult", "analyze", "build_settings", "migrate"]
