"""Smoke run: run a train.py for a few steps against mint-local (or a real MinT) and judge it.

The script runs as `python SCRIPT --smoke --steps N` in its own process group (so a timeout kills
everything it started), with MINT_BASE_URL / MINT_API_KEY pointing at the target. Its stdout is
read line by line: `METRIC step=...` lines drive progress and the verdict (DESIGN.md), `SAMPLE`
lines give a sampled text, `RUN served_model=...` names the model that really ran. Whatever the
script does, the result is a SmokeVerdict: a broken script is a failed verdict whose errors say
what went wrong and how to fix it, never an exception. No API key ever appears in a verdict.
"""

import atexit
import contextlib
import json
import math
import os
import queue
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from mcp_server.errors import MintMigrateError

LOCAL_API_KEY = "sk-mint-local-smoke"  # mint-local accepts any sk- key; this one is not a secret
LOG_TAIL_LINES = 60

ErrorKind = Literal[
    "syntax_error",
    "import_error",
    "missing_credentials",
    "connection",
    "wrong_server",
    "auth",
    "sk_key_bug",
    "weights_info_404",
    "missing_result",
    "sdk_attribute",
    "reward_function",
    "bad_arguments",
    "server_error",
    "non_finite_loss",
    "nothing_trained",
    "too_few_steps",
    "no_metrics",
    "timeout",
    "server_start",
    "crashed_at_exit",
    "script_error",
    "parity",
]


class SmokeProgress(BaseModel):
    step: int
    total: int
    message: str


class SmokeError(BaseModel):
    """One classified failure: what kind, what happened, and what to do about it."""

    kind: ErrorKind
    message: str
    fix: str


class SmokeVerdict(BaseModel):
    passed: bool
    target: Literal["local", "remote"]
    model: str | None = Field(default=None, description="The model that really ran (the server's, on local).")
    script: str = ""
    steps_requested: int = 0
    steps_done: int = 0
    first_step: int | None = None
    last_step: int | None = None
    loss_first: float | None = None
    loss_last: float | None = None
    median_step_s: float | None = None
    accepted_groups: int | None = Field(default=None, description="RL: groups whose rewards differed, all steps.")
    trained_groups: int | None = Field(default=None, description="RL: groups sent to forward_backward, all steps.")
    sample_text: str | None = Field(default=None, description="RL scripts: one sampled text, the last reported.")
    ran: str | None = Field(
        default=None,
        description="What the run trained on and scored with, from its RUN line: 'your data (32 rows of "
        "train.parquet), your reward (compute_score from gsm8k.py)' or 'built-in examples, placeholder reward'.",
    )
    data_rows: int | None = Field(default=None, description="Rows the run loaded (the first rows under --smoke).")
    data_file: str | None = Field(default=None, description="The data file it read; None: the built-in examples.")
    reward: str | None = Field(default=None, description="RL: the reward functions that ran, or 'placeholder'.")
    reward_calls: int | None = Field(default=None, description="RL: answers the reward scored (REWARD line).")
    reward_distinct: int | None = Field(default=None, description="RL: distinct values it returned.")
    checkpoint: str | None = None
    exit_code: int | None = None
    duration_s: float = 0.0
    base_url: str | None = None
    log_dir: str | None = Field(default=None, description="Where the script wrote metrics.jsonl, if it took --log-dir.")
    command: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    errors: list[SmokeError] = Field(default_factory=list)
    log_tail: str = ""


# --- secrets -------------------------------------------------------------------------------------

_API_KEY = re.compile(r"\b(?:sk|tml)-[A-Za-z0-9_\-]{6,}")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9_\-.=]{8,}")


