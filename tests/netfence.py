"""Tests never leave the machine: a session that tried to reach a non-loopback address fails.

Two detectors, both reported at the end of the session:
- the kernel: `make test` runs pytest in a network namespace of its own whose only interface is
  loopback (scripts/loopback-only). There any attempt to reach another address, by any process
  of the session and in any language (the SDK's HTTP transport is native Rust code), finds no
  route, and the kernel counts it (OutNoRoutes in /proc/net/snmp and /proc/net/snmp6, per
  namespace). Any increase over the session fails it.
- Python's audit hooks, wherever pytest runs: every socket connect / sendto of this process to an
  address that is not loopback, and every lookup of a name other than localhost or this host's,
  is recorded.

Also a pytest plugin (`-p netfence`) so a child session can prove the detectors work.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from pathlib import Path

import pytest

NETNS_ENV = "MINT_TEST_NETNS"  # set by scripts/loopback-only inside the namespace it made
LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", ""}

_attempts: list[str] = []
_baseline: int | None = None
_last: int | None = None
_by_test: list[str] = []
_hooked = False


def is_local(host: object) -> bool:
    if not isinstance(host, str):
        return True  # not an internet address (AF_UNIX paths are str, but come without a port)
    name = host.strip("[]").split("%")[0].lower()
    if name in LOCAL_NAMES:
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False  # a host name other than localhost: the lookup alone would leave the machine
    return address.is_loopback or address.is_unspecified


def _audit(event: str, args: tuple) -> None:
    if event == "socket.getaddrinfo":  # a name looked up is a DNS query leaving the machine
        host = args[0].decode() if isinstance(args[0], bytes) else args[0]
        if host is not None and not is_local(host) and host != socket.gethostname():
            _attempts.append(f"{event} of {host} (pid {os.getpid()})")
        return
    if event not in ("socket.connect", "socket.sendto", "socket.sendmsg"):
        return
    address = args[1] if len(args) > 1 else None
    if isinstance(address, tuple) and address and not is_local(address[0]):
        _attempts.append(f"{event} to {address[0]}:{address[1] if len(address) > 1 else '?'} (pid {os.getpid()})")


def private_namespace() -> bool:
    """Whether this process runs in a namespace of its own with loopback as the only interface."""
    if os.environ.get(NETNS_ENV) != "1":
        return False
    try:
        return [name for _, name in socket.if_nameindex()] == ["lo"]
    except OSError:
        return False


def kernel_attempts() -> int | None:
    """Packets this network namespace could not route (IPv4 + IPv6), or None outside one."""
    if not private_namespace():
        return None
    lines = Path("/proc/net/snmp").read_text().splitlines()
    header, values = [line.split() for line in lines if line.startswith("Ip:")][:2]
    count = int(values[header.index("OutNoRoutes")])
    for line in Path("/proc/net/snmp6").read_text().splitlines():
        name, _, value = line.partition(" ")
        if name == "Ip6OutNoRoutes":
            count += int(value.strip())
    return count


def pytest_sessionstart(session: pytest.Session) -> None:
    global _baseline, _last, _hooked
    if not _hooked:
        sys.addaudithook(_audit)  # cannot be removed; it only records
        _hooked = True
    _baseline = _last = kernel_attempts()


def pytest_runtest_logfinish(nodeid: str, location: tuple) -> None:
    """Name the test during which the kernel count grew (a session server's packets may land on
    whichever test is running, but the count itself is exact)."""
    global _last
    now = kernel_attempts()
    if now is not None and _last is not None and now > _last:
        _by_test.append(f"{nodeid}: {now - _last} packet(s)")
    _last = now


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    problems = list(dict.fromkeys(_attempts))
    now = kernel_attempts()
    if _baseline is not None and now is not None and now > _baseline:
        problems.append(
            f"{now - _baseline} packet(s) to non-loopback addresses (kernel count in this session's network "
            "namespace: a connection, a DNS lookup or a datagram, from any process of the session)"
        )
        problems += _by_test
    if not problems:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = "NETWORK: tests must stay on loopback, and this session tried to leave it:\n  " + "\n  ".join(problems)
    if reporter is not None:
        reporter.write_line(message, red=True, bold=True)
    else:
        print(message, file=sys.stderr)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
