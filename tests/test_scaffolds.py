"""The rendered train.py scripts, run for real: --dry-run offline, 2-step smoke runs and resume on mint-local.

The smoke runs drive each kind x loss variant as its own process (`python train.py --smoke`) through
the real SDK over HTTP against the session's mint-local server (tests/conftest.py).
"""

import concurrent.futures
import functools
import importlib.util
import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mint_migrate.render import ScaffoldOptions, render_scaffold, scaffold_variants, write_scripts
from mint_migrate.smoke import RunOutput

VARIANTS = scaffold_variants()
IDS = [f"{kind}-{loss}" if loss else kind + "-throughput" * fast for kind, loss, fast in VARIANTS]
RL_KINDS = {"grpo"}


@functools.cache
def rendered(kind: str, loss_fn: str | None, throughput: bool = False) -> str:
    return render_scaffold(ScaffoldOptions(kind=kind, loss_fn=loss_fn, throughput=throughput))


def write_script(
    directory: Path, kind: str, loss_fn: str | None, source: str | None = None, throughput: bool = False
) -> Path:
    name = f"train_{kind}_{loss_fn or 'default'}{'_throughput' * throughput}.py"
    return write_scripts(directory, source if source is not None else rendered(kind, loss_fn, throughput), name)


@pytest.fixture(scope="session")
def tiny_tokenizer_dir() -> str:
    """The tiny model's folder (tokenizer.json with a chat template), built offline and cached."""
    from mint_local.tiny_model import ensure_tiny_model

    return str(ensure_tiny_model("tiny"))


# --- --dry-run: in this process, credentials removed and the network blocked ---------------------


