"""Issue 14's probe, re-runnable: crashes, orphans, escapes and leaks, counted on the real code.

    .venv/bin/python bench/probe_reliability.py [--sources 500] [--seed 14] [--only crashes,orphans,escapes,leaks]

crashes  ~500 sources (the shapes that crashed: 2000-deep parens, a NUL in a string literal, 5000
         unclosed `[`, ...; then seeded mutations of our fixtures) through `lint --json` and
         `migrate --json`: the CLI's own main() in batch workers (a worker killed by a signal is a
         crash of the source it was on, and it is restarted after it), the issue's shapes also
         through the installed `mint-migrate` binary, and through the MCP server's lint_script over
         stdio. A crash: a signal (exit >= 128), an uncaught exception, or stdout that is not JSON.
orphans  `mint-migrate smoke` and the MCP server with scripts that leave children behind (one in a
         session of its own, a double-forked daemon, a background child, one holding stdout open)
         and interrupted (SIGINT to the CLI and to its process group, SIGTERM, the MCP client going
         away, SIGTERM to the server): processes carrying the run's mark, counted in /proc after.
escapes  through a real MCP client: a hard link to an outside file under scaffold_train_py
         (overwrite), 300 writes into a folder a racer swaps for a link, 240 reads/migrations/smoke
         launches of paths a racer swaps, and the plain outside paths.
leaks    a script prints the user's key (from .env) and a key-shaped string into every line the
         verdict reads: CLI JSON, CLI text, the MCP result and its progress notifications.
mint-local  a real mint-local (issue 26, round two): optim_step at lr 1e20/1e30/1e37/inf/NaN (then
         a forward and a sample must be finite), temperatures 1e-45..1e-7, deep JSON and
         negative/absurd tensor shapes, topk_prompt_logprobs on 8,000 tokens x 2,000, interpolate
         with 4,000 sources, a session-less sample abandoned by its client, a 64 x 2,000-token
         sample against a 15 s time budget, and overwrites killed mid-way whose server restarts
         as PID 1 of a new PID namespace (the same PID); the server's peak RSS per case.
tool     (issue 26, tool side; --only tool) FIFOs, sockets and /dev/zero named to lint, migrate and
         preflight (CLI and stdio MCP, where map_concept must still answer), YAML alias bombs,
         recursive aliases and deep nesting, power towers (Python and bash), --out onto a file,
         an empty script and a folder to preflight, each with its time and peak memory; smoke runs
         whose daemons clear their environment and leave the group, finished, Ctrl-C'd once, twice
         and three times (temporary files left count as leaks); keys glued to words, HF_TOKEN,
         WANDB_API_KEY and URL keys in every output.

Every count should be 0. The helpers are the tests' (tests/probes.py), so the probe and the tests
exercise the same thing.
"""

import argparse
import collections
import contextlib
import json
import logging
import os
import platform
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402
from probes import (  # noqa: E402
    HOSTILE,
    LEAKY_SCRIPT,
    MARKER,
    SENTINEL,
    gone,
    leaked,
    marked,
    mcp_run_then,
    race_places,
    race_reads,
    racing,
    wait_for,
    with_default_sigint,
    write_daemon_script,
    write_script,
)

CLI = str(Path(sys.executable).parent / "mint-migrate")
SECRET_TEXT = "outside-the-workspace: do not write me\n"
ISSUE_SHAPES = ["deep-parens", "nul-in-string", "unclosed-brackets", "lambda-chain", "deep-lists"]


# --- crashes -------------------------------------------------------------------------------------


def mutate(text: str, rng: random.Random) -> str:
    """One or a few random edits of the kinds hostile or clumsy input has."""
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(text) + 1)
        match rng.randrange(8):
            case 0:  # cut a span
                text = text[:at] + text[at + rng.randint(1, 200) :]
            case 1:  # repeat a span
                text = text[:at] + text[at : at + rng.randint(1, 200)] * rng.randint(2, 50) + text[at:]
            case 2:  # stray tokens
                text = text[:at] + "".join(rng.choice("([{}])'\":\\\x00\t#@=,.*") for _ in range(rng.randint(1, 20))) + text[at:]
            case 3:  # deep nesting
                depth = rng.choice([100, 500, 1000, 2000, 5000])
                opener = rng.choice("([{")
                closer = {"(": ")", "[": "]", "{": "}"}[opener] if rng.random() < 0.5 else ""
                text = text[:at] + opener * depth + "1" + closer * depth + text[at:]
            case 4:  # a NUL inside the first string literal after `at`
                quote = text.find('"', at)
                if quote >= 0:
                    text = text[: quote + 1] + "\x00" + text[quote + 1 :]
            case 5:  # truncate
                text = text[:at]
            case 6:  # shift a line's indentation
                lines = text.split("\n")
                i = rng.randrange(len(lines))
                lines[i] = " " * rng.randint(1, 9) + lines[i]
                text = "\n".join(lines)
            case 7:  # bytes that are not UTF-8 in a str: a lone surrogate escapes on write
                text = text[:at] + rng.choice(["\udcff", "\ufeff", "\u2028", "\r"]) + text[at:]
    return text


def corpus(n: int, seed: int, folder: Path) -> list[Path]:
    rng = random.Random(seed)
    bases = sorted(p for d in ("tests/fixtures", "examples", "tests/lint_corpus") for p in (ROOT / d).rglob("*.py"))
    sources = [HOSTILE[name] for name in sorted(HOSTILE)]
    while len(sources) < n:
        sources.append(mutate(rng.choice(bases).read_text(encoding="utf-8"), rng))
    paths = []
    for i, text in enumerate(sources):
        path = folder / f"s{i:04d}" / "train.py"
        path.parent.mkdir(parents=True)
        path.write_bytes(text.encode("utf-8", errors="surrogateescape"))
        paths.append(path)
    return paths


