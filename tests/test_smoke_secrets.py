"""No key leaves a smoke run, even one the script prints itself: a sentinel key (the user's, from
.env) and a key-shaped string are printed into every line the verdict reads (RUN, METRIC step,
SAMPLE, METRIC done, the exit message), and every field of every path is scanned: the verdict,
the progress reports, CLI JSON, CLI text, and the MCP tool's result and progress notifications."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client
from probes import LEAKY_SCRIPT, SENTINEL, assert_clean

from mint_migrate.server import create_server
from mint_migrate.smoke import SmokeProgress, run_smoke

CLI = str(Path(sys.executable).parent / "mint-migrate")


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def leaky(tmp_path, monkeypatch):
    for name in ("MINT_API_KEY", "TINKER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text(f"MINT_API_KEY={SENTINEL}\n", encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text(LEAKY_SCRIPT, encoding="utf-8")
    return script


@pytest.mark.slow
def test_engine_verdict_and_progress(leaky):
    seen: list[SmokeProgress] = []
    verdict = run_smoke(leaky, steps=2, timeout_s=120, on_progress=seen.append)
    # The fields really carried the keys (the script printed them there) and now hold *** instead.
    assert verdict.model == "***" and verdict.checkpoint == "tinker://***/weights/***"
    assert "***" in verdict.sample_text and "***" in verdict.errors[0].message
    assert_clean(verdict.model_dump_json(), "verdict")
    assert len(seen) == 3 and "***" in seen[1].message
    for progress in seen:
        assert_clean(progress.model_dump_json(), "progress")


@pytest.mark.slow
@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
def test_cli_output(leaky, as_json):
    env = {k: v for k, v in os.environ.items() if k not in ("MINT_API_KEY", "TINKER_API_KEY")}
    done = subprocess.run(
        [CLI, "smoke", str(leaky), "--timeout", "120", *(["--json"] if as_json else [])],
        capture_output=True, text=True, timeout=300, cwd=leaky.parent, env=env,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-1000:]
    assert "***" in done.stdout
    assert_clean(done.stdout, "stdout")
    assert_clean(done.stderr, "stderr (progress)")


@pytest.mark.slow
@pytest.mark.anyio
async def test_mcp_result_and_progress_notifications(leaky):
    messages: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")

    async with Client(create_server(leaky.parent)) as client:
        result = await client.call_tool(
            "launch_smoke_run", {"script_path": "train.py", "timeout_s": 120}, progress_callback=on_progress
        )
    assert not result.is_error and result.structured_content["model"] == "***"
    assert_clean(str(result.structured_content), "structured result")
    assert_clean(" ".join(c.text for c in result.content if hasattr(c, "text")), "text result")
    assert len(messages) == 3
    for message in messages:
        assert_clean(message, "progress notification")