def redact(text: str, secrets: list[str] | tuple[str, ...] = ()) -> str:
    """`text` with the given secrets, and anything that looks like an API key or token, as ***."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    text = _API_KEY.sub("***", text)
    text = _JWT.sub("***", text)
    return _BEARER.sub(r"\1***", text)


# --- output parsing ------------------------------------------------------------------------------

_FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


def parse_fields(text: str) -> dict[str, str]:
    """`a=1 b=x text="..."` -> {"a": "1", "b": "x", "text": "..."} (quoted values JSON-decoded)."""
    fields = {}
    for key, value in _FIELD.findall(text):
        if value.startswith('"'):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                value = value[1:-1]
        fields[key] = value
    return fields


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None


class RunOutput(BaseModel):
    """What a script's stdout said, line by line."""

    steps: list[dict[str, str]] = Field(default_factory=list)
    done: dict[str, str] | None = None
    samples: list[dict[str, str]] = Field(default_factory=list)
    run: dict[str, str] | None = None
    reward: dict[str, str] | None = None

    def add(self, line: str) -> dict[str, str] | None:
        """Record one line; returns the fields of a METRIC step line (for progress)."""
        tag, _, rest = line.strip().partition(" ")
        if tag == "METRIC":
            fields = parse_fields(rest)
            if "done" in fields:
                self.done = fields
            elif "step" in fields:
                self.steps.append(fields)
                return fields
        elif tag == "SAMPLE":
            self.samples.append(parse_fields(rest))
        elif tag == "RUN":
            self.run = parse_fields(rest)
        elif tag == "REWARD":
            self.reward = parse_fields(rest)
        return None

    def losses(self) -> list[float]:
        return [v for v in (_number(s.get("loss")) for s in self.steps) if v is not None]

    @property
    def rl(self) -> bool:
        """RL scripts report accepted/trained groups on their METRIC lines."""
        return any("accepted" in s for s in self.steps)

    def accepted_groups(self) -> int:
        return int(sum(_number(s.get("accepted")) or 0 for s in self.steps))

    def trained_groups(self) -> int:
        return int(sum(_number(s.get("trained", s.get("accepted"))) or 0 for s in self.steps))


# --- failure classification ----------------------------------------------------------------------

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_EXCEPTION_LINE = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception|Exit|Interrupt)|KeyError|StopIteration)\b.*$")