@pytest.fixture
def offline(monkeypatch):
    """No MinT credentials and no network: any socket connection fails the test."""
    for name in ("MINT_API_KEY", "MINT_BASE_URL", "TINKER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # dry_run sets it too; monkeypatch restores it afterwards

    def refuse(self, address):
        raise AssertionError(f"--dry-run tried to connect to {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


_loaded = 0


def run_main(path: Path, argv: list[str], capsys) -> str:
    """Import a rendered script as a module and call its main(argv); returns what it printed."""
    global _loaded
    _loaded += 1
    spec = importlib.util.spec_from_file_location(f"rendered_scaffold_{_loaded}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    try:
        spec.loader.exec_module(module)
        capsys.readouterr()
        module.main(argv)
    finally:
        del sys.modules[spec.name]
    return capsys.readouterr().out


def dry_run_argv(kind: str) -> list[str]:
    return ["--dry-run"] + (["--teacher-path", "tinker://teacher/sampler_weights/final"] if kind == "distill" else [])


@pytest.mark.parametrize(("kind", "loss_fn", "throughput"), VARIANTS, ids=IDS)
def test_dry_run_needs_no_credentials_and_no_network(kind, loss_fn, throughput, tmp_path, offline, capsys):
    out = run_main(write_script(tmp_path, kind, loss_fn, throughput=throughput), dry_run_argv(kind), capsys)
    assert f"DRYRUN ok kind={kind} rows=4" in out
    # The default base model has no local snapshot here: the text checks still ran.
    assert "tokenizer=unavailable_offline" in out and "PROMPT " in out
    if loss_fn:
        assert f"loss_fn={loss_fn}" in out


@pytest.mark.parametrize("kind", ["sft", "grpo", "dpo", "distill"])
def test_dry_run_with_a_local_tokenizer_checks_tokens(kind, tmp_path, offline, capsys, tiny_tokenizer_dir):
    argv = dry_run_argv(kind) + ["--tokenizer", tiny_tokenizer_dir]
    out = run_main(write_script(tmp_path, kind, None), argv, capsys)
    lines = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in out.splitlines() if " " in line}
    assert lines["DRYRUN"].startswith(f"ok kind={kind}") and "unavailable" not in lines["DRYRUN"]
    prompt = json.loads(lines["PROMPT"])
    if kind == "sft":
        # The prompt is masked and only the assistant's answer (with its end of turn) is trained.
        assert prompt.endswith("<|im_start|>assistant\n") and "Paris" not in prompt
        assert json.loads(lines["TARGET"]) == "The capital of France is Paris.<|im_end|>\n"
    elif kind == "dpo":
        assert json.loads(lines["CHOSEN"]) == "The capital of France is Paris.<|im_end|>\n"
    else:
        assert prompt.endswith("<|im_start|>assistant\n")
        assert "stop=[2045]" in lines["DRYRUN"]  # <|im_end|>: the tiny tokenizer's eos and end of turn


def test_steps_default_comes_from_the_render_and_smoke_caps_it(tmp_path, offline, capsys):
    script = write_script(tmp_path, "grpo", None, render_scaffold(ScaffoldOptions(kind="grpo", steps=7)))
    assert "steps=7 " in run_main(script, ["--dry-run"], capsys)
    assert "steps=2 " in run_main(script, ["--dry-run", "--smoke"], capsys)
    assert "steps=3 " in run_main(script, ["--dry-run", "--smoke", "--steps", "3"], capsys)
    # Without a rendered default: one pass over the data (4 rows, 8 prompts per step).
    assert "steps=1 " in run_main(write_script(tmp_path, "grpo", None), ["--dry-run"], capsys)


def test_dry_run_rejects_bad_data_with_the_row_number(tmp_path, offline, capsys):
    data = tmp_path / "bad.jsonl"
    data.write_text('{"prompt": "1+1?", "answer": "2"}\n{"prompt": "no answer here"}\n', encoding="utf-8")
    with pytest.raises(SystemExit, match='row 2: needs "answer"'):
        run_main(write_script(tmp_path, "grpo", None), ["--dry-run", "--data", str(data)], capsys)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"prompt": "p", "completion": "c"}\n{oops\n', encoding="utf-8")
    with pytest.raises(SystemExit, match=r"broken.jsonl:2: not valid JSON"):
        run_main(write_script(tmp_path, "sft", None), ["--dry-run", "--data", str(broken)], capsys)


def test_dry_run_checks_the_reward_function_on_the_reference_answers(tmp_path, offline, capsys):
    data = tmp_path / "words.jsonl"
    data.write_text('{"prompt": "Spell the answer.", "answer": "forty-two"}\n', encoding="utf-8")
    with pytest.raises(SystemExit, match="placeholder reward gives the reference answer 'forty-two' no reward"):
        run_main(write_script(tmp_path, "grpo", None), ["--dry-run", "--data", str(data)], capsys)


def test_bad_arguments_stop_with_a_message(tmp_path, offline, capsys):
    with pytest.raises(SystemExit, match="--steps must be >= 1"):
        run_main(write_script(tmp_path, "sft", None), ["--dry-run", "--steps", "0"], capsys)
    with pytest.raises(SystemExit, match="--group-size must be >= 2"):
        run_main(write_script(tmp_path, "grpo", None), ["--dry-run", "--group-size", "1"], capsys)
    with pytest.raises(SystemExit, match="Give --teacher-path"):
        run_main(write_script(tmp_path, "distill", None), ["--dry-run"], capsys)


@pytest.mark.slow
def test_dry_run_as_a_command_without_any_credentials(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINT_", "TINKER_"))}
    script = write_script(tmp_path, "dpo", None)
    done = subprocess.run(
        [sys.executable, str(script), "--dry-run"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "DRYRUN ok kind=dpo" in done.stdout


# --- smoke runs against mint-local ---------------------------------------------------------------


def server_env(server) -> dict[str, str]:
    from mint_local.testing import TEST_API_KEY

    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINT_", "TINKER_"))}
    env.update(MINT_BASE_URL=server.base_url, MINT_API_KEY=TEST_API_KEY, HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    return env


def run_script(script: Path, args: list[str], env: dict[str, str], timeout: float = 300) -> tuple[int, str, RunOutput]:
    done = subprocess.run(
        [sys.executable, str(script), *args],
        cwd=script.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    output = RunOutput()
    for line in done.stdout.splitlines():
        output.add(line)
    return done.returncode, done.stdout + done.stderr, output


@pytest.fixture(scope="module")
def smoke_runs(mint_local_server, tmp_path_factory):
    """Every kind x loss variant, 2 smoke steps each, two at a time (they are separate processes)."""
    root = tmp_path_factory.mktemp("smoke-runs")
    env = server_env(mint_local_server)

    def one(variant):
        kind, loss_fn, throughput = variant
        script = write_script(root, kind, loss_fn, throughput=throughput)
        log_dir = root / f"log_{kind}_{loss_fn}_{throughput}"
        args = ["--smoke", "--steps", "2", "--base-model", mint_local_server.model_name, "--log-dir", str(log_dir)]
        return variant, (*run_script(script, args, env), log_dir)

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, VARIANTS))


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "loss_fn", "throughput"), VARIANTS, ids=IDS)
def test_two_step_smoke_run_on_mint_local(kind, loss_fn, throughput, smoke_runs, mint_local_server):
    code, log, output, log_dir = smoke_runs[(kind, loss_fn, throughput)]
    assert code == 0, log[-3000:]
    assert [int(s["step"]) for s in output.steps] == [1, 2]
    losses = output.losses()
    assert len(losses) == 2 and all(math.isfinite(v) for v in losses), output.steps
    assert all(float(s["step_s"]) > 0 and int(s["tokens"]) > 0 for s in output.steps)
    assert output.run["served_model"] == mint_local_server.model_name
    assert output.done["steps"] == "2" and output.done["checkpoint"].startswith("tinker://")
    records = [json.loads(line) for line in (log_dir / "checkpoints.jsonl").read_text().splitlines()]
    assert records[-1]["step"] == 2 and records[-1]["state_path"] == output.done["checkpoint"]
    assert len((log_dir / "metrics.jsonl").read_text().splitlines()) >= 3
    if kind in RL_KINDS:
        # A real group with different rewards was trained on (no faking: counted from real samples).
        assert output.accepted_groups() >= 1 and output.trained_groups() >= 1
        assert not throughput or all(s["early_stop"] == "complete" for s in output.steps)
        # The built-in examples and the placeholder reward ran, and the RUN line says so.
        assert output.run["data"] == "built-in" and output.run["reward"] == "placeholder"
        assert output.samples and isinstance(output.samples[-1]["text"], str)
        assert f"loss_fn={loss_fn or 'importance_sampling'}" in log
    if kind == "distill":
        assert output.samples and "teacher=tinker://" in log


@pytest.mark.slow
def test_resume_continues_at_step_3_with_the_optimizer_state(mint_local_server, tmp_path):
    """2 steps + --resume 2 steps == 4 uninterrupted steps; a weights-only reload does not match."""
    env = server_env(mint_local_server)
    script = write_script(tmp_path, "sft", None)
    common = ["--smoke", "--base-model", mint_local_server.model_name, "--learning-rate", "0.01", "--save-every", "1"]

    # The resume recipe is in mint_run.py: the contrast run gets its own folder with load_state there.
    weights_only = write_script(tmp_path / "weights_only", "sft", None)
    companion = weights_only.parent / "mint_run.py"
    changed = companion.read_text().replace("load_state_with_optimizer(", "load_state(")
    assert changed != companion.read_text()
    companion.write_text(changed)

    def run(path: Path, *args: str) -> tuple[int, str, RunOutput]:
        return run_script(path, [*common, *args], env)

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        straight_run = pool.submit(run, script, "--steps", "4", "--log-dir", str(tmp_path / "straight"))
        code, log, first = run(script, "--steps", "2", "--log-dir", str(tmp_path / "split"))
        assert code == 0, log[-3000:]
        saved = first.done["checkpoint"]
        assert saved.endswith("/weights/step-000002")
        # The same resume with load_state (weights only, Adam moments lost), for contrast.
        reload_run = pool.submit(run, weights_only, "--steps", "2", "--log-dir", str(tmp_path / "w"), "--resume", saved)
        code, log, resumed = run(script, "--steps", "2", "--log-dir", str(tmp_path / "split"), "--resume", saved)
        assert code == 0, log[-3000:]
        code, straight_log, straight = straight_run.result()
        assert code == 0, straight_log[-3000:]
        code, reload_log, reloaded = reload_run.result()
        assert code == 0, reload_log[-3000:]

    assert f"RESUME path={saved} step=2" in log
    assert [int(s["step"]) for s in resumed.steps] == [3, 4] and resumed.done["steps"] == "4"
    assert resumed.losses() == pytest.approx(straight.losses()[2:], rel=1e-5, abs=1e-6)
    # Weights alone give the same step-3 loss but a different update, so step 4 differs.
    assert reloaded.losses()[0] == pytest.approx(straight.losses()[2], rel=1e-5)
    assert reloaded.losses()[1] != pytest.approx(straight.losses()[3], rel=1e-4)


@pytest.mark.slow
def test_grpo_knobs_overlap_streaming_and_tail_grace(mint_local_server, tmp_path):
    env = server_env(mint_local_server)
    script = write_script(tmp_path, "grpo", None, throughput=True)
    args = [
        "--smoke", "--steps", "3", "--base-model", mint_local_server.model_name, "--log-dir", str(tmp_path / "log"),
        "--overlap", "--stream-minibatches-per-step", "2", "--min-accepted-groups", "1", "--tail-grace-seconds", "0.5",
        "--max-concurrent-requests", "2",
    ]  # fmt: skip
    code, log, output = run_script(script, args, env)
    assert code == 0, log[-3000:]
    config = next(line for line in log.splitlines() if line.startswith("CONFIG "))
    for knob in (
        "groups_per_batch=2",
        "group_size=4",
        "max_concurrent_requests=2",
        "stream_minibatches_per_step=2",
        "min_accepted_groups=1",
        "tail_grace_seconds=0.5",
        "overlap=True",
    ):
        assert knob in config, knob
    assert [int(s["step"]) for s in output.steps] == [1, 2, 3]
    for step in output.steps:
        assert step["early_stop"] in ("complete", "tail_grace")
        assert int(step["accepted"]) + int(step["dropped"]) >= int(step["trained"])
        assert {"accepted", "trained", "dropped", "stale", "cut"} <= set(step)
    assert output.trained_groups() >= 1 and all(math.isfinite(v) for v in output.losses())

    # The async resume path (double-awaited load_state_with_optimizer_async), overlap engine included.
    code, log, resumed = run_script(script, [*args[:2], "1", *args[3:], "--resume", "latest"], env)
    assert code == 0, log[-3000:]
    assert f"RESUME path={output.done['checkpoint']} step=3" in log
    assert [int(s["step"]) for s in resumed.steps] == [4] and resumed.done["steps"] == "4"
