"""Analyze source files (python, shell launch scripts, YAML configs) into a MigrationPlan.

`analyze()` is the pure part: inputs -> plan, nothing rendered or written. `migrate()` adds the
rendered train.py and the MIGRATION.md report, and writes them only when asked to.
"""

from pathlib import Path

from pydantic import BaseModel, Field

from mcp_server.analyze import choices, openrlhf, pytorch, tinker, torchforge, trl, verl
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
    warnings = [*ev.warnings, *more, *_stray_flags(project)]
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
        inputs=[f.label + (" (read because a launch command names it)" if f.auto else "") for f in project.files],
    )
    return plan, ev


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
    """Plan the migration; with `output_dir`, also write DIR/train.py and DIR/MIGRATION.md (inside the workspace)."""
    from mcp_server import report
    from mcp_server import workspace as ws
    from mcp_server.render import render_plan

    plan, ev = _analyze(Path(source_path), [Path(p) for p in config_paths])
    train_py = render_plan(plan)
    if output_dir is not None:
        out = ws.resolve_output(output_dir, workspace, overwrite=True)
        targets = [out / "train.py", out / "MIGRATION.md"]
        for target in targets:  # check both before writing either: all or nothing
            ws.resolve_output(target, workspace, overwrite=overwrite)
        plan.files_written = [str(t) for t in targets]
    text = report.render_report(plan, ev.tinker_fixes)
    if output_dir is not None:
        ws.write_text(targets[0], train_py, workspace, overwrite=overwrite)
        ws.write_text(targets[1], text, workspace, overwrite=overwrite)
    return MigrationResult(plan=plan, train_py=train_py, report=text, tinker_fixes=ev.tinker_fixes)


__all__ = ["MigrationResult", "analyze", "build_settings", "migrate"]
