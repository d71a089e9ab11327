"""Lint: find MinT pitfalls in a training script (rule registry in rules modules, ids MINT###)."""

from pathlib import Path

from pydantic import BaseModel, Field

from mcp_server.plan import Finding


class LintReport(BaseModel):
    path: str
    findings: list[Finding] = Field(default_factory=list)
    errors: int = 0
    warnings: int = 0
    parse_error: str | None = None
    fixed_source: str | None = Field(default=None, description="The source after safe fixes, when fixes were asked for.")
    fixes_applied: list[str] = Field(default_factory=list)


def lint_source(source: str, path: str = "<source>", *, fix: bool = False) -> LintReport:
    raise NotImplementedError("lint lands with the lint issue")


def lint_path(path: Path, *, fix: bool = False) -> LintReport:
    raise NotImplementedError("lint lands with the lint issue")