def _last_exception(text: str) -> str | None:
    """The final `SomeError: message` line of the last traceback in `text`."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    if not starts:
        return None
    found = None
    for line in lines[starts[-1] + 1 :]:
        if not line.startswith(" ") and _EXCEPTION_LINE.match(line.strip()):
            found = line.strip()
    return found


def _script_frames(text: str, script: Path) -> list[tuple[str, int, str]]:
    """Traceback frames (file, line, function) inside the script itself."""
    return [(f, int(n), fn) for f, n, fn in _FRAME.findall(text) if Path(f).name == script.name]


_PIP_FOR = {
    "mint": "pip install mindlab-toolkit==0.2.0 (it pins tinker==0.22.0)",
    "tinker": "pip install mindlab-toolkit==0.2.0 (it pins tinker==0.22.0)",
    "torch": "pip install torch (CPU only: pip install torch --index-url https://download.pytorch.org/whl/cpu)",
    "transformers": "pip install transformers",
}

FIX_FUTURE = (
    "Training calls return futures: add .result() (sync), or await twice for *_async calls "
    "(fut = await tc.forward_backward_async(...); out = await fut). sample() returns a concurrent Future "
    "(.result()); sample_async needs one await."
)
FIX_SK_KEY = (
    "The PyPI mindlab-toolkit 0.2.0 patches only part of tinker's key check. Install mindlab-toolkit from its "
    "GitHub source (fixed there), or patch tinker's ApiKeyAuthProvider as `mint-migrate preflight` explains; "
    "`import mint` must run before any tinker import."
)
FIX_RESUME = (
    "Resume with a fresh service_client.create_lora_training_client(base_model=..., rank=<same rank>), then "
    "training_client.load_state_with_optimizer(path).result()."
)
FIX_URL = "Check MINT_BASE_URL: the MinT API root (e.g. https://mint.macaron.xin), not a web page or another service."

# (kind, pattern, message template, fix). The message template may use {0}, {1}, ... for the
# pattern's groups and {where} for the script line the traceback points at.
PATTERN_RULES: list[tuple[str, re.Pattern, str, str]] = [
    (
        "syntax_error",
        re.compile(r"(SyntaxError|IndentationError|TabError): (.*)"),
        "{0}: {1}",
        "Fix the syntax at the line shown; `python -m py_compile SCRIPT` checks it.",
    ),
    (
        "import_error",
        re.compile(r"\bImportError: (.*)"),
        "ImportError: {0}",
        "Check the versions: mindlab-toolkit==0.2.0 with tinker==0.22.0; names from newer tinker releases are missing.",
    ),
    (
        "sk_key_bug",
        re.compile(r"must start with the 'tml-' prefix"),
        "tinker rejected the sk- key (\"The api_key must start with the 'tml-' prefix\").",
        FIX_SK_KEY,
    ),
    (
        "weights_info_404",
        re.compile(r"(?:weights_info|create_training_client_from_state)(?s:.*)(?:\b404\b|NotFound)"),
        "create_training_client_from_state* asked /api/v1/weights_info, which MinT does not serve (404).",
        FIX_RESUME,
    ),
    (
        "missing_result",
        re.compile(
            r"'(APIFuture|_APIFuture|_CombinedAPIFuture|AwaitableConcurrentFuture|Future|coroutine)' object "
            r"(has no attribute '?\w+'?|is not subscriptable|is not iterable)"
        ),
        "A future was used as its result: '{0}' object {1}{where}.",
        FIX_FUTURE,
    ),
    (
        "missing_result",
        re.compile(r"coroutine '([\w.]+)' was never awaited"),
        "coroutine {0} was never awaited{where}.",
        FIX_FUTURE,
    ),
    (
        "sdk_attribute",
        re.compile(r"'ForwardBackwardOutput' object has no attribute 'loss'"),
        "ForwardBackwardOutput has no .loss in tinker 0.22.0{where}.",
        'Use result.metrics["loss:sum"].',
    ),
    (
        "sdk_attribute",
        re.compile(r"'SampleResponse' object has no attribute 'samples'"),
        "SampleResponse has no .samples{where}.",
        "Use response.sequences.",
    ),
    (
        "missing_credentials",
        re.compile(r"MINT_API_KEY is not set"),
        "MINT_API_KEY is not set.",
        "Export MINT_API_KEY (or put it in .env), or smoke-run with target=local.",
    ),
    (
        "connection",
        re.compile(r"Cannot reach MINT_BASE_URL=(\S+) \(([^)]*)\)"),
        "Nothing answered at {0}: {1}.",
        FIX_URL + " Is the server up?",
    ),
    (
        "connection",
        re.compile(r"(Connection refused|APIConnectionError|ConnectError|Name or service not known)"),
        "Nothing answered at MINT_BASE_URL: {0}.",
        FIX_URL + " Is the server up?",
    ),
    (
        "wrong_server",
        re.compile(r"MINT_BASE_URL=(\S+) does not answer like a MinT server \(([^)]*)\)"),
        "{0} is not a MinT server: {1}.",
        FIX_URL,
    ),
    (
        "auth",
        re.compile(r"rejected MINT_API_KEY \(HTTP (\d+)\)|(AuthenticationError|PermissionDeniedError)"),
        "The server rejected the API key.",
        "Check MINT_API_KEY (MinT keys start with sk-).",
    ),
    (
        "bad_arguments",
        re.compile(r"error: (unrecognized arguments: .*)"),
        "{0}",
        "A smoke run calls `python SCRIPT --smoke --steps N`: give the script those flags (every scaffold has them).",
    ),
    (
        "server_error",
        re.compile(r"\b(BadRequestError|UnprocessableEntityError|NotFoundError|InternalServerError): (.{0,300})"),
        "{0}: {1}",
        "The server refused a request; its message names the input that is wrong.",
    ),
]


def classify(
    text: str,
    *,
    script: Path,
    exit_code: int | None,
    output: RunOutput,
    steps: int,
    timed_out: bool,
    timeout_s: float,
) -> list[SmokeError]:
    """The failures a run's output shows, each with its fix; empty when the run is clean."""
    errors: list[SmokeError] = []

    def add(kind: str, message: str, fix: str) -> None:
        if all(e.kind != kind for e in errors):
            errors.append(SmokeError(kind=kind, message=message, fix=fix))

    exception = _last_exception(text)
    frames = _script_frames(text, script)
    where = f" ({script.name}:{frames[-1][1]} in {frames[-1][2]})" if frames else ""

    if m := re.search(r"ModuleNotFoundError: No module named '([\w.]+)'", text):
        top = m.group(1).split(".")[0]
        fix = _PIP_FOR.get(top, f"pip install {top}") + " (in the Python that runs the script)"
        add("import_error", f"No module named {m.group(1)!r}", fix)
    reward_frames = [f for f in frames if re.search(r"reward|score", f[2], re.I)]
    if reward_frames and exception:
        _, line, function = reward_frames[-1]
        add(
            "reward_function",
            f"The reward function raised {exception} ({script.name}:{line} in {function}).",
            "Fix the reward function; `python SCRIPT --dry-run` runs it on the reference answers, no server needed.",
        )
    for kind, pattern, message, fix in PATTERN_RULES:
        if kind == "server_error" and any(e.kind == "weights_info_404" for e in errors):
            continue
        if m := pattern.search(text):
            add(kind, message.format(*(g or "" for g in m.groups()), where=where), fix)

    nonfinite = [s for s in output.steps if (v := _number(s.get("loss"))) is not None and not math.isfinite(v)]
    if nonfinite:
        add(
            "non_finite_loss",
            f"loss={nonfinite[0].get('loss')} at step {nonfinite[0].get('step')}.",
            "Lower the learning rate; look for a division by zero in weights or advantages (e.g. by a zero std); "
            "check the token alignment (input = tokens[:-1], target = tokens[1:]).",
        )
    if timed_out:
        add(
            "timeout",
            f"Still running after {timeout_s:g} s, so it was killed with everything it started "
            f"({len(output.steps)} step(s) done).",
            "Raise timeout_s, or make --smoke smaller (tiny batches, short generations).",
        )
    if exit_code == 0 and not timed_out:
        if not output.steps:
            add(
                "no_metrics",
                "The script exited 0 without one `METRIC step=...` line.",
                "Print `METRIC step=N loss=... tokens=... step_s=...` once per step (DESIGN.md); scaffolds do.",
            )
        elif len(output.steps) < steps:
            add("too_few_steps", f"{len(output.steps)} of {steps} steps ran.", "Make the script honour --steps N.")
        if output.rl and output.trained_groups() == 0:
            add(
                "nothing_trained",
                f"No group was trained on in {len(output.steps)} step(s): each group's rewards were all equal.",
                "Make rewards differ within groups: partial credit, a larger --group-size or a higher temperature.",
            )
    if exit_code is not None and exit_code < 0 and output.done is not None and not timed_out and not errors:
        add(
            "crashed_at_exit",
            f"The run finished (its `METRIC done=1` line was printed) and then died by signal {-exit_code} "
            "while the interpreter shut down.",
            "The SDK's native HTTP transport (pyqwest) can abort interpreter teardown while a background request "
            "is in flight (curioswitch/pyqwest#164). End the script with `sys.stdout.flush(); os._exit(0)` after "
            "main() returns, as the scaffolds do.",
        )
    if exit_code not in (0, None) and not timed_out and not errors:
        last_line = next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")
        add(
            "script_error",
            (exception or last_line or f"exited with code {exit_code}") + where,
            "Read the log tail: the traceback or message there says what failed.",
        )
    return errors


