"""Lint: find MinT pitfalls in a training script (rule registry in rules modules, ids MINT###).

`lint_source` parses with libcst, runs one visitor per rule family (pinned-SDK traps, training
traps, setup traps) and, with `fix=True`, applies the safe fixes as one codemod. Nothing is
written here: the CLI writes `fixed_source` for `lint --fix`. The rules and their documentation
live in the registry (`mint_migrate.lint.registry.RULES`); docs/rules.md is generated from it.
"""

from pathlib import Path

import libcst as cst
from pydantic import BaseModel, Field

from mint_migrate.errors import MintMigrateError
from mint_migrate.lint import sdk_rules, setup_rules, training_rules
from mint_migrate.lint.context import build_context
from mint_migrate.lint.fixes import apply_fixes
from mint_migrate.lint.registry import RULES, Rule, all_rules
from mint_migrate.plan import Finding
from mint_migrate.pyparse import PythonSyntaxError, parse_module
from mint_migrate.workspace import read_bytes_checked

FAMILIES = (sdk_rules, training_rules, setup_rules)

__all__ = ["LintReport", "RULES", "Rule", "all_rules", "lint_bytes", "lint_path", "lint_source"]


class LintReport(BaseModel):
    path: str
    findings: list[Finding] = Field(default_factory=list)
    errors: int = 0
    warnings: int = 0
    parse_error: str | None = None
    parse_error_line: int | None = Field(default=None, description="Where the file stops parsing (1-based).")
    parse_error_col: int | None = None
    fixed_source: str | None = Field(default=None, description="The source after safe fixes, when fixes were asked for.")
    fixes_applied: list[str] = Field(default_factory=list)


def lint_source(source: str, path: str = "<source>", *, fix: bool = False) -> LintReport:
    """Lint Python source; findings describe `source` as given, fixes come back in `fixed_source`."""
    try:
        module = parse_module(source, path)
    except PythonSyntaxError as exc:  # its message never quotes the line, which may hold a secret
        return LintReport(
            path=path,
            parse_error=f"line {exc.line}, col {exc.col}: {exc.message}",
            parse_error_line=exc.line,
            parse_error_col=exc.col,
        )
    ctx = build_context(path, module, collectors=(training_rules.FreshClients,))
    cst.visit_batched(ctx.module, [family.visitor(ctx) for family in FAMILIES])
    findings = sorted(ctx.findings, key=lambda f: (f.line, f.col, f.id))
    report = LintReport(
        path=path,
        findings=findings,
        errors=sum(f.severity == "error" for f in findings),
        warnings=sum(f.severity == "warning" for f in findings),
    )
    if fix:
        fixed, applied = apply_fixes(ctx)
        try:
            parse_module(fixed, path)
        except PythonSyntaxError:  # never hand back a file that does not parse
            fixed, applied = source, []
        report.fixed_source = fixed
        report.fixes_applied = applied
    return report


def lint_path(path: Path, *, fix: bool = False) -> LintReport:
    """Lint one file. Raises FileNotFoundError / IsADirectoryError for a path that is not a file."""
    path = Path(path)
    return lint_bytes(read_bytes_checked(path), path, fix=fix)  # an MCP tool's read fence, if any


def lint_bytes(data: bytes, path: Path, *, fix: bool = False) -> LintReport:
    """Lint a file's content, already read (the MCP tool reads through the workspace fence)."""
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MintMigrateError(
            f"{path} is not UTF-8 text (byte {exc.start}); lint reads Python source files."
        ) from None
    return lint_source(source, str(path), fix=fix)