# A batch worker: the CLI's own main() on jobs[start:], one JSON line per job in the results file
# (BEGIN first, so a worker killed mid-job names the job that killed it). A string run by `python -c`
# from the work folder, so it imports whichever mint_migrate PYTHONPATH (--code) or the venv gives.
CRASH_WORKER = """\
import contextlib, io, json, sys, traceback
from pathlib import Path
from mint_migrate import cli

jobs_file, results_file, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
jobs = json.loads(Path(jobs_file).read_text())
with open(results_file, "a", buffering=1) as results:
    for i in range(start, len(jobs)):
        results.write(json.dumps({"begin": i}) + "\\n")
        out, err = io.StringIO(), io.StringIO()
        uncaught = None
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                cli.main(jobs[i])
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException as exc:  # that is what is counted
                code, uncaught = 1, "".join(traceback.format_exception(exc)[-3:])
        try:
            json.loads(out.getvalue())
            is_json = True
        except ValueError:
            is_json = False
        results.write(json.dumps({"done": i, "code": code, "json": is_json, "uncaught": uncaught}) + "\\n")
"""


def run_jobs(jobs: list[list[str]], workdir: Path, label: str) -> list[dict]:
    """Every job's outcome; a worker that dies or stalls (60 s on one job) is restarted after it."""
    jobs_file, results_file = workdir / f"{label}.jobs.json", workdir / f"{label}.results"
    jobs_file.write_text(json.dumps(jobs))
    outcomes: dict[int, dict] = {}
    start = 0
    while start < len(jobs):
        worker = subprocess.Popen(
            [sys.executable, "-c", CRASH_WORKER, str(jobs_file), str(results_file), str(start)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=workdir,
        )  # fmt: skip
        last_seen, seen_lines = time.monotonic(), 0
        while worker.poll() is None:
            time.sleep(0.2)
            lines = results_file.read_text().splitlines() if results_file.exists() else []
            if len(lines) != seen_lines:
                last_seen, seen_lines = time.monotonic(), len(lines)
            elif time.monotonic() - last_seen > 60:
                worker.kill()
                worker.wait()
                outcomes[-1] = {"hang": True}
        begun = None
        for line in results_file.read_text().splitlines():
            record = json.loads(line)
            if "begin" in record:
                begun = record["begin"]
            else:
                outcomes[record["done"]] = record
                begun = None
        outcomes.pop(-1, None)
        if begun is not None and begun not in outcomes:  # the worker died on this job
            hung = worker.returncode == -signal.SIGKILL
            outcomes[begun] = {"done": begun, "code": 128 - worker.returncode, "json": False, "uncaught": None,
                               "hang": hung}  # fmt: skip
            start = begun + 1
        else:
            start = len(jobs)
    return [outcomes[i] for i in range(len(jobs))]


def is_crash(outcome: dict) -> bool:
    return outcome["code"] >= 128 or outcome.get("uncaught") is not None or not outcome["json"] or outcome.get("hang", False)


def probe_crashes(n: int, seed: int, workdir: Path) -> dict[str, int]:
    paths = corpus(n, seed, workdir / "corpus")
    counts: dict[str, int] = {"sources": len(paths)}
    for command in ("lint", "migrate"):
        outcomes = run_jobs([[command, str(p), "--json"] for p in paths], workdir, command)
        crashed = [(p, o) for p, o in zip(paths, outcomes, strict=True) if is_crash(o)]
        counts[f"{command} crashes"] = len(crashed)
        codes = collections.Counter(o["code"] for o in outcomes)
        print(f"  {command} exit codes: {dict(sorted(codes.items()))}", file=sys.stderr)
        for path, outcome in crashed[:5]:
            print(f"  {command} {path}: {outcome}", file=sys.stderr)
    # The issue's shapes through the installed binary too: a real process per call.
    binary = 0
    for name in ISSUE_SHAPES:
        path = workdir / "corpus" / f"s{sorted(HOSTILE).index(name):04d}" / "train.py"
        for command in ("lint", "migrate"):
            done = subprocess.run([CLI, command, str(path), "--json"], capture_output=True, text=True, timeout=300)
            try:
                json.loads(done.stdout)
                ok = done.returncode < 128 and "Traceback" not in done.stderr
            except ValueError:
                ok = False
            binary += not ok
    counts["binary crashes (issue shapes)"] = binary
    counts["mcp server deaths"] = anyio.run(_mcp_hostile, workdir)
    return counts


async def _mcp_hostile(workdir: Path) -> int:
    params = StdioServerParameters(command=sys.executable, args=["-m", "mint_migrate"], cwd=str(workdir))
    failures = 0
    async with Client(params) as client:
        for name, source in HOSTILE.items():
            if name != "oversized":
                result = await client.call_tool("lint_script", {"source": source})
                failures += bool(result.is_error or not result.structured_content["parse_error"])
        failures += (await client.call_tool("map_concept", {"framework": "trl"})).is_error
    return failures


# --- orphans -------------------------------------------------------------------------------------

DAEMON = """\
import os, sys, time
print("METRIC step=1 loss=1.5 tokens=4 step_s=0.1", flush=True)
if os.fork() == 0:  # the classic daemon: fork, new session, fork again, close stdio
    os.setsid()
    if os.fork() == 0:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        time.sleep(300)
    os._exit(0)
print("METRIC step=2 loss=1.25 tokens=4 step_s=0.1", flush=True)
print("METRIC done=1 steps=2", flush=True)
"""
BACKGROUND = """\
import subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], stdout=subprocess.DEVNULL)
print("METRIC step=1 loss=1.5 tokens=4 step_s=0.1", flush=True)
print("METRIC step=2 loss=1.25 tokens=4 step_s=0.1", flush=True)
print("METRIC done=1 steps=2", flush=True)
"""
HOLDS_STDOUT = """\
import subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])  # inherits stdout
print("METRIC step=1 loss=1.5 tokens=4 step_s=0.1", flush=True)
print("METRIC step=2 loss=1.25 tokens=4 step_s=0.1", flush=True)
print("METRIC done=1 steps=2", flush=True)
"""


def _cli_smoke(folder: Path, mark: str, interrupt=None) -> tuple[dict | None, list[int]]:
    """`mint-migrate smoke` on folder/train.py; `interrupt(cli)` once the script wrote its pids.
    (the verdict, or None; every marked process seen while it ran)."""
    cli = subprocess.Popen(
        [CLI, "smoke", str(folder / "train.py"), "--json", "--timeout", "120"],
        env=dict(os.environ, **{MARKER: mark}), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=with_default_sigint,  # Ctrl-C as from a terminal
    )  # fmt: skip
    seen: set[int] = set()
    try:
        if interrupt is not None:
            wait_for(lambda: (folder / "pids").exists())
            seen.update(marked(mark))
            interrupt(cli)
        out, _ = cli.communicate(timeout=300)
    finally:
        if cli.poll() is None:
            cli.kill()
    seen.update(marked(mark))
    try:
        return json.loads(out), sorted(seen)
    except ValueError:
        return None, sorted(seen)


def probe_orphans(workdir: Path) -> dict[str, int]:
    counts: dict[str, int] = {}

    def case(name: str, script: str | None, interrupt=None) -> None:
        folder = workdir / name
        folder.mkdir()
        if script is None:
            write_script(folder, finish=interrupt is None)
        else:
            (folder / "train.py").write_text(script, encoding="utf-8")
        mark = uuid.uuid4().hex
        verdict, seen = _cli_smoke(folder, mark, interrupt)
        left = gone(seen, timeout=30) + [p for p in marked(mark) if p not in seen]
        counts[name] = len(left)
        if verdict is None or (interrupt is None and verdict["errors"] and verdict["errors"][0]["kind"] == "timeout"):
            counts[name] += 1  # no verdict, or a finished run read as a timeout: a failure too
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    case("finished, own-session + stdout-holding children", None)
    case("double-forked daemon", DAEMON)
    case("background child", BACKGROUND)
    case("child holding stdout", HOLDS_STDOUT)
    case("SIGINT to the CLI", None, lambda cli: cli.send_signal(signal.SIGINT))
    case("SIGINT to the CLI's group (Ctrl-C)", None, lambda cli: os.killpg(cli.pid, signal.SIGINT))
    case("SIGTERM to the CLI", None, lambda cli: cli.send_signal(signal.SIGTERM))

    async def disconnect(server_pid: int) -> None:
        pass

    async def terminate(server_pid: int) -> None:
        os.kill(server_pid, signal.SIGTERM)

    for name, action in [("MCP client goes away", disconnect), ("SIGTERM to the MCP server", terminate)]:
        folder = workdir / name
        folder.mkdir()
        during, mark = anyio.run(mcp_run_then, folder, action)
        counts[name] = len(gone(during, timeout=30)) + len(marked(mark))
    return counts


# --- escapes -------------------------------------------------------------------------------------


async def _escapes(workdir: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    workspace, outside = workdir / "ws", workdir / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.py").write_text(SECRET_TEXT, encoding="utf-8")
    from mint_migrate.server import create_server

    async with Client(create_server(workspace)) as client:
        os.link(outside / "secret.py", workspace / "hard.py")
        await client.call_tool("scaffold_train_py", {"kind": "sft", "output_path": "hard.py", "overwrite": True})
        counts["hard link written through"] = int((outside / "secret.py").read_text() != SECRET_TEXT)

        outside_calls = [
            ("lint_script", {"path": "../outside/secret.py", "fix": True}),
            ("lint_script", {"path": str(outside / "secret.py"), "fix": True}),
            ("lint_script", {"path": "/etc/hostname", "fix": True}),
            ("migrate_script", {"source_path": str(outside / "secret.py")}),
            ("launch_smoke_run", {"script_path": "../outside/secret.py"}),
            ("check_parity", {"source_path": "../outside/secret.py"}),
        ]
        answered = 0
        for name, arguments in outside_calls:
            answered += not (await client.call_tool(name, arguments)).is_error
        counts["outside paths answered"] = answered

        race_places(workspace, outside)
        before = sorted(p.name for p in outside.iterdir())
        with racing(workspace, outside):
            written = 0
            for i in range(300):
                result = await client.call_tool("scaffold_train_py", {"kind": "sft", "output_path": f"sub/f{i}.py"})
                written += not result.is_error
            print(f"  racing writes answered: {written}/300", file=sys.stderr)
            counts["racing writes landed outside (of 300)"] = len(set(p.name for p in outside.iterdir()) - set(before))
            escapes, outcomes = await race_reads(client, outside, rounds=40)
        counts["racing reads/runs escaped (of 240)"] = len(escapes)
        for escape in escapes[:5]:
            print(f"  {escape}", file=sys.stderr)
        print(f"  racing reads answered: { {k: f'{sum(v)}/{len(v)}' for k, v in outcomes.items()} }", file=sys.stderr)
    return counts


def probe_escapes(workdir: Path) -> dict[str, int]:
    return anyio.run(_escapes, workdir)


# --- leaks ---------------------------------------------------------------------------------------


async def _mcp_leaks(folder: Path) -> tuple[int, int]:
    from mint_migrate.server import create_server

    messages: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")

    async with Client(create_server(folder)) as client:
        result = await client.call_tool(
            "launch_smoke_run", {"script_path": "train.py", "timeout_s": 120}, progress_callback=on_progress
        )
    texts = [json.dumps(result.structured_content), *(c.text for c in result.content if hasattr(c, "text")), *messages]
    return sum(leaked(t) for t in texts), sum("***" in t for t in texts)


def probe_leaks(workdir: Path) -> dict[str, int]:
    folder = workdir / "leaky"
    folder.mkdir()
    (folder / ".env").write_text(f"MINT_API_KEY={SENTINEL}\n", encoding="utf-8")
    (folder / "train.py").write_text(LEAKY_SCRIPT, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("MINT_API_KEY", "TINKER_API_KEY")}
    counts = {}
    for label, flags in [("CLI JSON fields", ["--json"]), ("CLI text", [])]:
        done = subprocess.run(
            [CLI, "smoke", str(folder / "train.py"), "--timeout", "120", *flags],
            capture_output=True, text=True, timeout=300, cwd=folder, env=env,
        )  # fmt: skip
        if flags:
            verdict = json.loads(done.stdout)
            counts[label] = sum(leaked(json.dumps(value)) for value in verdict.values()) + leaked(done.stderr)
            shown = [key for key, value in verdict.items() if "***" in json.dumps(value)]
            print(f"  the key was printed into, and redacted in: {', '.join(shown)}", file=sys.stderr)
        else:
            counts[label] = leaked(done.stdout) + leaked(done.stderr)
    saved = os.getcwd()
    os.chdir(folder)
    for name in ("MINT_API_KEY", "TINKER_API_KEY"):
        os.environ.pop(name, None)
    try:
        leaks, redacted = anyio.run(_mcp_leaks, folder)
        print(f"  MCP texts carrying *** (result, progress): {redacted}", file=sys.stderr)
    finally:
        os.chdir(saved)
    counts["MCP result + progress"] = leaks
    return counts


# --- mint-local: poison, tiny temperatures, bounded work, abandoned work, PID reuse (issue 26) --------
# Self-contained: its own helpers, and one entry ("mint-local") in main()'s categories. Every case
# runs against a real mint-local (through the SDK; raw HTTP for what the SDK cannot send) and
# prints the server's peak RSS during the case (VmHWM, reset before each case through
# /proc/PID/clear_refs). The counts: models left poisoned (NaN forward or sample after a
# request), NaN answers, crashes (a traceback on the server's stderr, a 5xx, a dead server),
# bounds not held (a request past a limit that was served), work left running for a client
# that went away, confirmed checkpoints lost.

ML_BUDGET_S = 15  # MINT_LOCAL_SAMPLE_BUDGET_S for the probe's server: the time-bound case waits this long


def _ml_pid_rss_reset(pid: int) -> None:
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/clear_refs").write_text("5")


def _ml_peak_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _ml_finite(values) -> bool:
    import math

    return all(v is None or math.isfinite(v) for v in values)


def _ml_usable(tc, tokens) -> bool:
    """The model still gives finite numbers: a forward, and a sample from its current weights."""
    import mint

    from mint_local.testing import ce_datum

    try:
        out = tc.forward([ce_datum(tokens)], "cross_entropy").result()
        sample = tc.save_weights_and_get_sampling_client().sample(
            mint.ModelInput.from_ints(tokens[:8]), 2, mint.SamplingParams(max_tokens=4, seed=0)
        ).result()
    except Exception:  # noqa: BLE001 - a failing forward is exactly a poisoned model
        return False
    return _ml_finite(out.loss_fn_outputs[0]["logprobs"].data) and all(_ml_finite(s.logprobs) for s in sample.sequences)


def _ml_case(name: str, pid: int, figures: dict, run) -> dict[str, int]:
    _ml_pid_rss_reset(pid)
    started = time.monotonic()
    counts = run()
    figures[name] = f"{time.monotonic() - started:.1f} s, peak RSS {_ml_peak_mb(pid):.0f} MB"
    return counts


def _ml_absurd_lr(sc, server, http, tokens) -> dict[str, int]:
    import mint

    from mint_local.testing import ce_datum

    poisoned = 0
    for lr in (1e20, 1e30, 1e37, float("inf"), float("nan")):
        tc = sc.create_lora_training_client(base_model=server.model_name, rank=4, seed=0)
        tc.forward_backward([ce_datum(tokens)], "cross_entropy").result()
        if lr != lr or lr == float("inf"):  # the SDK will not send these: raw JSON does
            http.post("/api/v1/optim_step", content=json.dumps({"model_id": tc.model_id, "adam_params": {"learning_rate": lr}}))
        else:
            with contextlib.suppress(Exception):
                tc.optim_step(mint.AdamParams(learning_rate=lr)).result()
        poisoned += not _ml_usable(tc, tokens)
    return {"poisoned models": poisoned}


def _ml_tiny_temperature(sc, server, http, tokens) -> dict[str, int]:
    import mint

    sampler = sc.create_sampling_client(base_model=server.model_name)
    nan_answers = 0
    for t in (1e-45, 1e-38, 1e-30, 1e-7):
        try:
            out = sampler.sample(mint.ModelInput.from_ints(tokens[:8]), 4, mint.SamplingParams(max_tokens=8, temperature=t)).result()
            nan_answers += not all(_ml_finite(s.logprobs) for s in out.sequences)
        except mint.BadRequestError:
            pass  # refused with a 400: what should happen
        except Exception:  # noqa: BLE001 - NaN the SDK cannot parse
            nan_answers += 1
    return {"NaN answers": nan_answers}


def _ml_bad_requests(sc, server, http, tokens) -> dict[str, int]:
    tc = sc.create_lora_training_client(base_model=server.model_name, rank=4, seed=0)
    n = len(tokens) - 1
    bodies = [
        ("/api/v1/create_session", "[" * 100_000 + "]" * 100_000),
        ("/api/v1/create_session", json.dumps({"tags": [], "user_metadata": json.loads('{"a":' * 500 + "1" + "}" * 500)})),
    ]
    for shape in ([-1, -n], [-n], [2**40, 0], [n] + [1] * 20):
        datum = {
            "model_input": {"chunks": [{"type": "encoded_text", "tokens": tokens[:-1]}]},
            "loss_fn_inputs": {
                "target_tokens": {"data": tokens[1:] if shape != [2**40, 0] else [], "dtype": "int64", "shape": shape},
                "weights": {"data": [1.0] * n, "dtype": "float32"},
            },
        }
        bodies.append(("/api/v1/forward", json.dumps({"model_id": tc.model_id, "forward_input": {"data": [datum], "loss_fn": "cross_entropy"}})))
    before = server.log_path.read_text(errors="replace").count("Traceback")
    server_errors = sum(http.post(route, content=body).status_code >= 500 for route, body in bodies)
    tracebacks = server.log_path.read_text(errors="replace").count("Traceback") - before
    return {"crashes (tracebacks, 5xx)": tracebacks + server_errors}


def _ml_poll(http, request_id: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        result = http.post("/api/v1/retrieve_future", json={"request_id": request_id}, timeout=60).json()
        if result.get("type") != "try_again" or time.monotonic() > deadline:
            return result


def _ml_topk(sc, server, http, tokens) -> dict[str, int]:
    """The issue's case, an 8,000-token prompt with topk_prompt_logprobs=2,000; then k=32, the
    largest the bound (262,144 pairs) lets through for that prompt."""
    served = 0
    for k in (2000, 32):
        body = {
            "base_model": server.model_name,
            "prompt": {"chunks": [{"type": "encoded_text", "tokens": [(7 * i) % 1000 + 10 for i in range(8000)]}]},
            "num_samples": 1, "sampling_params": {"max_tokens": 1}, "prompt_logprobs": True, "topk_prompt_logprobs": k,
        }  # fmt: skip
        submitted = http.post("/api/v1/asample", json=body)
        if submitted.status_code == 400:
            print(f"  topk 8,000 x {k:,}: refused at once ({submitted.text[:90]}...)", file=sys.stderr)
            continue
        started = time.monotonic()
        answer = http.post("/api/v1/retrieve_future", json={"request_id": submitted.json()["request_id"]}, timeout=600)
        while b'"try_again"' in answer.content[:200]:
            answer = http.post("/api/v1/retrieve_future", json={"request_id": submitted.json()["request_id"]}, timeout=600)
        print(f"  topk 8,000 x {k:,}: served, a {len(answer.content) / 1e6:.1f} MB response after {time.monotonic() - started:.0f} s", file=sys.stderr)
        served += k == 2000
    return {"bounds not held": served}


def _ml_interpolate(sc, server, http, tokens) -> dict[str, int]:
    """The issue's case: 4,000 source paths in one request."""
    import mint.mint as mintx

    tc = sc.create_lora_training_client(base_model=server.model_name, rank=4, seed=0)
    path = tc.save_weights_for_sampler("probe-interp").result().path

    def state_bytes() -> int:
        return sum(f.stat().st_size for f in server.state_dir.rglob("*") if f.is_file())

    before = state_bytes()
    try:
        mintx.interpolate_checkpoints(sc, source_paths=[path] * 4000, coefficients=[1 / 4000] * 4000)
        served = 1
    except Exception as e:  # noqa: BLE001 - refused: what should happen
        served = 0
        print(f"  interpolate x 4,000: refused ({str(e)[:90]}...)", file=sys.stderr)
    written = state_bytes() - before
    print(f"  interpolate x 4,000: {written / 1e6:.1f} MB written", file=sys.stderr)
    return {"bounds not held": served}


def _ml_abandoned(sc, server, http, tokens) -> dict[str, int]:
    """A session-less sample (64 x 2,000 tokens) whose client polls once and goes away."""
    body = {
        "base_model": server.model_name, "num_samples": 64,
        "prompt": {"chunks": [{"type": "encoded_text", "tokens": list(range(20, 30))}]},
        "sampling_params": {"max_tokens": 2000, "stop": []},
    }  # fmt: skip
    request_id = http.post("/api/v1/asample", json=body).json()["request_id"]
    with contextlib.suppress(Exception):
        http.post("/api/v1/retrieve_future", json={"request_id": request_id}, timeout=1)
    deadline = time.monotonic() + 30
    while f"stopped {request_id}" not in server.log_path.read_text(errors="replace") and time.monotonic() < deadline:
        time.sleep(0.5)
    result = _ml_poll(http, request_id, 0)
    dropped = "cancelled" in str(result.get("error", ""))
    print(f"  abandoned session-less sample, 30 s after its client left: {'dropped' if dropped else 'still served'}", file=sys.stderr)
    return {"work left for a gone client": int(not dropped)}


def _ml_time_budget(sc, server, http, tokens) -> dict[str, int]:
    """64 x 2,000 tokens through the SDK: must end by the server's time budget and say so."""
    import mint

    sampler = sc.create_sampling_client(base_model=server.model_name)
    started = time.monotonic()
    try:
        sampler.sample(mint.ModelInput.from_ints(list(range(20, 30))), 64, mint.SamplingParams(max_tokens=2000, stop=[])).result(
            timeout=ML_BUDGET_S + 45
        )
        outcome, held = "served in full", 0
    except mint.RequestFailedError as e:
        outcome, held = f"failed: {str(e)[:70]}...", int("stopped after" in str(e))
    except Exception as e:  # noqa: BLE001 - still running when the probe gave up
        outcome, held = f"no answer ({type(e).__name__})", 0
    print(f"  64 x 2,000 tokens, budget {ML_BUDGET_S} s: {outcome} after {time.monotonic() - started:.0f} s", file=sys.stderr)
    return {"bounds not held": 1 - held}


def _ml_server_as_pid1(state: Path, log: Path, failpoint: str | None) -> tuple[subprocess.Popen, str]:
    """mint-local as PID 1 of a PID namespace of its own: the PID every restarted container's server has."""
    env = {k: v for k, v in os.environ.items() if k != "MINT_LOCAL_FAILPOINT"}
    if failpoint:
        env["MINT_LOCAL_FAILPOINT"] = failpoint
    cmd = ["unshare", "-Urpf", "--kill-child", sys.executable, "-m", "mint_local", "serve", "--host", "127.0.0.1",
           "--port", "0", "--model", "tiny", "--device", "cpu", "--state-dir", str(state)]  # fmt: skip
    with open(log, "a", encoding="utf-8") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=dict(env, PYTHONUNBUFFERED="1"))
    for line in proc.stdout:
        if line.startswith("mint-local listening on "):
            return proc, line.split(" on ", 1)[1].strip()
    raise RuntimeError(f"mint-local did not start: {log.read_text()[-2000:]}")


def _ml_pid_reuse(workdir: Path) -> dict[str, int]:
    """Overwrites killed between their two renames, the next server with the same PID (1)."""
    import httpx
    import mint

    from mint_local.testing import TEST_API_KEY, TEXT, ce_datum

    if subprocess.run(["unshare", "-Urpf", "true"], capture_output=True).returncode != 0:
        print("  PID reuse: skipped (no unprivileged PID namespaces here)", file=sys.stderr)
        return {}
    lost = 0
    for attempt in range(3):
        state, log = workdir / f"pid-reuse-{attempt}", workdir / f"pid-reuse-{attempt}.log"
        proc, url = _ml_server_as_pid1(state, log, "save:between-renames")
        try:
            sc = mint.ServiceClient(base_url=url, api_key=TEST_API_KEY)
            tc = sc.create_lora_training_client(base_model="tiny", rank=4, seed=attempt)
            tokens = tc.get_tokenizer().encode(TEXT)
            tc.forward_backward([ce_datum(tokens)], "cross_entropy").result()
            confirmed = tc.save_state("ck").result().path
            with contextlib.suppress(httpx.HTTPError):
                httpx.post(f"{url}/api/v1/save_weights", json={"model_id": tc.model_id, "path": "ck", "overwrite": True},
                           headers={"X-API-Key": TEST_API_KEY}, timeout=30)  # fmt: skip
            proc.wait(60)
            sc.holder.close()
        finally:
            proc.kill()
            proc.wait()
        proc, url = _ml_server_as_pid1(state, log, None)
        try:
            sc = mint.ServiceClient(base_url=url, api_key=TEST_API_KEY)
            tc = sc.create_lora_training_client(base_model="tiny", rank=4, seed=attempt)
            try:
                tc.load_state_with_optimizer(confirmed).result()
            except Exception:  # noqa: BLE001 - the confirmed checkpoint is gone
                lost += 1
            sc.holder.close()
        finally:
            proc.kill()
            proc.wait()
    print(f"  PID reuse: 3 overwrites killed mid-way, each restarted as PID 1 again: {lost} confirmed checkpoints lost", file=sys.stderr)
    return {"lost checkpoints (PID reuse)": lost}


def probe_mint_local(workdir: Path) -> dict[str, int]:
    os.environ["MINT_LOCAL_SAMPLE_BUDGET_S"] = str(ML_BUDGET_S)
    # `python -m mint_local` puts its working folder first on sys.path: run the servers from the
    # work folder, so that --code's mint_local is the one they import.
    saved_cwd = os.getcwd()
    os.chdir(workdir)
    try:
        return _ml_probe(workdir)
    finally:
        os.chdir(saved_cwd)


def _ml_probe(workdir: Path) -> dict[str, int]:
    import httpx
    import mint

    from mint_local.launcher import LocalServer
    from mint_local.testing import TEST_API_KEY, TEXT

    counts: collections.Counter[str] = collections.Counter()
    figures: dict[str, str] = {}
    server = LocalServer.start(model="tiny", device="cpu", state_dir=workdir / "state", log_path=workdir / "server.log")
    try:
        sc = mint.ServiceClient(base_url=server.base_url, api_key=TEST_API_KEY)
        tokens = sc.create_lora_training_client(base_model=server.model_name, rank=2).get_tokenizer().encode(TEXT)
        with httpx.Client(base_url=server.base_url, headers={"X-API-Key": TEST_API_KEY, "Content-Type": "application/json"}, timeout=60) as http:
            for name, case in [
                ("absurd learning rates (1e20, 1e30, 1e37, inf, NaN)", _ml_absurd_lr),
                ("tiny temperatures (1e-45, 1e-38, 1e-30, 1e-7)", _ml_tiny_temperature),
                ("deep JSON, deep user_metadata, negative/absurd shapes", _ml_bad_requests),
                ("topk_prompt_logprobs 8,000 tokens x 2,000, then x 32", _ml_topk),
                ("interpolate 4,000 source paths", _ml_interpolate),
                ("abandoned session-less sample", _ml_abandoned),
                ("time budget of one sample request", _ml_time_budget),
            ]:
                counts.update(_ml_case(name, server.pid, figures, lambda case=case: case(sc, server, http, tokens)))
                if server.proc.poll() is not None:
                    counts["crashes (tracebacks, 5xx)"] += 1
                    break
        sc.holder.close()
    finally:
        server.stop()
    started = time.monotonic()
    counts.update(_ml_pid_reuse(workdir))
    figures["PID reuse (3 crash-restart pairs)"] = f"{time.monotonic() - started:.1f} s"
    for name, figure in figures.items():
        print(f"  {name}: {figure}", file=sys.stderr)
    for key in ("poisoned models", "NaN answers", "crashes (tracebacks, 5xx)", "bounds not held", "work left for a gone client", "lost checkpoints (PID reuse)"):
        counts.setdefault(key, 0)
    return dict(counts)


# --- issue 26, the tool side: hostile files, YAML, arithmetic, daemons, interrupts, keys -----------
# Each case runs in a child of its own (os.wait4 gives its peak memory), under a 3 GiB address-space
# limit and a deadline: a hang, a crash (a signal, a traceback, not one JSON document), an orphan, a
# leak (a key in an output, a temporary file left) is counted; figures per case go to stderr.

TOOL_DEADLINE_S = 90
TOOL_MEMORY_LIMIT = 3 * 1024**3
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
)
TOWER = (
    "from trl import SFTConfig, SFTTrainer\nLR = 10 ** 10 ** 10\n"
    "trainer = SFTTrainer(model='Qwen/Qwen3-0.6B', args=SFTConfig(output_dir='o', learning_rate=LR))\n"
)
GLUED_KEY = "dotenvkey-Hq3Zm8Vt2Rw5"
THIRD_PARTY = {"HF_TOKEN": "hfprobe-Wk2Lp7Qz4", "WANDB_API_KEY": "0fedcba9876543210fedcba9876543210fedcba9"}
URL_KEY = "urlprobe-Tn6Bv1Xc9"
LEAKS_THEM = f"""\
import os, sys
glued = "x" + {GLUED_KEY!r} + "y"
print(f"RUN served_model={{glued}}", flush=True)
print(f"METRIC step=1 loss=1.5 tokens=4 step_s=0.1 hf={{os.environ['HF_TOKEN']}}", flush=True)
print(f"SAMPLE step=1 text=\\"{{os.environ['WANDB_API_KEY']}} https://h/?key={URL_KEY}\\"", flush=True)
print("METRIC step=2 loss=1.25 tokens=4 step_s=0.1", flush=True)
print("METRIC done=1 steps=2", flush=True)
raise SystemExit(f"failed: {{glued}}")
"""


def _limited() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (TOOL_MEMORY_LIMIT, TOOL_MEMORY_LIMIT))
    with_default_sigint()


