"""lint_script / `mint-migrate lint`: MinT pitfalls with rule ids, places, reasons and fixes."""

import json
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mint_migrate.lint import LintReport
from mint_migrate.tools.base import CLI_ONLY, DETAIL_DESCRIPTION, MCP_ONLY, Cli, Detail, Env, Hints, ToolSpec, fit


class LintRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: Annotated[str | None, Field(description="Script to lint (relative to the workspace)."),
                    Cli(required=True)] = None
    source: Annotated[str | None, Field(description="Python source to lint instead of a file."), MCP_ONLY] = None
    fix: Annotated[
        bool,
        Field(description="Also return the source with the safe fixes applied (nothing is written)."),
        Cli("--fix", help="apply the safe fixes in place"),
    ] = False
    format: Annotated[Literal["text", "json", "sarif"], CLI_ONLY, Cli("--format")] = "text"
    detail: Annotated[Detail, Field(description=DETAIL_DESCRIPTION), MCP_ONLY] = "summary"

    @model_validator(mode="after")
    def _one_input(self) -> "LintRequest":
        if (self.path is None) == (self.source is None):
            raise ValueError("give exactly one of path or source")
        return self


class LintResult(LintReport):
    omitted: list[str] = Field(default_factory=list, description="What this summary leaves out.")


def run(request: LintRequest, env: Env) -> LintReport:
    from mint_migrate.lint import lint_bytes, lint_source

    if request.source is not None:
        return lint_source(request.source, fix=request.fix)
    found, data = env.read_bytes(request.path)
    report = lint_bytes(data, found, fix=request.fix)
    # At a shell --fix means "fix the file"; an agent gets the fixed source back and writes nothing.
    if env.front == "cli" and request.fix and report.fixed_source is not None and report.fixes_applied:
        found.write_text(report.fixed_source, encoding="utf-8")
    return report


def text(report: LintReport, request: LintRequest) -> str:
    if request.format == "sarif":
        from mint_migrate.lint.sarif import to_sarif

        return json.dumps(to_sarif([report]), indent=2)
    if request.format == "json":
        return report.model_dump_json(indent=2)
    if report.parse_error:  # no rule ran, so there are no counts to report
        return f"{report.path}: not linted: cannot parse: {report.parse_error}"
    lines = [f"{f.path}:{f.line}:{f.col}: {f.id} [{f.severity}] {f.message}\n    fix: {f.fix}"
             for f in report.findings]
    if report.fixes_applied:
        lines.append(f"fixed: {', '.join(report.fixes_applied)}")
    lines.append(f"{report.errors} error(s), {report.warnings} warning(s)")
    return "\n".join(lines)


def exit_code(report: LintReport) -> int:
    if report.parse_error:
        return 2
    return 1 if report.errors else 0


TOOL = ToolSpec(
    name="lint_script",
    command="lint",
    title="Lint a MinT training script",
    blurb="MinT pitfalls (pinned-SDK, training and setup traps) with rule ids MINT###, file:line, why and the fix",
    description="Find MinT pitfalls (pinned-SDK traps, training traps, setup traps) with rule ids MINT###, "
    "file:line:col, why it matters and the fix. Give exactly one of path or source.",
    cli_help="find MinT pitfalls (exit 1 on errors)",
    request=LintRequest,
    result=LintResult,
    annotations=Hints(read_only=True, idempotent=True, open_world=False),
    isolated=True,
    run=run,
    summary=lambda report, request, env: fit(LintResult.model_validate(report.model_dump()), whole=("fixed_source",)),
    full=lambda report, request, env: LintResult.model_validate(report.model_dump()),
    text=text,
    exit_code=exit_code,
)
