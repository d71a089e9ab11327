"""Shared fixtures: one mint-local server (tiny model, CPU) for the whole test session."""

from __future__ import annotations

import pytest

from mint_local.launcher import LocalServer
from mint_local.testing import TEST_API_KEY, TEXT


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
