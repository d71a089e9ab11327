"""Shared fixtures: one mint-local server (tiny model, CPU) for the whole test session; and the
session's guards: nothing leaves loopback (netfence) and no thread builds AST objects unlocked."""

from __future__ import annotations

import os
import sys
import threading

import pytest

# The SDK's telemetry would report to the endpoint every client is built for, and formats a
# traceback (CPython 3.11 parses each source line for it) on its own thread for every failed
# request: the race that made ast.parse fail with "AST constructor recursion depth mismatch".
# Set before anything starts, so every subprocess (CLI runs, smoke scripts) inherits it.
os.environ["TINKER_TELEMETRY"] = "0"
# Nothing here uses the Hugging Face Hub, and huggingface_hub reads these once, when first imported:
# without them, building request headers fetches an "agent registry" from huggingface.co even for
# local_files_only loads (a DNS lookup the network fence caught in test_scaffolds' dry runs).
os.environ.update(HF_HUB_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1", TRANSFORMERS_OFFLINE="1")

from netfence import pytest_runtest_logfinish  # noqa: F401 - a hook here: names the test that left loopback
from netfence import pytest_sessionfinish as _netfence_finish
from netfence import pytest_sessionstart as _netfence_start

from mint_local.launcher import LocalServer
from mint_local.testing import TEST_API_KEY, TEXT
from mint_migrate import pyparse

# As the MCP server does: ast.parse from any code (traceback's caret anchors, literal_eval) waits
# for the lock our own parses hold.
pyparse.serialise_stdlib_ast_parse()
_unlocked_ast: list[str] = []


def _ast_audit(event: str, args: tuple) -> None:
    """Record AST objects built off the main thread without pyparse's lock (the 3.11 race)."""
    if event != "compile" or threading.current_thread() is threading.main_thread():
        return
    caller = sys._getframe(1)
    if "PyCF_ONLY_AST" not in caller.f_code.co_names or pyparse._AST_LOCK._is_owned():
        return  # compiling to code builds no AST objects; under the lock it cannot race
    where = f"{caller.f_code.co_filename}:{caller.f_lineno} in {caller.f_code.co_name}"
    _unlocked_ast.append(f"thread {threading.current_thread().name!r}: {where}")


def pytest_sessionstart(session: pytest.Session) -> None:
    sys.addaudithook(_ast_audit)
    _netfence_start(session)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _netfence_finish(session, exitstatus)
    if _unlocked_ast:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        shown = "\n  ".join(dict.fromkeys(_unlocked_ast))
        reporter.write_line(
            "AST: built off the main thread without mint_migrate.pyparse's lock (CPython 3.11 can fail "
            f"both parses):\n  {shown}",
            red=True,
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def mint_local_server(tmp_path_factory: pytest.TempPathFactory):
    """A running mint-local (`.base_url`, `.model_name`, `.state_dir`), stopped after the session."""
    root = tmp_path_factory.mktemp("mint-local")
    server = LocalServer.start(model="tiny", device="cpu", state_dir=root / "state", log_path=root / "server.log")
    yield server
    server.stop()


@pytest.fixture
def mint_env(monkeypatch: pytest.MonkeyPatch, mint_local_server: LocalServer) -> LocalServer:
    """Point `import mint` code at the session server with an sk- test key."""
    for prefix in ("MINT", "TINKER"):
        # mint copies MINT_* to TINKER_* only when first imported, so set both.
        monkeypatch.setenv(f"{prefix}_BASE_URL", mint_local_server.base_url)
        monkeypatch.setenv(f"{prefix}_API_KEY", TEST_API_KEY)
    return mint_local_server


@pytest.fixture(scope="session", autouse=True)
def quiet_sdk_clients_at_exit():
    """Stop every SDK client's heartbeat and telemetry once the tests are done.

    Clients made by tests keep a background event loop whose native HTTP transport (pyqwest) can
    abort the interpreter if teardown meets a request in flight (curioswitch/pyqwest#164): a green
    run would end in SIGABRT. With the periodic requests cancelled, nothing is in flight at exit.
    """
    yield
    import gc
    import sys

    if "tinker" not in sys.modules:
        return
    from tinker.lib.internal_client_holder import InternalClientHolder

    holders = [obj for obj in gc.get_objects() if isinstance(obj, InternalClientHolder)]
    for holder in holders:
        holder.close()  # cancels the heartbeat and stops telemetry, without waiting
        # The same cleanup again, waited on: it returns once the cancelled heartbeat has ended.
        holder.run_coroutine_threadsafe(holder._async_cleanup()).result(timeout=10)


@pytest.fixture(scope="module")
def sc(mint_local_server):
    """A mint ServiceClient on the session server (one per test module)."""
    import mint

    return mint.ServiceClient(base_url=mint_local_server.base_url, api_key=TEST_API_KEY)


@pytest.fixture(scope="module")
def http(mint_local_server):
    """Raw HTTP to the session server, for what the SDK would never send."""
    import httpx

    with httpx.Client(base_url=mint_local_server.base_url, headers={"X-API-Key": TEST_API_KEY}, timeout=60) as client:
        yield client


@pytest.fixture(scope="module")
def tokens(sc, mint_local_server):
    """testing.TEXT in the served model's tokens."""
    return sc.create_lora_training_client(base_model=mint_local_server.model_name, rank=2).get_tokenizer().encode(TEXT)
