"""launch_smoke_run / `mint-migrate smoke`: a few real steps of a train.py, and a verdict."""

import signal
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from mint_migrate.tools.base import (
    DETAIL_DESCRIPTION,
    MCP_ONLY,
    Cli,
    Detail,
    Env,
    Hints,
    Stopped,
    ToolSpec,
    fit,
    with_omitted,
)


class SmokeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    script_path: Annotated[str, Field(description="The train.py to run (relative to the workspace)."),
                           Cli(metavar="path")]
    target: Annotated[
        Literal["local", "remote"],
        Field(description="local: an offline mint-local backend; remote: MINT_BASE_URL / MINT_API_KEY."),
        Cli("--target"),
    ] = "local"
    steps: Annotated[int, Field(ge=1, le=100, description="Training steps to run."), Cli("--steps")] = 2
    timeout_s: Annotated[
        float, Field(gt=0, le=3600, description="Kill the run after this many seconds."),
        Cli("--timeout", metavar="SECONDS"),
    ] = 600
    model: Annotated[
        str | None,
        Field(description="local only: 'tiny' (default) or a local Hugging Face model directory to serve."),
        Cli("--model", help="local: 'tiny' (default) or a local Hugging Face model directory"),
    ] = None
    device: Annotated[
        Literal["auto", "cpu", "cuda"] | None,
        Field(description="local only: where mint-local runs the model; auto uses CUDA when present."),
        Cli("--device", help="local: where mint-local runs the model"),
    ] = None
    parity_source_path: Annotated[
        str | None,
        Field(description="Also run the parity check against this source script (see check_parity) once the "
              "smoke run passes; the verdict fails if the objectives differ."),
        MCP_ONLY,
    ] = None
    detail: Annotated[Detail, Field(description=DETAIL_DESCRIPTION), MCP_ONLY] = "summary"


def result_model():
    from mint_migrate.parity.check import SmokeParityVerdict  # the runner and httpx: not for the CLI's other commands

    return with_omitted(SmokeParityVerdict)


def run(request: SmokeRequest, env: Env):
    from mint_migrate.parity.check import SmokeParityVerdict, smoke_with_parity
    from mint_migrate.smoke import SmokeInterrupted

    script = env.read(request.script_path)
    source = env.optional(request.parity_source_path)
    received: list[int] = []
    if env.front == "cli":
        def terminated(signum: int, _frame) -> None:  # SIGTERM/SIGHUP and Ctrl-C: stop the run
            received.append(signum)
            # Only the first stops the run: a second Ctrl-C while the run's processes are being killed
            # would cut that short and lose the verdict (no JSON, a traceback). The run stops anyway.
            if len(received) == 1:
                raise KeyboardInterrupt

        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            if signum != signal.SIGINT or signal.getsignal(signum) is signal.default_int_handler:
                signal.signal(signum, terminated)  # (a SIGINT ignored by who started us stays ignored)
    try:
        with env.fence():  # parity migrates the source afresh when asked, reading what it names
            return smoke_with_parity(
                script, source, target=request.target, steps=request.steps, timeout_s=request.timeout_s,
                on_progress=lambda p: env.progress(p.step, p.total, p.message),
                model=request.model, device=request.device, cancel=env.cancel,
            )
    except SmokeInterrupted as stop:  # the script and everything it started are gone already
        verdict = SmokeParityVerdict(**stop.verdict.model_dump())
        raise Stopped(verdict, 128 + (received[0] if received else signal.SIGINT)) from None


def text(verdict, request: SmokeRequest) -> str:
    from mint_migrate.smoke import format_verdict

    return format_verdict(verdict)


TOOL = ToolSpec(
    name="launch_smoke_run",
    command="smoke",
    title="Smoke-run a train.py",
    blurb="a few real training steps against mint-local (offline) or MinT; a verdict with losses, sample and errors",
    description="Run the script for a few steps (--smoke --steps N) and return a verdict: passed, steps, "
    "losses, step time, a sampled text for RL, the checkpoint, classified errors and the log tail. "
    "Progress is reported once per training step. With parity_source_path, the parity check runs after "
    "a passing smoke run and its report is the verdict's `parity`.",
    cli_help="run a train.py for a few steps against mint-local or MinT",
    request=SmokeRequest,
    result=result_model,
    annotations=Hints(read_only=False, destructive=False, idempotent=False, open_world=True),
    run=run,
    summary=lambda verdict, request, env: fit(result_model().model_validate(verdict.model_dump())),
    full=lambda verdict, request, env: result_model().model_validate(verdict.model_dump()),
    text=text,
    exit_code=lambda verdict: 0 if verdict.passed else 1,
    cancellable=True,
)