# --- local server --------------------------------------------------------------------------------

_SERVERS: dict[tuple[str, str], object] = {}
_SERVERS_LOCK = threading.Lock()


def _alive(server) -> bool:
    return server.proc.poll() is None


def local_server(model: str = "tiny", device: str = "auto"):
    """A running mint-local for (model, device): the one this process started before, or a new one.

    Started servers stay up for the rest of the process (an MCP session runs many smoke runs)
    and are stopped at exit.
    """
    from mint_local.launcher import LocalServer

    key = (model, device)
    with _SERVERS_LOCK:
        server = _SERVERS.get(key)
        if server is not None and _alive(server):
            return server
        if server is not None:
            server.stop()
        # hosted_parity: a script that only works against tinker (not MinT) must fail here too.
        server = LocalServer.start(model=model, device=device, serve_any_model=True, hosted_parity=True, timeout_s=180)
        if not _SERVERS:
            atexit.register(stop_local_servers)
        _SERVERS[key] = server
        return server


def stop_local_servers() -> None:
    with _SERVERS_LOCK:
        for server in _SERVERS.values():
            with contextlib.suppress(Exception):  # best effort at exit
                server.stop()
        _SERVERS.clear()


# --- remote target -------------------------------------------------------------------------------


def _dotenv_value(key: str, script: Path) -> str | None:
    for path in (Path.cwd() / ".env", script.parent / ".env"):
        if path.is_file():
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                name, sep, value = line.strip().removeprefix("export ").partition("=")
                if sep and name.strip() == key:
                    return value.strip().strip("'\"")
    return None


