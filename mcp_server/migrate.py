"""The migrate engine: analyze the inputs, render train.py and MIGRATION.md, and write them only
when asked to. The MCP tool `migrate_script` and the CLI `mint-migrate migrate` both call `migrate`."""

from pathlib import Path

from pydantic import BaseModel, Field

from mcp_server import report, workspace as ws
from mcp_server.analyze import analyze_inputs
from mcp_server.plan import Construct, MigrationPlan
from mcp_server.render import render_plan


class MigrationResult(BaseModel):
    plan: MigrationPlan
    train_py: str | None = Field(default=None, description="The rendered train.py.")
    report: str = Field(description="MIGRATION.md: what changed and why.")
    tinker_fixes: list[Construct] = Field(
        default_factory=list,
        description="For Tinker SDK sources: each 0.38-only call to change for tinker 0.22 (MinT), with file:line.",
    )


def migrate(
    source_path: Path, config_paths: list[Path], *, output_dir: str | None, workspace: Path, overwrite: bool
) -> MigrationResult:
    """Plan the migration; with `output_dir`, also write DIR/train.py and DIR/MIGRATION.md (inside the workspace)."""
    analysis = analyze_inputs(Path(source_path), [Path(p) for p in config_paths])
    plan = analysis.plan
    train_py = render_plan(plan)
    if output_dir is not None:
        out = ws.resolve_output(output_dir, workspace, overwrite=True)
        targets = [out / "train.py", out / "MIGRATION.md"]
        for target in targets:  # check both before writing either: all or nothing
            ws.resolve_output(target, workspace, overwrite=overwrite)
        plan.files_written = [str(t) for t in targets]
    text = report.render_report(plan, analysis.tinker_fixes)
    if output_dir is not None:
        ws.write_text(targets[0], train_py, workspace, overwrite=overwrite)
        ws.write_text(targets[1], text, workspace, overwrite=overwrite)
    return MigrationResult(plan=plan, train_py=train_py, report=text, tinker_fixes=analysis.tinker_fixes)
