"""preflight_check / `mint-migrate preflight`: can a run start on mint-local or MinT?"""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from mint_migrate.tools.base import DETAIL_DESCRIPTION, MCP_ONLY, Cli, Detail, Env, Hints, ToolSpec, fit, with_omitted


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


def result_model():
    from mint_migrate.preflight import PreflightReport  # httpx: the CLI's other commands never pay for it

    return with_omitted(PreflightReport)


def run(request: PreflightRequest, env: Env):
    from mint_migrate.preflight import run_preflight

    path = env.optional(request.script_path)
    with env.fence():  # the script is read for its lint and base model
        return run_preflight(path, target=request.target)


def text(report, request: PreflightRequest) -> str:
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
    result=result_model,
    annotations=Hints(read_only=True, idempotent=True, open_world=True),
    isolated=True,
    run=run,
    summary=lambda report, request, env: fit(result_model().model_validate(report.model_dump())),
    full=lambda report, request, env: result_model().model_validate(report.model_dump()),
    text=text,
    exit_code=lambda report: 0 if report.ok else 1,
)
