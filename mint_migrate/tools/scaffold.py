"""scaffold_train_py / `mint-migrate scaffold`: a runnable MinT train.py for a training kind."""

import sys
from pathlib import Path
from typing import Annotated

from pydantic import Field

from mint_migrate.render import COMPANION, ScaffoldOptions, ScaffoldResult
from mint_migrate.tools.base import DETAIL_DESCRIPTION, HIDDEN, MCP_ONLY, Cli, Detail, Env, Hints, ToolSpec, fit


class ScaffoldRequest(ScaffoldOptions):
    """ScaffoldOptions' fields are the tool's arguments and the command's flags; its validators run for both."""

    header: Annotated[list[str], HIDDEN] = []  # what a migration writes at the top: no argument of its own
    output_path: Annotated[
        str | None,
        Field(description="Write the script here and mint_run.py beside it (inside the workspace); "
              "omit to only return them."),
        Cli("--out", help="write train.py here, and mint_run.py beside it, instead of printing"),
    ] = None
    overwrite: Annotated[
        bool,
        Field(description="Replace an existing file at output_path (and mint_run.py)."),
        Cli("--force", help="overwrite --out and the mint_run.py beside it if they exist"),
    ] = False
    detail: Annotated[Detail, Field(description=DETAIL_DESCRIPTION), MCP_ONLY] = "summary"


class ScaffoldToolResult(ScaffoldResult):
    source: str | None = None  # type: ignore[assignment]  # written: read it from `path`
    companion_source: str | None = None  # type: ignore[assignment]
    resources: list[str] = Field(default_factory=list, description="resources/read these URIs for the full texts.")
    omitted: list[str] = Field(default_factory=list, description="What this summary leaves out.")


def run(request: ScaffoldRequest, env: Env) -> ScaffoldResult:
    from mint_migrate.render import scaffold

    options = ScaffoldOptions(**request.model_dump(include=set(ScaffoldOptions.model_fields)))
    return scaffold(options, output_path=request.output_path, workspace=env.workspace, overwrite=request.overwrite)


def _relative(path: str, env: Env) -> str:
    try:
        return Path(path).relative_to(env.workspace.resolve()).as_posix()
    except ValueError:
        return path


def summary(result: ScaffoldResult, request: ScaffoldRequest, env: Env) -> ScaffoldToolResult:
    out = ScaffoldToolResult.model_validate(result.model_dump())
    if result.path:
        out.source = out.companion_source = None
        out.resources = [f"mint://workspace/{_relative(p, env)}" for p in (result.path, result.companion_path) if p]
        out.omitted.append("source and companion_source: written; read them through `resources`")
    else:
        out.companion_source = None
        out.omitted.append(f"companion_source ({COMPANION}, the same for every kind): give output_path to write "
                           "both and read them as resources, or detail='full'")
    return fit(out, whole=("source",))


def text(result: ScaffoldResult, request: ScaffoldRequest) -> str:
    if result.path:
        return (f"Wrote {result.path} and {result.companion_path} (the plumbing train.py imports: keep them "
                f"together)\nNext: mint-migrate lint {result.path} && mint-migrate smoke {result.path}")
    # stdout is train.py alone, so it can be redirected into a file; stderr says what is not in it.
    print(f"note: this train.py imports {COMPANION}, which is not printed; --out DIR/train.py writes both.",
          file=sys.stderr)
    return result.source


TOOL = ToolSpec(
    name="scaffold_train_py",
    command="scaffold",
    title="Scaffold a MinT train.py",
    blurb="a complete, runnable MinT train.py for sft, grpo, dpo or distill (and the mint_run.py it imports)",
    description="Render a complete, runnable MinT train.py for a training kind, and mint_run.py, the "
    "plumbing it imports (the same file for every kind; it goes beside train.py). Both are checked to "
    "parse before they are returned; they are written only when output_path is given, mint_run.py "
    "beside it (then the result names them and their resource URIs instead of inlining them). Every "
    "tuning argument only sets the default of the script's matching command-line flag.",
    cli_help="write a runnable MinT train.py (and the mint_run.py it imports) for a kind",
    request=ScaffoldRequest,
    result=ScaffoldToolResult,
    annotations=Hints(read_only=False, destructive=True, idempotent=True, open_world=False),
    run=run,
    summary=summary,
    full=lambda result, request, env: ScaffoldToolResult.model_validate(result.model_dump()),
    text=text,
    files=lambda result: [p for p in (result.path, result.companion_path) if p],
)