def _measured(command: list[str], *, cwd: Path, env: dict | None = None, interrupts: tuple[float, ...] = (),
              after: Path | None = None, limit_memory: bool = True, deadline_s: float | None = None) -> dict:
    """Run `command`; send SIGINT at each of `interrupts` (seconds after `after` exists, else after the
    start). {"code", "out", "err", "wall_s", "peak_mb", "hung"}."""
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_limited if limit_memory else with_default_sigint)
    out: list[str] = []
    err: list[str] = []
    readers = [threading.Thread(target=lambda s=s, b=b: b.append(s.read()), daemon=True)
               for s, b in ((proc.stdout, out), (proc.stderr, err))]
    for reader in readers:
        reader.start()
    hung = False
    if interrupts:
        with contextlib.suppress(AssertionError):
            wait_for(lambda: after is None or after.exists(), timeout=TOOL_DEADLINE_S * 2)
        begun = time.monotonic()
        for at in interrupts:
            time.sleep(max(0.0, begun + at - time.monotonic()))
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGINT)  # not send_signal(): its poll() would reap it before wait4
    deadline = started + (deadline_s or TOOL_DEADLINE_S)
    reaped, status, usage = os.wait4(proc.pid, os.WNOHANG)  # wait4, not poll(): its rusage is the peak memory
    while not reaped and time.monotonic() < deadline:
        time.sleep(0.05)
        reaped, status, usage = os.wait4(proc.pid, os.WNOHANG)
    if not reaped:
        hung = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    for reader in readers:
        reader.join(timeout=10)
    return {"code": proc.returncode, "out": "".join(out), "err": "".join(err), "wall_s": time.monotonic() - started,
            "peak_mb": usage.ru_maxrss / 1024, "hung": hung}


