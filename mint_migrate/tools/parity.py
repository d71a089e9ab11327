"""check_parity / `mint-migrate parity`: does train.py optimise the source's objective?"""

import shlex
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mint_migrate.parity.records import ParityReport
from mint_migrate.tools.base import CLI_ONLY, DETAIL_DESCRIPTION, MCP_ONLY, Cli, Detail, Env, Hints, ToolSpec, fit


class ParityRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source_path: Annotated[
        str, Field(description="The source training script (.py) the migration came from."),
        Cli(metavar="source", help="the source training script (.py) the migration came from"),
    ]
    train_path: Annotated[
        str | None, Field(description="The migrated train.py; omit to migrate the source afresh."),
        Cli("--train", metavar="PATH", help="the migrated train.py (default: migrate SOURCE afresh)"),
    ] = None
    config_paths: Annotated[
        list[str], Field(description="Companion files the migration read (YAML, reward module, ...)."),
        Cli("--config", metavar="FILE", help="companion file (repeatable)", repeat=True),
    ] = []
    rows: Annotated[
        int, Field(ge=1, le=64, description="Data rows in the compared step."),
        Cli("--rows", help="data rows (GRPO: prompts) in the step (default: 8)"),
    ] = 8
    data_path: Annotated[
        str | None, Field(description="A local copy of the source's data, when it reads a Hub dataset."),
        Cli("--data", metavar="FILE", help="a local copy of the source's data (a Hub dataset offline)"),
    ] = None
    mint_data_path: Annotated[
        str | None, Field(description="The rows train.py reads, when a separate data step converted them."),
        Cli("--mint-data", metavar="FILE", help="rows train.py reads, if a separate data step made them"),
    ] = None
    model: Annotated[
        str | None, Field(description="A Hugging Face model folder both sides load (default: tiny Qwen3)."),
        Cli("--model", metavar="DIR", help="Hugging Face folder both sides load (default: tiny Qwen3)"),
    ] = None
    script_args: Annotated[
        list[str], Field(description="Command-line arguments for the source script."),
        Cli("--args", metavar="STRING", help="command-line arguments for the source script", split=True),
    ] = []
    fresh: Annotated[
        bool, Field(description="Re-run the source side even if a cached record matches."),
        Cli("--fresh", help="run the source side even if a cached record matches"),
    ] = False
    update_report: Annotated[
        bool, Field(description="Write the result as the Parity section of the MIGRATION.md beside train.py."),
        Cli("--no-report", help="do not write the Parity section of MIGRATION.md", invert=True),
    ] = True
    timeout_s: Annotated[
        float, Field(gt=0, le=3600, description="Per side, in seconds."),
        Cli("--timeout", metavar="SECONDS", help="per side"),
    ] = 600
    keep: Annotated[str | None, CLI_ONLY, Cli("--keep", metavar="DIR", help="keep both sides' records and the rows here")] = None
    detail: Annotated[Detail, Field(description=DETAIL_DESCRIPTION), MCP_ONLY] = "summary"

    @field_validator("script_args", mode="before")
    @classmethod
    def _shell_words(cls, value):
        return shlex.split(value) if isinstance(value, str) else value


class ParityResult(ParityReport):
    omitted: list[str] = Field(default_factory=list, description="What this summary leaves out.")


def run(request: ParityRequest, env: Env) -> ParityReport:
    from mint_migrate.parity.check import check_parity, record_in_migration_md

    source = env.read(request.source_path)
    train = env.optional(request.train_path)
    configs = [env.read(p) for p in request.config_paths]
    data, mint_data = env.optional(request.data_path), env.optional(request.mint_data_path)
    model = str(env.read(request.model)) if request.model and request.model != "tiny" else None
    with env.fence():
        report = check_parity(
            source, train=train, configs=configs, rows=request.rows, data=data, mint_data=mint_data, model=model,
            script_args=request.script_args, timeout_s=request.timeout_s, fresh=request.fresh,
            keep=Path(request.keep).expanduser() if request.keep else None,
            on_progress=lambda step, message: env.progress(step, 3, message), cancel=env.cancel,
        )
    if env.cancel is not None and env.cancel.is_set():
        return report  # the caller is gone: write nothing
    if train is not None and request.update_report and (written := record_in_migration_md(report, env.workspace)):
        report.notes.append(f"wrote the Parity section of {written}")
    return report


def text(report: ParityReport, request: ParityRequest) -> str:
    from mint_migrate.parity.check import format_report

    return format_report(report)


TOOL = ToolSpec(
    name="check_parity",
    command="parity",
    title="Check a migration's objective against its source",
    blurb="one step of the source (its own framework) and of train.py on a tiny model: tokens, trained "
    "positions, weights and the step-0 loss compared",
    description="Prove the migrated train.py optimises the source's objective: run the source with its own "
    "framework (TRL SFT/DPO/GRPO, a plain PyTorch loop, a Tinker-SDK script; verl's and OpenRLHF's own loss "
    "code for their launchers) and train.py on mint-local for one step, on the same data rows and the same "
    "tiny model, then compare token sequences, trained positions, per-token weights (up to one constant, with "
    "what it means for the learning rate) and the step-0 loss. verdict: passed; failed (each difference with "
    "its row, position, both values, cause and fix); inconclusive (a side could not run, e.g. its framework "
    "is missing or too new: the finding gives the exact command that fixes it).",
    cli_help="run the source and its migrated train.py for one step on a tiny model; compare objectives",
    request=ParityRequest,
    result=ParityResult,
    annotations=Hints(read_only=False, destructive=False, idempotent=True, open_world=False),
    run=run,
    summary=lambda report, request, env: fit(ParityResult.model_validate(report.model_dump())),
    full=lambda report, request, env: ParityResult.model_validate(report.model_dump()),
    text=text,
    exit_code=lambda report: 0 if report.passed else 1,
    cancellable=True,
)
