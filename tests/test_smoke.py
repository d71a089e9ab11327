"""smoke.run_smoke: real scripts in real processes against a mint-local it starts (and reuses), verdicts
for good and broken scripts, failure classification from real SDK errors, redaction, and the front ends."""

import http.server
import json
import math
import socket
import threading
import time
import traceback
from pathlib import Path

import pytest
from mcp import Client

from mint_migrate import smoke
from mint_migrate.render import ScaffoldOptions, render_scaffold, write_scripts
from mint_migrate.server import create_server
from mint_migrate.smoke import RunOutput, SmokeProgress, classify, format_verdict, redact, run_smoke


@pytest.fixture(scope="module", autouse=True)
def stop_servers_after_module():
    yield
    smoke.stop_local_servers()


@pytest.fixture
def anyio_backend():
    return "asyncio"


def grpo_source() -> str:
    # The default base model (Qwen/...) is not what mint-local serves: the smoke run swaps it.
    return render_scaffold(ScaffoldOptions(kind="grpo"))


def write(tmp_path: Path, name: str, source: str) -> Path:
    """`source` as tmp_path/name, with the mint_run.py a rendered train.py imports beside it."""
    return write_scripts(tmp_path, source, name)


def classify_text(text: str, script: Path, exit_code: int | None = 1) -> list[str]:
    output = RunOutput()
    for line in text.splitlines():
        output.add(line)
    errors = classify(text, script=script, exit_code=exit_code, output=output, steps=2, timed_out=False, timeout_s=600)
    return [e.kind for e in errors]


@pytest.mark.slow
def test_a_scaffold_passes_on_a_local_server_that_is_started_once_and_reused(tmp_path):
    seen: list[SmokeProgress] = []
    script = write(tmp_path, "train.py", grpo_source())
    verdict = run_smoke(script, target="local", steps=2, timeout_s=300, on_progress=seen.append)
    assert verdict.passed, format_verdict(verdict)
    server = smoke.running_server("tiny", "auto")
    # The model that really ran is the server's, not the script's default Qwen/Qwen3-4B-Instruct-2507.
    assert verdict.model == server.model_name == "mint-local/tiny-qwen3"
    assert "--base-model" in verdict.command and server.model_name in verdict.command
    assert verdict.steps_done == 2 and (verdict.first_step, verdict.last_step) == (1, 2)
    assert math.isfinite(verdict.loss_first) and math.isfinite(verdict.loss_last)
    assert verdict.median_step_s > 0 and verdict.accepted_groups >= 1 and verdict.trained_groups >= 1
    assert isinstance(verdict.sample_text, str) and verdict.checkpoint.startswith("tinker://")
    assert verdict.exit_code == 0 and verdict.errors == [] and "METRIC done=1" in verdict.log_tail
    assert (Path(verdict.log_dir) / "metrics.jsonl").is_file() and not (tmp_path / "runs").exists()
    # Progress: the server start, then one report per METRIC step.
    assert [p.step for p in seen] == [0, 1, 2] and all(p.total == 2 for p in seen)
    assert "loss=" in seen[1].message

    # A second run reuses the server; the script sees its URL and a test sk- key, never a real one.
    echo = write(
        tmp_path,
        "echo.py",
        "import os, sys\n"
        "assert '--smoke' in sys.argv and sys.argv[sys.argv.index('--steps') + 1] == '2'\n"
        "assert os.environ['MINT_API_KEY'].startswith('sk-') and os.environ['HF_HUB_OFFLINE'] == '1'\n"
        "print('RUN served_model=' + os.environ['MINT_BASE_URL'].replace(' ', '_'))\n"
        "for step in (1, 2):\n"
        "    print(f'METRIC step={step} loss={3 - step}.5 tokens=8 step_s=0.{step}', flush=True)\n"
        "print('METRIC done=1 steps=2 checkpoint=tinker://run/weights/step-000002')\n",
    )
    again = run_smoke(echo, steps=2, timeout_s=60)
    assert again.passed, format_verdict(again)
    assert again.base_url == verdict.base_url and smoke.running_server("tiny", "auto") is server
    assert again.model == server.base_url and (again.loss_first, again.loss_last) == (2.5, 1.5)
    assert again.median_step_s == pytest.approx(0.15) and again.checkpoint == "tinker://run/weights/step-000002"
    human = format_verdict(again)
    assert "smoke run PASSED" in human and "2.5 -> 1.5" in human


def test_a_syntax_error_is_a_failed_verdict_before_anything_runs(tmp_path):
    script = write(tmp_path, "train.py", "import mint\n\ndef main(:\n    pass\n")
    started = time.monotonic()
    verdict = run_smoke(script, steps=2)
    assert time.monotonic() - started < 5
    assert not verdict.passed and [e.kind for e in verdict.errors] == ["syntax_error"]
    assert "train.py:3" in verdict.errors[0].message and verdict.command == []