def _one_json(text: str) -> dict | None:
    try:
        found = json.loads(text)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _crashed(run: dict, interrupted: bool = False) -> bool:
    """A signal (or an exit code >= 128 other than Ctrl-C's own 130 when it was interrupted), a
    traceback, or stdout that is not one JSON document."""
    by_signal = run["code"] < 0 or (run["code"] >= 128 and not (interrupted and run["code"] == 130))
    return not run["hung"] and (by_signal or "Traceback" in run["err"] or _one_json(run["out"]) is None)


def _tool_inputs(folder: Path) -> dict[str, dict]:
    os.mkfifo(folder / "fifo.py")
    os.mkfifo(folder / "fifo.yaml")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(folder / "sock.py"))
    (folder / "bomb.yaml").write_text(BOMB, encoding="utf-8")
    (folder / "recursive.yaml").write_text("trainer: &t\n  lr: 1\n  again: *t\n", encoding="utf-8")
    (folder / "deep.yaml").write_text("a: " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    (folder / "deep_block.yaml").write_text("".join(f"{'  ' * i}k{i}:\n" for i in range(400)), encoding="utf-8")
    (folder / "tower.py").write_text(TOWER, encoding="utf-8")
    (folder / "sft.py").write_text(TOWER.replace("10 ** 10 ** 10", "2e-5"), encoding="utf-8")
    (folder / "run.sh").write_text("N=$((10 ** 10 ** 10))\nM=$((-7 % 3))\npython train.py --steps $N --x $M\n",
                                   encoding="utf-8")
    (folder / "empty.py").write_text("", encoding="utf-8")
    (folder / "taken").write_text("mine\n", encoding="utf-8")
    cases = {
        "lint FIFO": ["lint", "fifo.py"], "lint /dev/zero": ["lint", "/dev/zero"], "lint socket": ["lint", "sock.py"],
        "migrate FIFO": ["migrate", "fifo.py"], "migrate FIFO config": ["migrate", "sft.py", "--config", "fifo.yaml"],
        "preflight FIFO": ["preflight", "fifo.py", "--target", "local"],
        "migrate YAML alias bomb": ["migrate", "bomb.yaml"], "migrate recursive alias": ["migrate", "recursive.yaml"],
        "migrate YAML 5000 deep (flow)": ["migrate", "deep.yaml"], "migrate YAML 400 deep (block)": ["migrate", "deep_block.yaml"],
        "migrate power tower": ["migrate", "tower.py"], "migrate shell power tower": ["migrate", "run.sh"],
        "lint power tower": ["lint", "tower.py"], "migrate --out EXISTING_FILE": ["migrate", "sft.py", "--out", "taken"],
        "preflight empty script": ["preflight", "empty.py", "--target", "local"],
        "preflight a folder": ["preflight", ".", "--target", "local"],
    }  # fmt: skip
    return {name: _measured([CLI, *args, "--json"], cwd=folder) for name, args in cases.items()}


async def _mcp_tool_inputs(folder: Path) -> dict[str, str]:
    """Over stdio, one server: hostile paths, then map_concept must still answer."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "mint_migrate"], cwd=str(folder),
                                   env=dict(os.environ))  # PYTHONPATH too: --code's server
    outcomes = {}
    async with Client(params) as client:
        for tool, arguments in [("lint_script", {"path": "fifo.py"}), ("lint_script", {"path": "sock.py"}),
                                ("migrate_script", {"source_path": "fifo.py"}),
                                ("migrate_script", {"source_path": "bomb.yaml"}),
                                ("migrate_script", {"source_path": "recursive.yaml"}),
                                ("migrate_script", {"source_path": "tower.py"}),
                                ("preflight_check", {"script_path": "fifo.py", "target": "local"})]:
            name = f"MCP {tool} {next(iter(arguments.values()))}"
            try:
                with anyio.fail_after(TOOL_DEADLINE_S):
                    result = await client.call_tool(tool, arguments)
                    answer = await client.call_tool("map_concept", {"framework": "trl", "concept": "SFTConfig"})
                text = result.content[0].text if result.content else ""
                outcomes[name] = "ok" if (not answer.is_error and (text or not result.is_error)) else "crash"
            except TimeoutError:
                outcomes[name] = "hang"
                break  # the server is stuck: later calls would only queue behind it
    return outcomes


def _tool_smoke(folder: Path, name: str, script: str | None, interrupts: tuple[float, ...] = (),
                env_extra: dict | None = None, dotenv: str | None = None) -> tuple[dict, Path]:
    case = folder / name.replace(" ", "_").replace(",", "")
    case.mkdir()
    if dotenv is not None:
        (case / ".env").write_text(dotenv, encoding="utf-8")
    tmpdir = case / "tmp"
    tmpdir.mkdir()
    if script is None:
        write_daemon_script(case, finish=not interrupts)
    else:
        (case / "train.py").write_text(script, encoding="utf-8")
    env = dict(os.environ, TMPDIR=str(tmpdir), **(env_extra or {}))
    run = _measured([CLI, "smoke", str(case / "train.py"), "--json", "--timeout", "120"], cwd=case, env=env,
                    interrupts=interrupts, after=case / "pids" if interrupts else None, limit_memory=False,
                    deadline_s=300)  # past the run's own 120 s timeout: a run that ends by it is no hang
    return run, case


def probe_tool_side(workdir: Path) -> dict[str, int]:
    counts = {"hangs": 0, "crashes": 0, "orphans": 0, "leaks": 0, "timeouts misreported": 0}
    runs = _tool_inputs(workdir)
    for name, run in runs.items():
        verdict = "hang" if run["hung"] else "crash" if _crashed(run) else f"exit {run['code']}"
        counts["hangs"] += run["hung"]
        counts["crashes"] += _crashed(run)
        print(f"  {name}: {verdict}, {run['wall_s']:.2f} s, peak {run['peak_mb']:.0f} MB", file=sys.stderr)
    for name, outcome in anyio.run(_mcp_tool_inputs, workdir).items():
        counts["hangs"] += outcome == "hang"
        counts["crashes"] += outcome == "crash"
        print(f"  {name}: {outcome}", file=sys.stderr)

    smoke_cases = [("env-clearing daemons, finished", None, ()), ("env-clearing daemons, Ctrl-C", None, (0.0,)),
                   ("env-clearing daemons, double Ctrl-C", None, (0.0, 1.0)),
                   ("env-clearing daemons, triple Ctrl-C", None, (0.0, 0.3, 2.0))]
    for name, script, interrupts in smoke_cases:
        run, case = _tool_smoke(workdir, name, script, interrupts)
        verdict = _one_json(run["out"])
        pids = [int(p) for p in (case / "pids").read_text().split()] if (case / "pids").exists() else []
        left = gone(pids, timeout=30)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        temporaries = [p.name for p in (case / "tmp").iterdir() if p.name.startswith("mint-local")]
        counts["orphans"] += len(left)
        counts["leaks"] += len(temporaries)
        counts["hangs"] += run["hung"]
        counts["crashes"] += _crashed(run, interrupted=bool(interrupts))
        listed = {p["pid"] for p in (verdict or {}).get("left_running", [])}
        unlisted = [p for p in pids[1:] if p not in listed]
        counts["orphans"] += len(unlisted) if not interrupts else 0
        misreported = not interrupts and verdict is not None and any(e["kind"] == "timeout" for e in verdict["errors"])
        counts["timeouts misreported"] += misreported
        print(f"  smoke {name}: exit {run['code']}, one JSON: {verdict is not None}, left alive: {len(left)}, "
              f"unlisted: {len(unlisted)}, temp files left: {temporaries}, {run['wall_s']:.1f} s", file=sys.stderr)

    keys = dict(THIRD_PARTY, MINT_API_KEY="sk-a-different-environment-key-123456")
    run, case = _tool_smoke(workdir, "keys", LEAKS_THEM, env_extra=keys, dotenv=f"MINT_API_KEY={GLUED_KEY}\n")
    secrets = [GLUED_KEY, URL_KEY, *THIRD_PARTY.values()]
    found = [s for s in secrets if s in run["out"] or s in run["err"]]
    preflight = _measured([CLI, "preflight", "--json"], cwd=workdir, env=dict(
        os.environ, MINT_BASE_URL=f"http://u:{URL_KEY}@127.0.0.1:9/?key={URL_KEY}", MINT_API_KEY="sk-x"))
    found += [f"preflight {URL_KEY}"] * (URL_KEY in preflight["out"] + URL_KEY in preflight["err"])
    counts["leaks"] += len(found)
    print(f"  keys (glued .env key under a different env key, HF_TOKEN, WANDB_API_KEY, URL keys): leaked {found}",
          file=sys.stderr)
    return counts


# --- main ----------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=int, default=500)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--only", default="crashes,orphans,escapes,leaks,mint-local")
    parser.add_argument(
        "--code", type=Path, help="another checkout's root (an older commit, for a baseline): the processes the "
        "probe starts (CLI, workers, stdio MCP server) run its mint_migrate/mint_local; the in-process MCP server "
        "of escapes and leaks stays this checkout's"
    )
    args = parser.parse_args()
    if args.code is not None:
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(args.code.resolve()), os.environ.get("PYTHONPATH")]))
    os.environ["TINKER_TELEMETRY"] = "0"
    logging.disable(logging.WARNING)  # the in-process MCP server logs every refused call
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.platform()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}, code: {args.code or ROOT}")  # fmt: skip
    totals = {}
    with tempfile.TemporaryDirectory(prefix="probe-14-") as tmp:
        for category in args.only.split(","):
            started = time.monotonic()
            workdir = Path(tmp) / category
            workdir.mkdir()
            if category == "crashes":
                counts = probe_crashes(args.sources, args.seed, workdir)
                total = sum(v for k, v in counts.items() if k != "sources")
            else:
                counts = {"orphans": probe_orphans, "escapes": probe_escapes, "leaks": probe_leaks,
                          "mint-local": probe_mint_local, "tool": probe_tool_side}[category](workdir)
                total = sum(counts.values())
            totals[category] = total
            print(f"{category}: {total}  ({time.monotonic() - started:.0f} s)")
            for key, value in counts.items():
                print(f"  {key}: {value}")
    print("total: " + ", ".join(f"{v} {k}" for k, v in totals.items()))
    return 0 if not any(totals.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
