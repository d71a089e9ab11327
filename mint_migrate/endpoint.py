"""The one way this project asks a MinT endpoint anything: plain HTTP with the SDK's routes and
header, bounded timeouts, and one reading of the answers.

`Endpoint.probe()` is the check a run needs before it starts (the SDK alone retries a dead URL
for minutes): POST /api/v1/client/config, as the SDK's constructor does, read as connection /
auth / wrong_server. Smoke runs and preflight use it; the scaffolds' `check_endpoint` (generated
code, which cannot import this package) makes the same request and reads it the same way.
Preflight also asks /api/v1/healthz and /api/v1/get_server_capabilities through the same class.
The API key goes in the X-API-Key header only and never into a message.
"""

import ipaddress
import re
import socket
import threading
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

import httpx

SDK_VERSION = "0.22.0"  # what the pinned tinker sends to client/config
DNS_TIMEOUT_S = 2.0

ProbeProblem = Literal["connection", "auth", "wrong_server"]


# Credentials a URL may carry: user:password@ and query parameters named for a key, a token, a
# secret, a password or a signature (`?key=`, `&access_token=`, `X-Amz-Signature=`).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s/?#@:]*:)[^\s/?#@]*@")
_QUERY_CREDENTIAL = re.compile(
    r"(?i)([?&;][\w.\-]*(?:key|token|secret|password|passwd|pwd|signature|sig|auth|credentials?)=)[^&#\s'\"<>]+"
)


def redact_url_credentials(text: str) -> str:
    """`text` with every URL's password and credential query values as ***."""
    return _QUERY_CREDENTIAL.sub(r"\1***", _USERINFO.sub(r"\1***@", text))


def display_url(url: str) -> str:
    """The URL without any user:password part, and with credential query values as ***."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        netloc = parts.hostname or ""
        if parts.port:
            netloc += f":{parts.port}"
        url = parts._replace(netloc=netloc).geturl()
    return redact_url_credentials(url)


def is_loopback(url: str | None) -> bool:
    if not url:
        return False
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass
class Probe:
    """What POST /api/v1/client/config said: `problem` is None when it answered like MinT."""

    problem: ProbeProblem | None
    message: str
    config: dict = field(default_factory=dict)


class Endpoint:
    """A MinT API root, asked with bounded timeouts."""

    def __init__(self, base_url: str, api_key: str | None, *, timeout: httpx.Timeout | float = 20.0) -> None:
        self.root = base_url.rstrip("/")
        self.shown = display_url(self.root)
        self.headers = {"X-API-Key": api_key} if api_key else {}
        self.timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        parts = urlsplit(base_url)
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if parts.scheme == "https" else 80)

    def request(self, method: str, route: str, **kwargs) -> httpx.Response:
        with httpx.Client(timeout=self.timeout, headers=self.headers, follow_redirects=False) as client:
            return client.request(method, f"{self.root}{route}", **kwargs)

    def unreachable(self, exc: Exception) -> str:
        """Why a request got no answer, in words."""
        if isinstance(exc, httpx.ConnectError):
            reason = str(exc) or "connection failed"
            if "refused" in reason.lower() or "errno 111" in reason.lower():
                return f"nothing is listening at {self.host}:{self.port} (connection refused)"
            return f"cannot connect to {self.host}:{self.port} ({reason})"
        if isinstance(exc, httpx.TimeoutException):
            return f"no answer from {self.host}:{self.port} within {self.timeout.read:g} s"
        return f"{type(exc).__name__}: {exc}"

    def resolves(self) -> str | None:
        """None when the host resolves within DNS_TIMEOUT_S, else why not. getaddrinfo has no
        timeout of its own, so it runs in a daemon thread that is abandoned if it hangs."""
        try:
            ipaddress.ip_address(self.host.strip("[]"))
            return None
        except ValueError:
            pass
        outcome: dict[str, str | None] = {}

        def lookup() -> None:
            try:
                socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
                outcome["error"] = None
            except OSError as exc:
                outcome["error"] = f"cannot resolve {self.host} ({exc.strerror or exc})"

        thread = threading.Thread(target=lookup, daemon=True)
        thread.start()
        thread.join(DNS_TIMEOUT_S)
        if thread.is_alive():
            return f"resolving {self.host} took over {DNS_TIMEOUT_S:g} s (offline?)"
        return outcome.get("error")

    def probe(self) -> Probe:
        """POST /api/v1/client/config, as the SDK's constructor does, and what the answer means."""
        try:
            response = self.request("POST", "/api/v1/client/config", json={"sdk_version": SDK_VERSION})
        except httpx.HTTPError as exc:
            return Probe("connection", f"Nothing answered at {self.shown}: {self.unreachable(exc)}")
        if response.status_code in (401, 403):
            return Probe("auth", f"{self.shown} rejected MINT_API_KEY (HTTP {response.status_code})")
        if response.status_code >= 400 or "json" not in response.headers.get("content-type", ""):
            return Probe(
                "wrong_server",
                f"{self.shown} is not a MinT server: POST /api/v1/client/config gave HTTP {response.status_code}",
            )
        try:
            config = response.json()
        except ValueError:
            return Probe("wrong_server", f"{self.shown} answered POST /api/v1/client/config with something not JSON")
        return Probe(None, f"{self.shown} answered like a MinT server", config if isinstance(config, dict) else {})
