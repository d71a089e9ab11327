"""The migrate engine: analyze the inputs, render train.py, its companions (mint_run.py, the plumbing
train.py imports; the data step; the reward functions copied out of a training script) and MIGRATION.md, and write them only when asked
to. The MCP tool `migrate_script` and the CLI `mint-migrate migrate` both call `migrate`."""

from pathlib import Path

from pydantic import BaseModel, Field

from mint_migrate import report
from mint_migrate import workspace as ws
from mint_migrate.analyze import analyze_inputs
from mint_migrate.analyze.extract import extract_functions
from mint_migrate.next_steps import Front
from mint_migrate.plan import Construct, MigrationPlan
from mint_migrate.render import (
    COMPANION,
    EXTRACTED_REWARDS,
    plan_options,
    render_companion,
    render_prepare_data,
    render_scaffold,
    train_py_constants,
)


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
        description="Files written beside train.py: mint_run.py (the plumbing train.py imports, the same for "
        "every kind), prepare_data.py (the data step), rewards.py (reward functions copied out of the training "
        "script).",
    )


def migrate(
    source_path: Path, config_paths: list[Path], *, output_dir: str | None, workspace: Path, overwrite: bool,
    confirmed: list[str] | None = None, front: Front = "cli",
) -> MigrationResult:
    """Plan the migration; with `output_dir`, also write DIR/train.py, DIR/MIGRATION.md and the
    companions (inside the workspace): mint_run.py (the plumbing train.py imports), prepare_data.py
    (the data step) and rewards.py (reward functions copied out of a training script that cannot be
    imported on MinT). `confirmed`: settings the caller read in the inputs, `key=value@file:line`; each
    is checked against its line before it is applied. `front` words MIGRATION.md's "Next" for the
    caller: MCP tool calls or CLI commands."""
    analysis = analyze_inputs(Path(source_path), [Path(p) for p in config_paths], confirmed)
    plan = analysis.plan
    out = ws.resolve_output(output_dir, workspace, overwrite=True) if output_dir is not None else None
    options = plan_options(plan, out)
    files = {"train.py": render_scaffold(options), COMPANION: render_companion()}
    if plan.data is not None and plan.data.source:
        files["prepare_data.py"] = render_prepare_data(options)
    reward = plan.reward
    if plan.mint.kind == "grpo" and reward is not None and reward.status == "user" and reward.extract:
        origin = Path(reward.file)
        files[EXTRACTED_REWARDS] = extract_functions(ws.read_text_checked(origin),
                                                     [f.name for f in reward.functions], origin.name)
    if out is not None:
        targets = [out / name for name in [*files, "MIGRATION.md"]]
        for target in targets:  # check every file before writing any: all or nothing
            ws.resolve_output(target, workspace, overwrite=overwrite)
        plan.files_written = [str(t) for t in targets]
    text = report.render_report(plan, analysis.tinker_fixes, constants=train_py_constants(options),
                                front=front, train=_as_called(out, workspace, front))
    if out is not None:
        for name, content in [*files.items(), ("MIGRATION.md", text)]:
            ws.write_text(out / name, content, workspace, overwrite=overwrite)
    return MigrationResult(plan=plan, train_py=files["train.py"], report=text, tinker_fixes=analysis.tinker_fixes,
                           companions={k: v for k, v in files.items() if k != "train.py"})


def _as_called(out: Path | None, workspace: Path, front: Front) -> str:
    """train.py as the hand-over names it: an MCP tool takes paths relative to the workspace."""
    if front != "mcp" or out is None:
        return "train.py"
    try:
        return (out / "train.py").relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return str(out / "train.py")
