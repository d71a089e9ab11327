"""preflight against a running mint-local (all ok), a closed port (fails fast), no environment,
an endpoint without JWT auth (the sk- key bug bites), and a key that never appears in output."""

import json
import socket
import subprocess
import sys
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from mcp import Client

from mint_migrate.cli import main
from mint_migrate.preflight import (
    MAX_COOKBOOK,
    _package_dir,
    _version_tuple,
    cached_tokenizer_dir,
    holder_builds_api_key_provider,
    run_preflight,
    script_base_model,
    toolkit_replaces_api_key_provider,
)
from mint_migrate.server import create_server

SECRET = "sk-mint-preflight-9Vq4ZxL2Wb7Kt1Rm"
CHECK_NAMES = [
    "python", "mindlab-toolkit", "tinker", "sk-key-bug", "tinker-cookbook", "MINT_BASE_URL", "MINT_API_KEY",
    "endpoint-health", "endpoint-capabilities",
]
SCRIPT_CHECKS = ["base-model", "tokenizer", "lint"]


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def clean_env(monkeypatch, tmp_path_factory):
    for name in ("MINT_BASE_URL", "MINT_API_KEY", "TINKER_BASE_URL", "TINKER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))  # preflight reads ./.env, as the scripts do
    return monkeypatch


def write_script(tmp_path: Path, base_model: str) -> Path:
    """A small correct MinT SFT script whose --base-model default is `base_model`."""
    path = tmp_path / "train.py"
    path.write_text(
        textwrap.dedent(
            f'''\
            import argparse
            import os

            import mint
            from mint import types

            parser = argparse.ArgumentParser()
            parser.add_argument("--base-model", default="{base_model}")
            parser.add_argument("--learning-rate", type=float, default=2e-4)
            args = parser.parse_args()

            service_client = mint.ServiceClient(base_url=os.environ.get("MINT_BASE_URL"))
            training_client = service_client.create_lora_training_client(base_model=args.base_model, rank=8)
            tokens = [1, 2, 3, 4]
            datum = types.Datum(
                model_input=types.ModelInput.from_ints(tokens[:-1]),
                loss_fn_inputs={{"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)}},
            )
            fb = training_client.forward_backward([datum], "cross_entropy")
            training_client.optim_step(types.AdamParams(learning_rate=args.learning_rate)).result()
            print(f"METRIC step=0 loss={{fb.result().metrics['loss:sum']:.4f}}")
            '''
        ),
        encoding="utf-8",
    )
    return path


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def by_name(report):
    return {c.name: c for c in report.checks}


def run_cli(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out + captured.err


# --- against mint-local -------------------------------------------------------------------


@pytest.mark.slow
def test_all_ok_against_mint_local(mint_env, tmp_path, capsys):
    script = write_script(tmp_path, mint_env.model_name)
    report = run_preflight(script)
    assert [c.name for c in report.checks] == CHECK_NAMES + SCRIPT_CHECKS
    assert [(c.name, c.status) for c in report.checks if c.status != "ok"] == []
    assert report.ok and report.base_model == mint_env.model_name
    assert mint_env.model_name in report.supported_models
    # mint-local advertises JWT auth, so the wheel's sk- bug is present but does not bite there
    assert "enables JWT auth" in by_name(report)["sk-key-bug"].message
    code, out = run_cli(["preflight", str(script), "--json"], capsys)
    assert code == 0 and json.loads(out)["ok"] is True
    code, out = run_cli(["preflight", str(script)], capsys)
    assert code == 0 and out.rstrip().endswith("preflight (remote) passed")


@pytest.mark.slow
def test_unsupported_model_fails_against_mint_local(mint_env, tmp_path):
    report = run_preflight(write_script(tmp_path, "Qwen/Qwen3-235B-A22B-Instruct-2507"))
    check = by_name(report)["base-model"]
    assert check.status == "fail" and mint_env.model_name in check.message
    assert not report.ok


@pytest.mark.slow
@pytest.mark.anyio
async def test_mcp_preflight_tool_hides_the_key(mint_local_server, clean_env, tmp_path):
    clean_env.setenv("MINT_BASE_URL", mint_local_server.base_url)
    clean_env.setenv("MINT_API_KEY", SECRET)
    write_script(tmp_path, mint_local_server.model_name)
    async with Client(create_server(tmp_path), raise_exceptions=True) as client:
        result = await client.call_tool("preflight_check", {"script_path": "train.py"})
    assert not result.is_error
    assert result.structured_content["ok"] is True
    text = json.dumps(result.structured_content) + "".join(getattr(c, "text", "") for c in result.content)
    assert SECRET not in text and SECRET[3:] not in text
    assert f"sk-...{SECRET[-4:]}" in text


# --- offline ------------------------------------------------------------------------------


def test_closed_port_fails_fast_and_clearly(clean_env, tmp_path, capsys):
    port = closed_port()
    clean_env.setenv("MINT_BASE_URL", f"http://127.0.0.1:{port}")
    clean_env.setenv("MINT_API_KEY", SECRET)
    started = time.perf_counter()
    report = run_preflight()
    elapsed = time.perf_counter() - started
    assert elapsed < 5, f"preflight took {elapsed:.1f} s against a closed port"
    health = by_name(report)["endpoint-health"]
    assert health.status == "fail" and "connection refused" in health.message and str(port) in health.message
    assert health.fix and "mint-local serve" in health.fix
    assert by_name(report)["endpoint-capabilities"].status == "warn"
    assert not report.ok
    code, out = run_cli(["preflight"], capsys)
    assert code == 1 and "[FAIL] endpoint-health" in out and "preflight (remote) FAILED" in out
    assert SECRET not in out


def test_no_env_vars(clean_env, capsys):
    report = run_preflight()
    checks = by_name(report)
    assert checks["MINT_API_KEY"].status == "fail" and "not set" in checks["MINT_API_KEY"].message
    assert checks["MINT_BASE_URL"].status == "warn" and "not set" in checks["MINT_BASE_URL"].message
    assert checks["endpoint-health"].status == "warn" and "MINT_BASE_URL is not set" in checks["endpoint-health"].message
    assert [c.name for c in report.checks] == CHECK_NAMES
    assert not report.ok
    clean_env.setenv("TINKER_API_KEY", SECRET)
    report = run_preflight()
    assert "TINKER_API_KEY is set" in by_name(report)["MINT_API_KEY"].message
    code, out = run_cli(["preflight", "--json"], capsys)
    assert code == 1 and SECRET not in out


LOCAL_CHECKS = ["python", "mindlab-toolkit", "tinker", "sk-key-bug", "tinker-cookbook", "mint-local"]


def test_local_target_needs_no_key_or_endpoint(clean_env, tmp_path, capsys):
    """A smoke run on mint-local needs no MINT_API_KEY / MINT_BASE_URL: preflight --target local passes without."""
    script = write_script(tmp_path, "Qwen/Qwen3-8B")  # mint-local serves its own model in its place
    report = run_preflight(script, target="local")
    assert [c.name for c in report.checks] == LOCAL_CHECKS + ["lint"]
    assert report.ok and report.target == "local"
    assert by_name(report)["mint-local"].status == "ok"
    code, out = run_cli(["preflight", str(script), "--target", "local"], capsys)
    assert code == 0 and out.rstrip().endswith("preflight (local) passed")
    assert "[FAIL]" not in out and "[WARN]" not in out
    # the same environment is not ready for MinT itself
    code, out = run_cli(["preflight", str(script), "--target", "remote"], capsys)
    assert code == 1 and "[FAIL] MINT_API_KEY" in out


def test_local_target_fails_when_mint_local_cannot_start(clean_env, monkeypatch):
    import mint_migrate.preflight as preflight

    monkeypatch.setattr(preflight, "MINT_LOCAL_MODULES", ("torch", "no_such_backend_package"))
    report = run_preflight(target="local")
    check = by_name(report)["mint-local"]
    assert check.status == "fail" and "no_such_backend_package" in check.message
    assert "mint-migrate[local" in check.fix and "torch==2.13.0" in check.fix
    assert not report.ok


@pytest.mark.anyio
async def test_mcp_preflight_tool_takes_the_target(clean_env, tmp_path):
    write_script(tmp_path, "Qwen/Qwen3-8B")
    async with Client(create_server(tmp_path), raise_exceptions=True) as client:
        local = await client.call_tool("preflight_check", {"script_path": "train.py", "target": "local"})
        remote = await client.call_tool("preflight_check", {"script_path": "train.py"})
    assert local.structured_content["ok"] is True and local.structured_content["target"] == "local"
    assert remote.structured_content["ok"] is False and remote.structured_content["target"] == "remote"


def test_key_is_never_shown(clean_env, tmp_path, capsys):
    clean_env.setenv("MINT_BASE_URL", f"http://127.0.0.1:{closed_port()}")
    for key, shown, status in ((SECRET, f"sk-...{SECRET[-4:]}", "ok"), ("tml-0123456789abcdefXYZW", "tml-...XYZW", "warn"),
                               ("hunter2-but-long-enough", "...ough", "fail"), ("sk-short", "sk-...", "ok")):
        clean_env.setenv("MINT_API_KEY", key)
        report = run_preflight()
        check = by_name(report)["MINT_API_KEY"]
        assert check.status == status and shown in check.message
        dumped = report.model_dump_json()
        assert key not in dumped and key[3:] not in dumped
        for argv in (["preflight"], ["preflight", "--json"]):
            _, out = run_cli(argv, capsys)
            assert key not in out and key[3:] not in out


def test_the_env_file_beside_the_script_is_what_preflight_checks(clean_env, tmp_path):
    """The scaffolds read ./.env and a .env beside the script; preflight checks the same settings."""
    port = closed_port()
    project = tmp_path / "project"
    project.mkdir()
    (project / ".env").write_text(f"export MINT_BASE_URL=http://127.0.0.1:{port}\nMINT_API_KEY='{SECRET}'\n")
    report = run_preflight(write_script(project, "Qwen/Qwen3-0.6B"))
    checks = by_name(report)
    assert checks["MINT_API_KEY"].status == "ok" and str(project / ".env") in checks["MINT_API_KEY"].message
    assert checks["MINT_BASE_URL"].status == "ok" and str(project / ".env") in checks["MINT_BASE_URL"].message
    health = checks["endpoint-health"]
    assert health.status == "fail" and str(port) in health.message  # it asked the endpoint the .env names
    assert SECRET not in report.model_dump_json()
    clean_env.setenv("MINT_API_KEY", "sk-from-the-shell-000")  # the shell wins, as in load_dotenv()
    assert "from" not in by_name(run_preflight(project / "train.py"))["MINT_API_KEY"].message


def test_bad_base_urls(clean_env):
    clean_env.setenv("MINT_API_KEY", SECRET)
    clean_env.setenv("MINT_BASE_URL", "mint.macaron.xin")
    assert by_name(run_preflight())["MINT_BASE_URL"].status == "fail"
    clean_env.setenv("MINT_BASE_URL", f"http://user:pw@127.0.0.1:{closed_port()}/api/v1")
    report = run_preflight()
    check = by_name(report)["MINT_BASE_URL"]
    assert check.status == "warn" and "/api/v1" in check.message
    assert "pw" not in report.model_dump_json()


def test_missing_script_is_bad_usage(clean_env, tmp_path, capsys):
    with pytest.raises(FileNotFoundError):
        run_preflight(tmp_path / "nope.py")
    code, out = run_cli(["preflight", str(tmp_path / "nope.py")], capsys)
    assert code == 2 and "cannot read" in out


# --- the sk- key bug ----------------------------------------------------------------------


def test_installed_wheel_has_the_sk_key_bug():
    """The installed PyPI mindlab-toolkit 0.2.0 patches resolve_auth_provider only, and tinker
    0.22.0's holder builds ApiKeyAuthProvider itself: the combination the check reports."""
    mint_dir, tinker_dir = _package_dir("mint"), _package_dir("tinker")
    assert toolkit_replaces_api_key_provider(mint_dir) is None
    assert holder_builds_api_key_provider(tinker_dir)


def test_fixed_toolkit_source_is_recognised(tmp_path):
    fixed = tmp_path / "mint" / "mint"
    fixed.mkdir(parents=True)
    (fixed / "_auth.py").write_text(
        textwrap.dedent(
            """\
            import tinker._client as _client
            import tinker.lib.internal_client_holder as _ich

            def apply_auth_patch():
                _ich.ApiKeyAuthProvider = _MintAwareApiKeyAuthProvider
                _client.ApiKeyAuthProvider = _MintAwareApiKeyAuthProvider
            """
        ),
        encoding="utf-8",
    )
    assert toolkit_replaces_api_key_provider(tmp_path / "mint") == fixed / "_auth.py"


class _NoJwtEndpoint(BaseHTTPRequestHandler):
    """The three routes preflight and the SDK's constructor use; client/config answers with the
    SDK defaults (no JWT auth), as an endpoint that does not enable JWT does."""

    def _json(self, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/api/v1/healthz":
            self._json({"status": "ok"})
        elif self.path == "/api/v1/get_server_capabilities":
            self._json({"supported_models": [{"model_name": "Qwen/Qwen3-0.6B", "max_context_length": 32768}]})
        else:
            self.send_error(404)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/api/v1/client/config":
            self._json({})
        else:
            self.send_error(404)

    def log_message(self, *args):
        pass


@pytest.fixture
def no_jwt_endpoint():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NoJwtEndpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.slow
def test_sk_key_bug_fails_where_the_sdk_really_fails(no_jwt_endpoint, clean_env):
    clean_env.setenv("MINT_BASE_URL", no_jwt_endpoint)
    clean_env.setenv("MINT_API_KEY", SECRET)
    report = run_preflight()
    check = by_name(report)["sk-key-bug"]
    assert check.status == "fail" and "does not enable JWT auth" in check.message
    assert check.fix and "ApiKeyAuthProvider" in check.fix
    assert by_name(report)["endpoint-capabilities"].status == "ok"
    assert not report.ok
    # ... and the real SDK agrees: mint.ServiceClient() raises against that endpoint
    probe = (
        "import mint, sys\n"
        "try:\n"
        "    mint.ServiceClient(base_url=sys.argv[1], api_key=sys.argv[2])\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, no_jwt_endpoint, SECRET], capture_output=True, text=True, timeout=120)
    assert "must start with the 'tml-' prefix" in out.stdout, out.stdout + out.stderr


@pytest.mark.slow
def test_sk_key_bug_does_not_apply_to_a_generated_train_py(no_jwt_endpoint, clean_env, tmp_path):
    """A train.py mint-migrate generates passes an sk- key through itself (mint_run.accept_sk_key), so
    preflight does not fail it on an endpoint without JWT auth (test_sk_key.py runs one to its first step)."""
    from mint_migrate.render import ScaffoldOptions, scaffold

    scaffold(ScaffoldOptions(kind="sft"), output_path=str(tmp_path / "train.py"), workspace=tmp_path, overwrite=False)
    clean_env.setenv("MINT_BASE_URL", no_jwt_endpoint)
    clean_env.setenv("MINT_API_KEY", SECRET)
    check = by_name(run_preflight(tmp_path / "train.py"))["sk-key-bug"]
    assert check.status == "ok" and "mint_run.accept_sk_key" in check.message


# --- the script ---------------------------------------------------------------------------


def test_base_model_from_the_script(tmp_path):
    cases = {
        'import argparse\np = argparse.ArgumentParser()\np.add_argument("--model", default="Qwen/Qwen3-0.6B")\n': ("Qwen/Qwen3-0.6B", 3),
        'import mint\nsc = mint.ServiceClient()\ntc = sc.create_lora_training_client(base_model="Qwen/Qwen3-4B-Instruct-2507")\n': (
            "Qwen/Qwen3-4B-Instruct-2507", 3),
        'BASE_MODEL = "Qwen/Qwen3.6-35B-A3B"\n': ("Qwen/Qwen3.6-35B-A3B", 1),
        "from dataclasses import dataclass\n@dataclass\nclass Config:\n    base_model: str = 'Qwen/Qwen3-0.6B'\n": ("Qwen/Qwen3-0.6B", 4),
        "import mint\n": None,
    }
    for source, want in cases.items():
        path = tmp_path / "s.py"
        path.write_text(source, encoding="utf-8")
        assert script_base_model(path) == want, source


def test_documented_list_when_the_endpoint_cannot_be_asked(clean_env, tmp_path):
    report = run_preflight(write_script(tmp_path, "Qwen/Qwen3-0.6B"))
    check = by_name(report)["base-model"]
    assert check.status == "ok" and "documented" in check.message
    report = run_preflight(write_script(tmp_path, "meta-llama/Llama-3.1-8B"))
    assert by_name(report)["base-model"].status == "warn"
    assert by_name(report)["lint"].status == "ok"


def test_tokenizer_snapshot_in_the_hf_cache(clean_env, tmp_path):
    cache = tmp_path / "hub"
    clean_env.setenv("HF_HUB_CACHE", str(cache))
    assert cached_tokenizer_dir("Qwen/Qwen3-0.6B") is None
    report = run_preflight(write_script(tmp_path, "Qwen/Qwen3-0.6B"))
    check = by_name(report)["tokenizer"]
    assert check.status == "warn" and "huggingface-cli download Qwen/Qwen3-0.6B" in check.fix
    snapshot = cache / "models--Qwen--Qwen3-0.6B" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "tokenizer.json").write_text("{}", encoding="utf-8")
    assert cached_tokenizer_dir("Qwen/Qwen3-0.6B") == snapshot
    assert by_name(run_preflight(write_script(tmp_path, "Qwen/Qwen3-0.6B")))["tokenizer"].status == "ok"
    local = tmp_path / "my-model"
    local.mkdir()
    (local / "tokenizer_config.json").write_text("{}", encoding="utf-8")
    assert cached_tokenizer_dir(str(local)) == local


def test_lint_summary(clean_env, tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import tinker\nfrom tinker import types\np = types.SamplingParams(stop_token_ids=[1])\n", encoding="utf-8")
    check = by_name(run_preflight(script))["lint"]
    assert check.status == "fail" and "MINT040 line 1" in check.message and "--fix" in check.fix
    script.write_text("import mint\nfrom mint import types\np = types.SamplingParams(top_p=1.0, min_p=0.1)\n", encoding="utf-8")
    check = by_name(run_preflight(script))["lint"]
    assert check.status == "warn" and "MINT002" in check.message
    script.write_text("def f(:\n", encoding="utf-8")
    assert by_name(run_preflight(script))["lint"].status == "fail"


def test_cookbook_version_bound():
    assert _version_tuple("0.4.1") <= MAX_COOKBOOK
    assert _version_tuple("0.4.0") <= MAX_COOKBOOK
    assert _version_tuple("0.4.2") > MAX_COOKBOOK
    assert _version_tuple("0.6.1") > MAX_COOKBOOK
    assert _version_tuple("0.4.1.dev3") <= MAX_COOKBOOK


def test_a_train_py_and_its_companion_are_checked_together(clean_env, tmp_path):
    """A mint-migrate train.py imports mint_run.py: preflight says when it is missing, and lints it too."""
    from mint_migrate.render import COMPANION, ScaffoldOptions, render_scaffold, write_scripts

    script = write_scripts(tmp_path, render_scaffold(ScaffoldOptions(kind="grpo")))
    checks = by_name(run_preflight(script, target="local"))
    assert checks["companion"].status == "ok" and checks["lint"].status == "ok"
    assert checks["lint-companion"].status == "ok" and COMPANION in checks["lint-companion"].message
    # A pitfall put into the companion is found there, not only in train.py.
    companion = tmp_path / COMPANION
    companion.write_text(companion.read_text() + "\nBAD = types.SamplingParams(stop_token_ids=[1])\n")
    check = by_name(run_preflight(script, target="local"))["lint-companion"]
    assert check.status == "fail" and "MINT001" in check.message
    # train.py copied somewhere without it: a failed check that says what to do.
    companion.unlink()
    report = run_preflight(script, target="local")
    check = by_name(report)["companion"]
    assert not report.ok and check.status == "fail" and "is not beside it" in check.message
    assert f"copy its {COMPANION}" in check.fix and "lint-companion" not in by_name(report)
    # A script that is not a mint-migrate train.py has no companion check.
    other = tmp_path / "other.py"
    other.write_text("import mint\n", encoding="utf-8")
    assert "companion" not in by_name(run_preflight(other, target="local"))
