"""preflight_check / `mint-migrate preflight`: can a run start on mint-local or MinT?"""

from typing import Annotated, Literal

from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from mcp_server.preflight import PreflightReport
from mcp_server.tools.base import DETAIL_DESCRIPTION, MCP_ONLY, Cli, Detail, Env, ToolSpec, fit


class PreflightRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    script_path: Annotated[
        str | None,
        Field(description="The train.py to check (base model, tokenizer, lint); optional."),
        Cli(metavar="path", help="train.py to check too"),
    ] = None
    target: Annotated[
        Literal["local", "remote"],
        Field(description="local: ready for a smoke run on mint-local (no key or endpoint needed); "
              "remote: ready for MinT (key, endpoint, served models)."),
        Cli("--target", help="local: ready for a smoke run on mint-local (no key or endpoint needed); "
            "remote: for MinT (default)"),
    ] = "remote"
    detail: Annotated[Detail, Field(description=DETAIL_DESCRIPTION), MCP_ONLY] = "summary"


class PreflightResult(PreflightReport):
    omitted: list[str] = Field(default_factory=list, description="What this summary leaves out.")


def run(request: PreflightRequest, env: Env) -> PreflightReport:
    from mcp_server.preflight import run_preflight

    path = env.optional(request.script_path)
    with env.fence():  # the script is read for its lint and base model
        return run_preflight(path, target=request.target)


def text(report: PreflightReport, request: PreflightRequest) -> str:
    marks = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}
    lines = []
    for c in report.checks:
        lines.append(f"[{marks[c.status]}] {c.name}: {c.message}")
        if c.fix and c.status != "ok":
            lines.append(f"       fix: {c.fix}")
    lines.append(f"preflight ({report.target}) " + ("passed" if report.ok else "FAILED"))
    return "\n".join(lines)


TOOL = ToolSpec(
    name="preflight_check",
    command="preflight",
    title="Preflight check for a MinT run",
    blurb="SDK versions, mint-local or key/endpoint/served models, and the script's lint, for target local or remote",
    description="Check that a run can start on `target`. Both: Python, mindlab-toolkit / tinker versions "
    "and the script's lint summary. local adds mint-local's packages; remote adds the sk- key bug, "
    "MINT_BASE_URL and MINT_API_KEY, the endpoint, and the script's base model and tokenizer.",
    cli_help="check SDK, credentials, endpoint and script (exit 1 on a failure)",
    request=PreflightRequest,
    result=PreflightResult,
    annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=True),
    run=run,
    summary=lambda report, request, env: fit(PreflightResult.model_validate(report.model_dump())),
    full=lambda report, request, env: PreflightResult.model_validate(report.model_dump()),
    text=text,
    exit_code=lambda report: 0 if report.ok else 1,
)
