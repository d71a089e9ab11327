"""Shared fixtures: one mint-local server (tiny model, CPU) for the whole test session."""

from __future__ import annotations

import pytest

from mint_local.launcher import LocalServer
from mint_local.testing import TEST_API_KEY


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