@pytest.mark.slow
def test_a_raising_reward_function_is_classified_with_its_line(tmp_path):
    source = grpo_source().replace(
        '    numbers = re.findall(r"-?\\d[\\d,]*(?:\\.\\d+)?", completion)\n',
        '    raise ValueError("reward service unavailable")\n',
    )
    assert "reward service unavailable" in source
    script = write(tmp_path, "train.py", source)
    verdict = run_smoke(script, steps=2, timeout_s=300)
    assert not verdict.passed and verdict.exit_code not in (0, None)
    [error] = verdict.errors
    assert error.kind == "reward_function"
    line = next(i for i, text in enumerate(source.splitlines(), 1) if "reward service unavailable" in text)
    assert "ValueError: reward service unavailable" in error.message and f"train.py:{line}" in error.message
    assert "--dry-run" in error.fix and "Traceback" in verdict.log_tail


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_remote_without_a_key_says_so(tmp_path, monkeypatch):
    monkeypatch.delenv("MINT_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    verdict = run_smoke(write(tmp_path, "train.py", grpo_source()), target="remote", steps=2)
    assert not verdict.passed and [e.kind for e in verdict.errors] == ["missing_credentials"]


def test_remote_wrong_url_and_wrong_server_fail_fast_and_never_show_the_key(tmp_path, monkeypatch):
    secret = "sk-user-secret-0123456789"
    monkeypatch.setenv("MINT_API_KEY", secret)
    script = write(tmp_path, "train.py", grpo_source())

    monkeypatch.setenv("MINT_BASE_URL", f"http://127.0.0.1:{free_port()}")
    refused = run_smoke(script, target="remote", steps=2)
    assert [e.kind for e in refused.errors] == ["connection"] and refused.duration_s < 30

    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("MINT_BASE_URL", f"http://127.0.0.1:{web.server_address[1]}")
        wrong = run_smoke(script, target="remote", steps=2)
    finally:
        web.shutdown()
    assert [e.kind for e in wrong.errors] == ["wrong_server"] and "HTTP 501" in wrong.errors[0].message
    for verdict in (refused, wrong):
        assert secret not in verdict.model_dump_json()


def test_a_scaffold_pointed_at_a_wrong_server_stops_in_seconds_with_a_classified_error(tmp_path, monkeypatch, capsys):
    """The script's own endpoint check: the SDK alone would retry for minutes without a word."""
    import importlib.util
    import sys

    script = write(tmp_path, "train.py", render_scaffold(ScaffoldOptions(kind="sft")))
    spec = importlib.util.spec_from_file_location("wrong_server_scaffold", script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    monkeypatch.setenv("MINT_BASE_URL", f"http://127.0.0.1:{web.server_address[1]}")
    monkeypatch.setenv("MINT_API_KEY", "sk-abcdef123456")
    try:
        spec.loader.exec_module(module)
        with pytest.raises(SystemExit) as stopped:
            module.main(["--smoke", "--log-dir", str(tmp_path / "log")])
    finally:
        web.shutdown()
        del sys.modules[spec.name]
    assert classify_text(str(stopped.value.code), script) == ["wrong_server"]


@pytest.mark.slow
def test_timeout_kills_the_whole_process_group(tmp_path):
    script = write(
        tmp_path,
        "train.py",
        "import pathlib, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        "pathlib.Path('child.pid').write_text(str(child.pid))\n"
        "print('METRIC step=1 loss=1.5 tokens=3 step_s=0.1', flush=True)\n"
        "time.sleep(300)\n",
    )
    verdict = run_smoke(script, steps=2, timeout_s=4)
    assert not verdict.passed and "timeout" in [e.kind for e in verdict.errors]
    assert verdict.steps_done == 1 and verdict.exit_code is None
    assert any("neither --smoke nor --steps" in note for note in verdict.notes)
    child = int((tmp_path / "child.pid").read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{child}/stat").read_text().split()[2]
        except FileNotFoundError:
            break
        if state == "Z":  # killed, waiting to be reaped by init
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"the script's child {child} survived the timeout")


def test_scripts_without_metrics_or_with_nan_losses_fail(tmp_path):
    quiet = run_smoke(write(tmp_path, "quiet.py", "print('training... done')\n"), steps=2, timeout_s=60)
    assert [e.kind for e in quiet.errors] == ["no_metrics"]
    assert "mint-migrate scaffold" in quiet.errors[0].fix and "DESIGN.md" not in quiet.model_dump_json()
    nan = write(
        tmp_path,
        "nan.py",
        "import sys\nassert '--steps' in sys.argv and '--smoke' in sys.argv\n"
        "for step in (1, 2):\n    print(f'METRIC step={step} loss=nan tokens=4 step_s=0.1')\n"
        "print('METRIC done=1 steps=2')\n",
    )
    verdict = run_smoke(nan, steps=2, timeout_s=60)
    assert [e.kind for e in verdict.errors] == ["non_finite_loss"] and verdict.steps_done == 2
    assert "Lower the learning rate" in verdict.errors[0].fix


def test_keys_are_redacted_from_logs_and_errors(tmp_path):
    script = write(
        tmp_path,
        "leak.py",
        "print('using key sk-live-abcdef0123456789 and tml-abcdefghijkl')\n"
        "print('Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl')\n"
        "raise SystemExit('bad key sk-live-abcdef0123456789')\n",
    )
    verdict = run_smoke(script, steps=2, timeout_s=60)
    dumped = verdict.model_dump_json()
    for secret in ("sk-live-abcdef0123456789", "tml-abcdefghijkl", "eyJhbGciOiJIUzI1NiJ9"):
        assert secret not in dumped
    assert "***" in verdict.log_tail and [e.kind for e in verdict.errors] == ["script_error"]
    assert redact("key=sk-abc12345678 x", ["abc"]) == "key=*** x"
    assert redact("MINT_API_KEY=mysecretvalue", ["mysecretvalue"]) == "MINT_API_KEY=***"


@pytest.mark.slow
def test_real_sdk_errors_are_classified_with_their_fix(tmp_path, mint_env):
    """Each text below is the real error the installed SDK raises, caught in this process."""
    import mint
    from mint import types
    from tinker.lib._auth_token_provider import ApiKeyAuthProvider

    script = tmp_path / "train.py"

    def caught(call) -> str:
        try:
            call()
        except Exception:  # noqa: BLE001 - the traceback text is what is classified
            return traceback.format_exc()
        raise AssertionError("expected the SDK to raise")

    service_client = mint.ServiceClient(base_url=mint_env.base_url)
    training_client = service_client.create_lora_training_client(base_model=mint_env.model_name, rank=4)
    datum = types.Datum(
        model_input=types.ModelInput.from_ints([1, 2, 3]),
        loss_fn_inputs={"target_tokens": [2, 3, 4], "weights": [1.0, 1.0, 1.0]},
    )
    future = training_client.forward_backward([datum], loss_fn="cross_entropy")
    missing_result = caught(lambda: future.loss_fn_outputs)
    assert "object has no attribute 'loss_fn_outputs'" in missing_result
    assert classify_text(missing_result, script) == ["missing_result"]

    no_loss = caught(lambda: future.result().loss)
    assert classify_text(no_loss, script) == ["sdk_attribute"]

    from_state = caught(lambda: service_client.create_training_client_from_state("tinker://gone/weights/x"))
    assert classify_text(from_state, script)[0] == "weights_info_404"

    sk_key = caught(lambda: ApiKeyAuthProvider(api_key="sk-abcdefgh12345"))
    kinds = classify_text(sk_key, script)
    assert kinds == ["sk_key_bug"]


RESUME_FROM_STATE = """\
import argparse

import mint

parser = argparse.ArgumentParser()
parser.add_argument("--smoke", action="store_true")
parser.add_argument("--steps", type=int, default=2)
parser.add_argument("--base-model", default="Qwen/Qwen3-8B")
args = parser.parse_args()
service_client = mint.ServiceClient()
training_client = service_client.create_lora_training_client(base_model=args.base_model, rank=4)
path = training_client.save_state("step-0").result().path
# Works against tinker; hosted MinT answers /api/v1/weights_info with 404.
resumed = service_client.create_training_client_from_state_with_optimizer(path)
print("METRIC step=1 loss=1.0")
print("METRIC done=1 steps=1")
"""


@pytest.mark.slow
def test_a_local_smoke_run_fails_where_hosted_mint_would(tmp_path):
    """Smoke runs use mint-local's --hosted-parity: a resume that only tinker serves must not pass."""
    verdict = run_smoke(write(tmp_path, "train.py", RESUME_FROM_STATE), target="local", steps=2, timeout_s=300)
    assert not verdict.passed
    [error] = [e for e in verdict.errors if e.kind == "weights_info_404"]
    assert "load_state_with_optimizer" in error.fix


def test_a_run_that_finished_and_then_aborted_at_exit_says_how_to_avoid_it(tmp_path):
    """A real process that prints its last METRIC line and then dies by SIGABRT, as pyqwest#164 does."""
    source = "import os\nprint('METRIC step=1 loss=1.0', flush=True)\nprint('METRIC done=1 steps=1', flush=True)\nos.abort()\n"
    verdict = run_smoke(write(tmp_path, "train.py", source), target="local", steps=1, timeout_s=300)
    assert not verdict.passed
    assert [e.kind for e in verdict.errors] == ["crashed_at_exit"]
    assert "os._exit(0)" in verdict.errors[0].fix


def test_a_script_that_raises_at_import_is_a_script_error_not_a_timeout(tmp_path):
    """It exits on its own in a second or two: the verdict says so, and names the exception."""
    script = write(tmp_path, "train.py", "import sys\nraise RuntimeError('no data at /data/train.jsonl')\n")
    verdict = run_smoke(script, steps=2, timeout_s=120)
    assert [e.kind for e in verdict.errors] == ["script_error"] and verdict.exit_code == 1
    assert "RuntimeError: no data at /data/train.jsonl" in verdict.errors[0].message
    assert verdict.notes == ["The script takes neither --smoke nor --steps, so it ran as it is and exited with code 1."]
    assert "timeout" not in verdict.model_dump_json().lower() and verdict.duration_s < 60


def test_import_errors_name_the_package_to_install(tmp_path):
    script = write(tmp_path, "train.py", "import mint_not_installed_anywhere\n")
    verdict = run_smoke(script, steps=2, timeout_s=60)
    [error] = verdict.errors
    assert error.kind == "import_error" and "mint_not_installed_anywhere" in error.message
    text = "Traceback (most recent call last):\nModuleNotFoundError: No module named 'mint'\n"
    assert classify_text(text, script) == ["import_error"]
    assert (
        "mindlab-toolkit==0.2.0"
        in classify(text, script=script, exit_code=1, output=RunOutput(), steps=2, timed_out=False, timeout_s=1)[0].fix
    )


def test_rl_runs_that_train_on_nothing_fail(tmp_path):
    script = tmp_path / "train.py"
    text = "\n".join(
        f"METRIC step={s} tokens=0 step_s=0.1 reward=0 accepted=0 trained=0 dropped=2 early_stop=complete"
        for s in (1, 2)
    )
    assert classify_text(text + "\nMETRIC done=1 steps=2", script, exit_code=0) == ["nothing_trained"]


def test_missing_script_is_a_usage_error(tmp_path):
    from mint_migrate.errors import MintMigrateError

    with pytest.raises(MintMigrateError, match="is not a file"):
        run_smoke(tmp_path / "nope.py")


@pytest.mark.anyio
async def test_launch_smoke_run_tool_reports_progress_and_a_structured_verdict(tmp_path):
    (tmp_path / "train.py").write_text(
        "import sys, time\n"
        "assert '--smoke' in sys.argv and '--steps' in sys.argv\n"
        "for step in (1, 2):\n"
        "    print(f'METRIC step={step} loss=0.{step} tokens=4 step_s=0.01', flush=True)\n"
        "    time.sleep(0.2)\n"
        "print('METRIC done=1 steps=2')\n",
        encoding="utf-8",
    )
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async with Client(create_server(tmp_path), raise_exceptions=True) as client:
        result = await client.call_tool(
            "launch_smoke_run", {"script_path": "train.py", "steps": 2}, progress_callback=on_progress
        )
        assert not result.is_error, result.content
        verdict = result.structured_content
        assert verdict["passed"] and verdict["steps_done"] == 2 and verdict["loss_last"] == 0.2
        assert verdict["model"] == smoke.running_server("tiny", "auto").model_name
        assert [value for value, _, _ in progress] == [0, 1, 2]

        scaffolded = await client.call_tool("scaffold_train_py", {"kind": "sft", "output_path": "sft.py"})
        assert not scaffolded.is_error and (tmp_path / "sft.py").is_file()
        (tmp_path / "bad.py").write_text("def oops(:\n", encoding="utf-8")
        failed = await client.call_tool("launch_smoke_run", {"script_path": "bad.py"})
        assert not failed.is_error and failed.structured_content["passed"] is False
        assert failed.structured_content["errors"][0]["kind"] == "syntax_error"


def test_cli_smoke_prints_one_json_verdict_and_exits_1_on_failure(tmp_path, capsys):
    from mint_migrate.cli import main

    script = write(tmp_path, "bad.py", "def oops(:\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["smoke", str(script), "--json"])
    assert exit_info.value.code == 1
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["passed"] is False and verdict["errors"][0]["kind"] == "syntax_error"
    with pytest.raises(SystemExit):
        main(["smoke", str(script)])
    human = capsys.readouterr().out
    assert "smoke run FAILED" in human and "error [syntax_error]" in human and "fix:" in human
