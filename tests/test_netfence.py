"""The network fence really detects: child test sessions that try to leave loopback fail, a
session that stays on it passes. Each child runs in a network namespace of its own
(scripts/loopback-only), so its attempts reach nothing, not even this session's counters."""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LOOPBACK_ONLY = REPO / "scripts" / "loopback-only"
TESTS = Path(__file__).resolve().parent


def namespaces_work() -> bool:
    return shutil.which("unshare") is not None and subprocess.run(["unshare", "-rn", "true"]).returncode == 0


pytestmark = pytest.mark.skipif(not namespaces_work(), reason="needs `unshare -rn` (a Linux network namespace)")


def child_session(tmp_path: Path, test_source: str, *, kernel: bool = True) -> subprocess.CompletedProcess:
    """Run `test_source` as a pytest session with the fence plugin, inside a fresh namespace."""
    (tmp_path / "test_child.py").write_text(textwrap.dedent(test_source), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(TESTS))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "netfence", "-p", "no:cacheprovider", "test_child.py"]
    if not kernel:  # the namespace still keeps the attempt in, but only the audit hook may see it
        command = ["env", "MINT_TEST_NETNS=0", *command]
    return subprocess.run(
        [str(LOOPBACK_ONLY), *command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )


def test_a_subprocess_connecting_outside_loopback_fails_the_session(tmp_path):
    # A separate process (as the SDK's native transport is to Python): only the kernel count sees it.
    done = child_session(
        tmp_path,
        """
        import subprocess, sys

        def test_reaches_out():
            code = "import socket; socket.socket().connect_ex(('192.0.2.1', 443))"
            subprocess.run([sys.executable, "-c", code], check=True)
        """,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 passed" in done.stdout  # the test itself passed; the fence failed the session
    assert "NETWORK: tests must stay on loopback" in done.stdout
    assert "test_child.py::test_reaches_out: 1 packet(s)" in done.stdout


def test_a_dns_lookup_of_a_remote_name_fails_the_session(tmp_path):
    done = child_session(
        tmp_path,
        """
        import socket

        def test_looks_up():
            try:
                socket.getaddrinfo("mint.macaron.xin", 443)
            except OSError:
                pass
        """,
    )
    assert done.returncode == 1 and "NETWORK:" in done.stdout, done.stdout + done.stderr


def test_python_lookups_are_caught_by_the_audit_hook_too(tmp_path):
    done = child_session(
        tmp_path,
        """
        import socket

        def test_looks_up():
            try:
                socket.getaddrinfo("huggingface.co", 443)
            except OSError:
                pass
        """,
        kernel=False,
    )
    assert done.returncode == 1 and "socket.getaddrinfo of huggingface.co" in done.stdout, done.stdout


def test_python_connects_are_caught_by_the_audit_hook_too(tmp_path):
    done = child_session(
        tmp_path,
        """
        import socket

        def test_connects():
            socket.socket().connect_ex(("192.0.2.1", 443))
        """,
        kernel=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "socket.connect to 192.0.2.1:443" in done.stdout


def test_a_session_on_loopback_passes(tmp_path):
    done = child_session(
        tmp_path,
        """
        import socket

        def test_local_server():
            with socket.socket() as server:
                server.bind(("127.0.0.1", 0))
                server.listen()
                with socket.create_connection(server.getsockname()) as client:
                    client.sendall(b"hello")
            socket.getaddrinfo("localhost", 80)
        """,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "NETWORK" not in done.stdout
