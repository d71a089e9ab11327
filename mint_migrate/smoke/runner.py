"""Run a train.py for a few steps against mint-local (or the user's MinT) and judge it.

The script runs as `python SCRIPT --smoke --steps N` (the flags it takes), supervised by
mint_local.process: its own session, a deadline, and a kill ladder that ends everything it
started, whether the run finished, timed out, was cancelled (an MCP client went away) or
interrupted (Ctrl-C: SmokeInterrupted carries the verdict). Whatever the script does, the result
is a SmokeVerdict; only a missing script raises. Every string in the verdict and every progress
message is redacted: a script may print its key anywhere.
"""

import os
import re
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from mint_migrate.dotenv import setting
from mint_migrate.endpoint import Endpoint
from mint_migrate.errors import MintMigrateError
from mint_migrate.pyparse import PythonSyntaxError, parse_ast
from mint_migrate.render import with_companion
from mint_migrate.smoke import scope
from mint_migrate.smoke.classify import FIX_URL, classify
from mint_migrate.smoke.metrics import RunOutput, number
from mint_migrate.smoke.redaction import redact, redact_model, visible_secrets
from mint_migrate.smoke.servers import local_server
from mint_migrate.smoke.verdict import LeftProcess, SmokeError, SmokeProgress, SmokeVerdict
from mint_migrate.workspace import PinnedScript, fenced, line_inside, pinned_script

LOCAL_API_KEY = "sk-mint-local-smoke"  # mint-local accepts any sk- key; this one is not a secret
LOG_TAIL_LINES = 60


class SmokeInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM turned into one) during a run, after everything it started was killed."""

    def __init__(self, verdict: SmokeVerdict):
        super().__init__("smoke run interrupted")
        self.verdict = verdict


class _Finished(Exception):
    """Raised while preparing a run that cannot start; carries the failure."""

    def __init__(self, error: SmokeError):
        self.error = error


def _accepts(source: str, flag: str) -> bool:
    return re.search(rf"""["']{re.escape(flag)}["']""", source) is not None


def _local_target(
    env: dict[str, str], model: str, device: str, verdict: SmokeVerdict, progress: Callable[[int, str], None]
) -> list[str]:
    """Start or reuse mint-local and point the script at it; the extra arguments for the script."""
    progress(0, f"starting mint-local ({model}, device {device})")
    try:
        server = local_server(model, device)
    except Exception as exc:
        raise _Finished(
            SmokeError(
                kind="server_start",
                message=f"mint-local did not start: {type(exc).__name__}: {exc}",
                fix="Install the backend (pip install 'mint-migrate[local]') or give a valid local model directory; "
                "`mint-local serve --model ...` shows the whole error.",
            )
        ) from exc
    verdict.base_url, verdict.model = server.base_url, server.model_name
    for name in ("TINKER_API_KEY", "TINKER_BASE_URL"):
        env.pop(name, None)
    env.update(
        MINT_BASE_URL=server.base_url,
        MINT_API_KEY=LOCAL_API_KEY,
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TINKER_TELEMETRY="0",  # the SDK would send it to mint-local, which has no use for it
    )
    # mint-local serves its own model whatever base model is asked for; say which one it is.
    return ["--base-model", server.model_name]


def _remote_target(script: Path, verdict: SmokeVerdict) -> None:
    """Check the user's own MINT_BASE_URL / MINT_API_KEY (environment or .env) before running."""
    api_key = setting("MINT_API_KEY", script)[0]
    base_url = setting("MINT_BASE_URL", script)[0]
    if not api_key:
        raise _Finished(
            SmokeError(
                kind="missing_credentials",
                message="target=remote needs MINT_API_KEY, and it is not set (environment or .env).",
                fix="Export MINT_API_KEY and MINT_BASE_URL, or smoke-run with target=local.",
            )
        )
    verdict.base_url = base_url
    if not base_url:
        return
    answer = Endpoint(base_url, api_key).probe()
    if answer.problem is not None:
        fix = {
            "connection": FIX_URL + " target=local needs neither a URL nor a key.",
            "auth": "Check MINT_API_KEY.",
            "wrong_server": "Point MINT_BASE_URL at the MinT API root, not a web page or another service.",
        }[answer.problem]
        raise _Finished(SmokeError(kind=answer.problem, message=answer.message + ".", fix=fix))


def _summarise(verdict: SmokeVerdict, output: RunOutput) -> None:
    """Fill the verdict's figures from what the script printed."""
    verdict.steps_done = len(output.steps)
    if output.steps:
        verdict.first_step = int(number(output.steps[0].get("step")) or 0)
        verdict.last_step = int(number(output.steps[-1].get("step")) or 0)
    losses = output.losses()
    if losses:
        verdict.loss_first, verdict.loss_last = losses[0], losses[-1]
    step_times = [v for v in (number(s.get("step_s")) for s in output.steps) if v is not None]
    if step_times:
        verdict.median_step_s = round(statistics.median(step_times), 4)
    if output.rl:
        verdict.accepted_groups = output.accepted_groups()
        verdict.trained_groups = output.trained_groups()
    if output.samples:
        verdict.sample_text = str(output.samples[-1].get("text", ""))
    if output.done is not None and output.done.get("checkpoint") not in (None, "None"):
        verdict.checkpoint = output.done["checkpoint"]
    if output.run is not None and output.run.get("served_model"):
        verdict.model = output.run["served_model"]
    _what_ran(verdict, output)


def _what_ran(verdict: SmokeVerdict, output: RunOutput) -> None:
    """Whose data and reward the run used (RUN data= data_rows= reward=), and what the reward returned
    (REWARD calls= distinct=): a reward that gives every answer the same value trains nothing."""
    run = output.run or {}
    if "data" not in run:
        return
    rows = number(run.get("data_rows"))
    verdict.data_rows = int(rows) if rows is not None else None
    builtin = run["data"] == "built-in"
    verdict.data_file = None if builtin else run["data"]
    parts = ["built-in examples" if builtin else f"your data ({verdict.data_rows} rows of {run['data']})"]
    if "reward" in run:
        verdict.reward = run["reward"]
        names, _, file = run["reward"].partition("@")
        parts.append("placeholder reward" if run["reward"] == "placeholder" else f"your reward ({names} from {file})")
    verdict.ran = ", ".join(parts)
    if output.reward is not None:
        calls, distinct = number(output.reward.get("calls")), number(output.reward.get("distinct"))
        verdict.reward_calls = int(calls) if calls is not None else None
        verdict.reward_distinct = int(distinct) if distinct is not None else None
        if verdict.reward not in (None, "placeholder") and verdict.reward_calls and verdict.reward_calls > 1 \
                and verdict.reward_distinct == 1:
            verdict.notes.append(
                f"Your reward returned the same value ({output.reward.get('min')}) for all {verdict.reward_calls} "
                "answers: it cannot tell them apart, so nothing would be learned. On the tiny smoke model an exact-"
                "match reward often does this (the run added a small smoke bonus to train anyway); check it "
                "scores a right answer above a wrong one (`python train.py --dry-run` calls it on the reference "
                "answers)."
            )


def run_smoke(
    script_path: Path,
    *,
    target: Literal["local", "remote"] = "local",
    steps: int = 2,
    timeout_s: float = 600,
    on_progress: Callable[[SmokeProgress], None] | None = None,
    model: str | None = None,
    device: str | None = None,
    cancel: threading.Event | None = None,
) -> SmokeVerdict:
    """Run the script for `steps` steps against `target` and judge it (see the module docstring).

    local: a mint-local server (started once per process and reused) serving `model` (default: env
    MINT_SMOKE_MODEL, else "tiny"; or a local HF model directory) on `device` (env MINT_SMOKE_DEVICE,
    else auto: CUDA when there is one). It serves any base model the script asks for with its own
    model, and the script gets --base-model <that model>. remote: the caller's MINT_BASE_URL and
    MINT_API_KEY (environment or .env). `cancel`, when set, stops the run and everything it started.
    Only a missing script raises (MintMigrateError); Ctrl-C raises SmokeInterrupted with the verdict.
    """
    started = time.monotonic()
    try:  # under an MCP tool's fence: the very folder and file checked, held open until the start
        pinned = pinned_script(script_path, sys.executable)
    except (FileNotFoundError, IsADirectoryError):
        shown = Path(script_path).expanduser()
        raise MintMigrateError(f"{shown} is not a file; give the path of the train.py to smoke-run.") from None
    try:
        return _run_pinned(pinned, target, steps, timeout_s, on_progress, model, device, cancel, started)
    finally:
        pinned.close()


def _run_pinned(
    pinned: PinnedScript,
    target: Literal["local", "remote"],
    steps: int,
    timeout_s: float,
    on_progress: Callable[[SmokeProgress], None] | None,
    model: str | None,
    device: str | None,
    cancel: threading.Event | None,
    started: float,
) -> SmokeVerdict:
    script = pinned.path
    verdict = SmokeVerdict(passed=False, target=target, script=str(script), steps_requested=steps)
    secrets = visible_secrets(script)  # the environment's, the .env files', our command line's

    def progress(step: int, message: str) -> None:
        if on_progress is None:
            return
        try:
            on_progress(SmokeProgress(step=step, total=steps, message=redact(message, secrets)))
        except Exception:  # noqa: BLE001 - a broken progress display must not sink the run
            pass

    def finish(errors: list[SmokeError]) -> SmokeVerdict:
        verdict.errors = errors
        verdict.passed = not errors
        scope.judge(verdict, pinned.source.decode("utf-8", errors="replace"))
        verdict.duration_s = round(time.monotonic() - started, 2)
        redact_model(verdict, secrets)
        return verdict

    source = pinned.source.decode("utf-8", errors="replace")
    try:
        parse_ast(source, script.name)
    except PythonSyntaxError as exc:
        verdict.log_tail = f'File "{script}", line {exc.line}\n{exc.message}'
        message = f"SyntaxError: {exc.message} ({script.name}:{exc.line})."
        return finish([SmokeError(kind="syntax_error", message=message, fix="Fix the syntax at that line.")])

    source = with_companion(script, source)  # the flags a mint-migrate train.py shares are in its mint_run.py
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    args: list[str] = []
    try:
        if target == "local":
            model = model or os.environ.get("MINT_SMOKE_MODEL") or "tiny"
            device = device or os.environ.get("MINT_SMOKE_DEVICE") or "auto"
            extra = _local_target(env, model, device, verdict, progress)
            if _accepts(source, "--base-model"):
                args += extra
        else:
            _remote_target(script, verdict)
    except _Finished as stop:
        return finish([stop.error])
    except KeyboardInterrupt:
        raise SmokeInterrupted(finish([_interrupted("while mint-local was starting")])) from None

    smoke_flags = _accepts(source, "--smoke") or _accepts(source, "--steps")
    if _accepts(source, "--smoke"):
        args.append("--smoke")
    if _accepts(source, "--steps"):
        args += ["--steps", str(steps)]
    if _accepts(source, "--log-dir"):  # keep the run's files out of the user's folder
        verdict.log_dir = tempfile.mkdtemp(prefix="mint-smoke-")
        args += ["--log-dir", verdict.log_dir]
    verdict.command = [sys.executable, str(script), *args]

    output = RunOutput()
    lines: list[str] = []

    def on_line(line: str) -> None:
        lines.append(line)
        fields = output.add(line)
        if fields is not None:
            shown = " ".join(f"{k}={fields[k]}" for k in ("loss", "step_s", "accepted") if k in fields)
            progress(len(output.steps), f"step {fields.get('step')}: {shown}".strip())

    from mint_local.process import Supervised

    interrupted = False
    proc = Supervised([*pinned.command, *args], cwd=pinned.cwd, env=env, name="smoke", pass_fds=pinned.pass_fds)
    pinned.close()  # the child holds its own copies
    try:
        for line in proc.lines(deadline=started + timeout_s, cancel=cancel):
            on_line(line)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        left = proc.stop()
    for line in proc.drained():
        on_line(line)
    lines[:] = _fence_tracebacks(lines, pinned)
    stopped_early = proc.timed_out or proc.cancelled or interrupted
    verdict.exit_code = None if stopped_early else proc.returncode
    verdict.left_running = [LeftProcess(pid=p.pid, command=p.command, survived=p.survived) for p in left]
    _summarise(verdict, output)
    verdict.log_tail = "\n".join(lines[-LOG_TAIL_LINES:])
    verdict.notes += _notes(verdict, smoke_flags, proc.timed_out)

    if interrupted or proc.cancelled:
        why = "by Ctrl-C" if interrupted else "because the caller went away"
        done = finish([_interrupted(why, len(output.steps))])
        if interrupted:
            raise SmokeInterrupted(done)
        return done
    errors = classify(
        "\n".join(lines),
        script=script,
        exit_code=verdict.exit_code,
        output=output,
        steps=steps,
        timed_out=proc.timed_out,
        timeout_s=timeout_s,
    )
    if not errors and output.done is None:
        errors.append(
            SmokeError(
                kind="no_metrics",
                message="The script ended without its last `METRIC done=1 steps=N` line.",
                fix="Print `METRIC done=1 steps=N checkpoint=PATH` when training ends, as every "
                "`mint-migrate scaffold` script does.",
            )
        )
    return finish(errors)


_FRAME = re.compile(r'^(\s*)File "([^"]+)", line (\d+)')
_HIDDEN_LINE = "[source line not shown: not read from inside the workspace]"


def _fence_tracebacks(lines: list[str], pinned: PinnedScript) -> list[str]:
    """Under an MCP tool's fence, the source lines of the script's tracebacks as far as they are
    the workspace's own. Python prints them by re-reading each file BY NAME when the traceback is
    printed: a name inside the workspace swapped for a link (or a module imported from elsewhere)
    shows lines of a file outside it. So a shown line stays only if it equals that line of the
    script that ran (pinned) or of the file read through the fence now; else it is replaced."""
    if not fenced():
        return lines
    script_lines = pinned.source.decode("utf-8", errors="replace").splitlines()
    script_names = {str(pinned.path), os.path.realpath(pinned.path)}
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        frame = _FRAME.match(line)
        if frame is None or i >= len(lines):
            continue
        source, indent = lines[i], len(frame.group(1))
        if not source.strip() or _FRAME.match(source) or len(source) - len(source.lstrip()) <= indent:
            continue  # no source line printed for this frame
        i += 1
        carets = []
        while i < len(lines) and lines[i].strip() and set(lines[i].strip()) <= set("^~"):
            carets.append(lines[i])
            i += 1
        path, number = frame.group(2), int(frame.group(3))
        if path in script_names:
            true = script_lines[number - 1] if 0 < number <= len(script_lines) else None
        else:
            true = line_inside(path, number)
        if true is not None and true.strip() == source.strip():
            out += [source, *carets]
        else:
            out.append(" " * (indent + 2) + _HIDDEN_LINE)
    return out


def _interrupted(why: str, steps_done: int = 0) -> SmokeError:
    return SmokeError(
        kind="interrupted",
        message=f"The run was stopped {why} ({steps_done} step(s) done); the script and everything it "
        "started were killed.",
        fix="Run it again and let it finish.",
    )


def _notes(verdict: SmokeVerdict, smoke_flags: bool, timed_out: bool) -> list[str]:
    """What the verdict should say about how the script was run and what it left behind."""
    notes = []
    if not smoke_flags:
        if timed_out:
            notes.append("The script takes neither --smoke nor --steps, so it ran in full until the timeout.")
        else:
            ended = "" if verdict.exit_code is None else f" and exited with code {verdict.exit_code}"
            notes.append(f"The script takes neither --smoke nor --steps, so it ran as it is{ended}.")
    if verdict.left_running:
        shown = "; ".join(f"pid {p.pid}: {p.command[:120]}" for p in verdict.left_running[:5])
        notes.append(
            f"{len(verdict.left_running)} process(es) the script started were still running when the run ended, "
            f"and were killed: {shown}."
        )
    if survivors := [p.pid for p in verdict.left_running if p.survived]:
        notes.append(f"Process(es) {', '.join(map(str, survivors))} survived even SIGKILL: end them yourself "
                     "(`kill -9 PID`, or as the user that owns them).")
    return notes
