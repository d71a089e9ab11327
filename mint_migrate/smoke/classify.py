"""Failure classification: a run's output -> the errors it shows, each with the fix a person can act on.

Patterns match what the pinned SDK (tinker 0.22.0 through mindlab-toolkit 0.2.0), the scaffolds'
own checks and Python itself print; the fixes never point at files the user does not have.
"""

import math
import re
from pathlib import Path

from mint_migrate.smoke.metrics import RunOutput, number
from mint_migrate.smoke.verdict import SmokeError

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

    nonfinite = [s for s in output.steps if (v := number(s.get("loss"))) is not None and not math.isfinite(v)]
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
                "Print `METRIC step=N loss=... tokens=... step_s=...` once per step, as every "
                "`mint-migrate scaffold` script does.",
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