def probe_endpoint(base_url: str, api_key: str) -> SmokeError | None:
    """A quick look at the target before running anything: the SDK retries a dead URL for minutes."""
    import httpx

    url = base_url.rstrip("/") + "/api/v1/client/config"
    try:
        response = httpx.post(url, json={"sdk_version": "0.22.0"}, headers={"X-API-Key": api_key}, timeout=20)
    except httpx.HTTPError as exc:
        return SmokeError(
            kind="connection",
            message=f"Nothing answered at {base_url}: {type(exc).__name__}: {exc}.",
            fix=FIX_URL + " target=local needs neither a URL nor a key.",
        )
    if response.status_code in (401, 403):
        return SmokeError(
            kind="auth",
            message=f"{base_url} rejected MINT_API_KEY (HTTP {response.status_code}).",
            fix="Check MINT_API_KEY.",
        )
    if response.status_code >= 400 or "json" not in response.headers.get("content-type", ""):
        return SmokeError(
            kind="wrong_server",
            message=f"{base_url} is not a MinT server: POST /api/v1/client/config gave HTTP {response.status_code}.",
            fix="Point MINT_BASE_URL at the MinT API root, not a web page or another service.",
        )
    return None


# --- the run -------------------------------------------------------------------------------------


def _accepts(source: str, flag: str) -> bool:
    return re.search(rf"""["']{re.escape(flag)}["']""", source) is not None


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL, to the script and everything it started (its own process group)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            continue


class _Finished(Exception):
    """Raised while preparing a run that cannot start; carries the failure."""

    def __init__(self, error: SmokeError):
        self.error = error


