"""Scaffolds -> train.py: render a jinja2 template from options (or a MigrationPlan), check it parses."""

from pathlib import Path

from pydantic import BaseModel, Field

from mcp_server.plan import LossFn, MigrationPlan, ScaffoldKind


class ScaffoldOptions(BaseModel):
    kind: ScaffoldKind
    base_model: str | None = Field(default=None, description="Default --base-model in the script.")
    loss_fn: LossFn | None = Field(default=None, description="RL loss; grpo only.")


class ScaffoldResult(BaseModel):
    kind: ScaffoldKind
    source: str
    path: str | None = Field(default=None, description="Where the source was written, if it was.")


def render_scaffold(options: ScaffoldOptions) -> str:
    raise NotImplementedError("render_scaffold lands with the scaffolds issue")


def render_plan(plan: MigrationPlan) -> str:
    raise NotImplementedError("render_plan lands with the scaffolds issue")


def scaffold(options: ScaffoldOptions, *, output_path: str | None, workspace: Path, overwrite: bool) -> ScaffoldResult:
    raise NotImplementedError("scaffold lands with the scaffolds issue")
