"""The mint-local servers smoke runs use: one per (model, device), started on first use, reused for
the rest of the process (an MCP session runs many smoke runs) and stopped at exit."""

import atexit
import contextlib
import threading

_SERVERS: dict[tuple[str, str], object] = {}
_SERVERS_LOCK = threading.Lock()


def _alive(server) -> bool:
    return server.proc.poll() is None


def running_server(model: str = "tiny", device: str = "auto"):
    """The live server this process started for (model, device), or None."""
    with _SERVERS_LOCK:
        server = _SERVERS.get((model, device))
        return server if server is not None and _alive(server) else None


def local_server(model: str = "tiny", device: str = "auto"):
    """A running mint-local for (model, device): the one this process started before, or a new one."""
    from mint_local.launcher import LocalServer

    key = (model, device)
    with _SERVERS_LOCK:
        server = _SERVERS.get(key)
        if server is not None and _alive(server):
            return server
        if server is not None:
            server.stop()
        # hosted_parity: a script that only works against tinker (not MinT) must fail here too.
        server = LocalServer.start(model=model, device=device, serve_any_model=True, hosted_parity=True, timeout_s=180)
        if not _SERVERS:
            atexit.register(stop_local_servers)
        _SERVERS[key] = server
        return server


def stop_local_servers() -> None:
    with _SERVERS_LOCK:
        for server in _SERVERS.values():
            with contextlib.suppress(Exception):  # best effort at exit
                server.stop()
        _SERVERS.clear()