def _local_target(
    env: dict[str, str], model: str, device: str, verdict: SmokeVerdict, progress: Callable[[int, str], None]
) -> list[str]:
    """Start or reuse mint-local and point the script at it; the extra arguments for the script."""
    progress(0, f"starting mint-local ({model}, device {device})")
    try:
        server = local_server(model, device)
    except Exception as exc:  # noqa: BLE001 - any launcher failure is a failed verdict
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
    env.update(MINT_BASE_URL=server.base_url, MINT_API_KEY=LOCAL_API_KEY, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    # mint-local serves its own model whatever base model is asked for; say which one it is.
    return ["--base-model", server.model_name]


def _remote_target(script: Path, verdict: SmokeVerdict, secrets: list[str]) -> None:
    """Check the user's own MINT_BASE_URL / MINT_API_KEY (environment or .env) before running."""
    api_key = os.environ.get("MINT_API_KEY") or _dotenv_value("MINT_API_KEY", script)
    base_url = os.environ.get("MINT_BASE_URL") or _dotenv_value("MINT_BASE_URL", script)
    if not api_key:
        raise _Finished(
            SmokeError(
                kind="missing_credentials",
                message="target=remote needs MINT_API_KEY, and it is not set (environment or .env).",
                fix="Export MINT_API_KEY and MINT_BASE_URL, or smoke-run with target=local.",
            )
        )
    secrets.append(api_key)
    verdict.base_url = base_url
    if base_url and (problem := probe_endpoint(base_url, api_key)):
        problem.message = redact(problem.message, secrets)
        raise _Finished(problem)


def _run_process(
    command: list[str], cwd: Path, env: dict[str, str], deadline: float, on_line: Callable[[str], None]
) -> tuple[int | None, bool]:
    """Run `command` in its own process group, feeding each output line to on_line.

    Returns (exit code, timed out). On the deadline the whole group is killed.
    """
    proc = subprocess.Popen(
        command,
        cwd=str(cwd),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        errors="replace",
        start_new_session=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    reader = threading.Thread(target=pump, name="smoke-output", daemon=True)
    reader.start()
    timed_out = False
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            _kill_group(proc)
            break
        try:
            line = lines.get(timeout=min(remaining, 1.0))
        except queue.Empty:
            continue
        if line is None:
            break
        on_line(line)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
    reader.join(timeout=5)
    while not lines.empty():  # what arrived between the kill and the end of the output
        if (line := lines.get_nowait()) is not None:
            on_line(line)
    return (None if timed_out else proc.returncode), timed_out


def _summarise(verdict: SmokeVerdict, output: RunOutput, secrets: list[str]) -> None:
    """Fill the verdict's figures from what the script printed."""
    verdict.steps_done = len(output.steps)
    if output.steps:
        verdict.first_step = int(_number(output.steps[0].get("step")) or 0)
        verdict.last_step = int(_number(output.steps[-1].get("step")) or 0)
    losses = output.losses()
    if losses:
        verdict.loss_first, verdict.loss_last = losses[0], losses[-1]
    step_times = [v for v in (_number(s.get("step_s")) for s in output.steps) if v is not None]
    if step_times:
        verdict.median_step_s = round(statistics.median(step_times), 4)
    if output.rl:
        verdict.accepted_groups = output.accepted_groups()
        verdict.trained_groups = output.trained_groups()
    if output.samples:
        verdict.sample_text = redact(str(output.samples[-1].get("text", "")), secrets)
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
    rows = _number(run.get("data_rows"))
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
        calls, distinct = _number(output.reward.get("calls")), _number(output.reward.get("distinct"))
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
) -> SmokeVerdict:
    """Run the script for `steps` steps against `target` and judge it (see the module docstring).

    local: a mint-local server (started once per process and reused) serving `model` (default: env
    MINT_SMOKE_MODEL, else "tiny"; or a local HF model directory) on `device` (env MINT_SMOKE_DEVICE,
    else auto: CUDA when there is one). It serves any base model the script asks for with its own
    model, and the script gets --base-model <that model>. remote: the caller's MINT_BASE_URL and
    MINT_API_KEY. Only a missing script raises (MintMigrateError); every other problem is a verdict.
    """
    started = time.monotonic()
    script = Path(script_path).expanduser().resolve()
    if not script.is_file():
        raise MintMigrateError(f"{script} is not a file; give the path of the train.py to smoke-run.")
    verdict = SmokeVerdict(passed=False, target=target, script=str(script), steps_requested=steps)
    secrets: list[str] = []

    def progress(step: int, message: str) -> None:
        if on_progress is None:
            return
        try:
            on_progress(SmokeProgress(step=step, total=steps, message=message))
        except Exception:  # noqa: BLE001 - a broken progress display must not sink the run
            pass

    def finish(errors: list[SmokeError]) -> SmokeVerdict:
        verdict.errors = errors
        verdict.passed = not errors
        verdict.duration_s = round(time.monotonic() - started, 2)
        return verdict

    source = script.read_text(encoding="utf-8", errors="replace")
    try:
        compile(source, str(script), "exec")
    except SyntaxError as exc:
        verdict.log_tail = f'File "{script}", line {exc.lineno}\n{(exc.text or "").rstrip()}\n{exc.msg}'
        message = f"{type(exc).__name__}: {exc.msg} ({script.name}:{exc.lineno})."
        return finish([SmokeError(kind="syntax_error", message=message, fix="Fix the syntax at that line.")])

    env = dict(os.environ, PYTHONUNBUFFERED="1")
    args = [str(script)]
    try:
        if target == "local":
            model = model or os.environ.get("MINT_SMOKE_MODEL") or "tiny"
            device = device or os.environ.get("MINT_SMOKE_DEVICE") or "auto"
            extra = _local_target(env, model, device, verdict, progress)
            if _accepts(source, "--base-model"):
                args += extra
        else:
            _remote_target(script, verdict, secrets)
    except _Finished as stop:
        return finish([stop.error])

    if _accepts(source, "--smoke"):
        args.append("--smoke")
    if _accepts(source, "--steps"):
        args += ["--steps", str(steps)]
    if not (_accepts(source, "--smoke") or _accepts(source, "--steps")):
        verdict.notes.append("The script takes neither --smoke nor --steps; it ran as it is, until the timeout.")
    if _accepts(source, "--log-dir"):  # keep the run's files out of the user's folder
        verdict.log_dir = tempfile.mkdtemp(prefix="mint-smoke-")
        args += ["--log-dir", verdict.log_dir]
    verdict.command = [redact(part, secrets) for part in (sys.executable, *args)]

    output = RunOutput()
    lines: list[str] = []

    def on_line(line: str) -> None:
        lines.append(line)
        fields = output.add(line)
        if fields is not None:
            shown = " ".join(f"{k}={fields[k]}" for k in ("loss", "step_s", "accepted") if k in fields)
            progress(len(output.steps), f"step {fields.get('step')}: {shown}".strip())

    exit_code, timed_out = _run_process([sys.executable, *args], script.parent, env, started + timeout_s, on_line)
    verdict.exit_code = exit_code
    _summarise(verdict, output, secrets)
    verdict.log_tail = redact("\n".join(lines[-LOG_TAIL_LINES:]), secrets)
    text = "\n".join(lines)
    errors = classify(
        text, script=script, exit_code=exit_code, output=output, steps=steps, timed_out=timed_out, timeout_s=timeout_s
    )
    if not errors and output.done is None:
        errors.append(
            SmokeError(
                kind="no_metrics",
                message="The script ended without its last `METRIC done=1 steps=N` line.",
                fix="Print `METRIC done=1 steps=N checkpoint=PATH` when training ends (DESIGN.md).",
            )
        )
    for error in errors:
        error.message = redact(error.message, secrets)
    return finish(errors)


def format_verdict(verdict: SmokeVerdict) -> str:
    """The verdict for a person at a shell."""
    head = "PASSED" if verdict.passed else "FAILED"
    lines = [f"smoke run {head}: {verdict.script} on {verdict.target} ({verdict.model or 'model unknown'})"]
    lines.append(
        f"  steps        {verdict.steps_done}/{verdict.steps_requested}"
        + (f" (steps {verdict.first_step}..{verdict.last_step})" if verdict.first_step is not None else "")
    )
    if verdict.loss_first is not None:
        lines.append(f"  loss         {verdict.loss_first:.4g} -> {verdict.loss_last:.4g}")
    if verdict.median_step_s is not None:
        lines.append(f"  step time    {verdict.median_step_s:.3g} s (median)")
    if verdict.accepted_groups is not None:
        lines.append(f"  groups       {verdict.accepted_groups} accepted, {verdict.trained_groups} trained")
    if verdict.ran is not None:
        lines.append(f"  ran          {verdict.ran}")
    if verdict.reward_calls is not None:
        lines.append(f"  reward       {verdict.reward_calls} answers scored, {verdict.reward_distinct} distinct value(s)")
    if verdict.sample_text is not None:
        lines.append(f"  sample       {json.dumps(verdict.sample_text[:200])}")
    if verdict.checkpoint:
        lines.append(f"  checkpoint   {verdict.checkpoint}")
    lines.append(f"  took         {verdict.duration_s:.1f} s")
    for note in verdict.notes:
        lines.append(f"  note: {note}")
    for error in verdict.errors:
        lines += [f"  error [{error.kind}] {error.message}", f"    fix: {error.fix}"]
    if not verdict.passed and verdict.log_tail:
        lines += ["  log tail:"] + ["    " + line for line in verdict.log_tail.splitlines()[-25:]]
    return "\n".join(lines)
