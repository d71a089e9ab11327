"""Redaction from one list (mint_migrate/smoke/redaction.py): every key the run can see (the
environment, every .env file it reads, the CLI's own arguments), third-party tokens (HF_TOKEN,
WANDB_API_KEY, ...) and URL credentials, matched wherever they appear, glued to other characters
or not; and one .env reader: preflight and a generated train.py agree on what a run sees."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mint_migrate.smoke import format_verdict, run_smoke
from mint_migrate.smoke.redaction import redact, visible_secrets

CLI = str(Path(sys.executable).parent / "mint-migrate")
DOTENV_KEY = "dotenv-Zq7Kp2Vw9Xb4"  # no sk- shape: only the list of visible secrets catches it
ENV_KEY = "env-key-Rt5Yh8Jm3Nc6"
HF = "hfvalue-Lk4Pq9Wz2Ty7"
WANDB = "0123456789abcdef0123456789abcdef01234567"
URL_KEY = "urlkey-Gx3Vb8Nm1Qw5"
SECRET_SHAPES = (DOTENV_KEY, ENV_KEY, HF, WANDB, URL_KEY)


@pytest.fixture
def keys(tmp_path, monkeypatch):
    """A different MINT_API_KEY in the environment than in the script's .env, and third-party tokens."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MINT_API_KEY", ENV_KEY)
    monkeypatch.setenv("HF_TOKEN", HF)
    monkeypatch.setenv("WANDB_API_KEY", WANDB)
    monkeypatch.delenv("TINKER_API_KEY", raising=False)
    (tmp_path / ".env").write_text(f"MINT_API_KEY={DOTENV_KEY}\nDEBUG=1\n", encoding="utf-8")
    return tmp_path


def assert_clean(text: str) -> None:
    for secret in SECRET_SHAPES:
        assert secret not in text and secret[4:] not in text, (secret, text[:2000])


def test_every_visible_key_is_redacted_glued_or_not(keys):
    secrets = visible_secrets(keys / "train.py", argv=["smoke", "--hf-token", "argflag-Pw8Xc3Vb6", "--x=1"])
    text = (
        f"a{DOTENV_KEY}b {ENV_KEY}_x x{HF} wandb:{WANDB}; argflag-Pw8Xc3Vb6 "
        f"https://user:{URL_KEY}@h/p https://h/p?key={URL_KEY}&n=1 token={URL_KEY}"
    )
    cleaned = redact(text, secrets)
    assert_clean(cleaned)
    assert "argflag-Pw8Xc3Vb6" not in cleaned and "DEBUG" not in secrets and "1" not in secrets
    assert redact("METRIC step=1 loss=1.25 tokens=512 step_s=0.1") == "METRIC step=1 loss=1.25 tokens=512 step_s=0.1"


def test_preflight_never_echoes_a_key_in_the_base_url(tmp_path):
    env = dict(os.environ, MINT_BASE_URL=f"http://user:{URL_KEY}@127.0.0.1:9/?key={URL_KEY}", MINT_API_KEY="sk-x")
    done = subprocess.run([CLI, "preflight", "--json"], capture_output=True, text=True, timeout=60, env=env,
                          cwd=tmp_path)
    assert URL_KEY not in done.stdout and URL_KEY not in done.stderr
    assert "key=***" in done.stdout


def test_preflight_and_a_generated_train_py_read_dot_env_alike(tmp_path):
    """./.env sets MINT_API_KEY empty, the script's folder has a key: load_dotenv keeps the empty
    value, so train.py sees no key; preflight must say so too (it said "found")."""
    app = tmp_path / "app"
    done = subprocess.run([CLI, "scaffold", "sft", "--out", str(app / "train.py")], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    (tmp_path / ".env").write_text("MINT_API_KEY=\n", encoding="utf-8")
    (app / ".env").write_text("MINT_API_KEY=sk-beside-the-script-1234\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("MINT_API_KEY", "TINKER_API_KEY")}
    seen = subprocess.run(
        [sys.executable, "-c", "import os, pathlib, sys; sys.path.insert(0, 'app'); import mint_run; "
         "mint_run.load_dotenv(pathlib.Path('app').resolve()); print(repr(os.environ.get('MINT_API_KEY')))"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert seen.stdout.strip() == "''", seen.stderr[-2000:]
    done = subprocess.run([CLI, "preflight", str(app / "train.py"), "--json"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env=env)
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["MINT_API_KEY"]["status"] == "fail" and "not set" in checks["MINT_API_KEY"]["message"]


LEAKS_EVERYTHING = f"""\
import os, sys
assert "--smoke" in sys.argv and "--steps" in sys.argv
glued = "x" + {DOTENV_KEY!r} + "y"
print(f"RUN served_model={{glued}}", flush=True)
print(f"METRIC step=1 loss=1.5 tokens=4 step_s=0.1 hf={{os.environ['HF_TOKEN']}}", flush=True)
print(f"SAMPLE step=1 text=\\"wandb{{os.environ['WANDB_API_KEY']}} https://h/?token={URL_KEY}\\"", flush=True)
print("METRIC step=2 loss=1.25 tokens=4 step_s=0.1", flush=True)
print("METRIC done=1 steps=2", flush=True)
raise SystemExit(f"failed with {{glued}} {{os.environ['HF_TOKEN']}}")
"""


@pytest.mark.slow
def test_a_smoke_verdict_shows_none_of_them(keys):
    script = keys / "train.py"
    script.write_text(LEAKS_EVERYTHING, encoding="utf-8")
    seen = []
    verdict = run_smoke(script, steps=2, timeout_s=120, on_progress=seen.append)
    assert verdict.steps_done == 2, format_verdict(verdict)
    assert "***" in verdict.model and "***" in verdict.sample_text
    assert_clean(verdict.model_dump_json())
    assert_clean(format_verdict(verdict))
    for progress in seen:
        assert_clean(progress.model_dump_json())
