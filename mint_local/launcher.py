"""Start and stop a mint-local server in a subprocess (no torch in the calling process).

    with LocalServer.start() as server:
        os.environ["MINT_BASE_URL"] = server.base_url
        ...  # base_model=server.model_name
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from mint_local.process import Supervised

LISTENING_PREFIX = "mint-local listening on "


class LocalServerError(RuntimeError):
    pass


class LocalServer:
    def __init__(self, proc: Supervised, base_url: str, model_name: str, state_dir: Path, log_path: Path, owns_state_dir: bool) -> None:
        self.proc = proc
        self.base_url = base_url
        self.model_name = model_name
        self.state_dir = state_dir
        self.log_path = log_path
        self._owns_state_dir = owns_state_dir
        self._owns_log = False  # set by start() for the temporary log it made

    @property
    def pid(self) -> int:
        return self.proc.pid

    @classmethod
    def start(
        cls,
        model: str = "tiny",
        device: str = "auto",
        dtype: str = "auto",
        state_dir: str | os.PathLike[str] | None = None,
        port: int = 0,
        serve_any_model: bool = False,
        hosted_parity: bool = False,
        max_context: int | None = None,
        threads: int | None = None,
        prefix_cache_mb: int | None = None,
        jwt_auth: bool = True,
        timeout_s: float = 180,
        log_path: str | os.PathLike[str] | None = None,
    ) -> LocalServer:
        """Launch `python -m mint_local serve` and wait for its listening line.

        With state_dir=None a fresh temporary state folder is used and removed by stop();
        pass a folder to keep checkpoints. The server's stderr goes to log_path (a temporary
        file by default); its tail is part of the error when the server fails to start.
        """
        owns_state_dir = state_dir is None
        state = Path(tempfile.mkdtemp(prefix="mint-local-state-")) if state_dir is None else Path(state_dir)
        state.mkdir(parents=True, exist_ok=True)
        if log_path is None:
            fd, name = tempfile.mkstemp(prefix="mint-local-", suffix=".log")
            os.close(fd)
            log = Path(name)
        else:
            log = Path(log_path)
            log.parent.mkdir(parents=True, exist_ok=True)
        cmd = [
            sys.executable, "-m", "mint_local", "serve",
            "--host", "127.0.0.1", "--port", str(port),
            "--model", str(model), "--device", device, "--dtype", dtype, "--state-dir", str(state),
        ]  # fmt: skip
        if serve_any_model:
            cmd.append("--serve-any-model")
        if hosted_parity:
            cmd.append("--hosted-parity")
        if max_context is not None:
            cmd += ["--max-context", str(max_context)]
        if threads is not None:
            cmd += ["--threads", str(threads)]
        if prefix_cache_mb is not None:
            cmd += ["--prefix-cache-mb", str(prefix_cache_mb)]
        if not jwt_auth:
            cmd.append("--no-jwt-auth")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        with open(log, "a", encoding="utf-8") as log_file:  # the child keeps its own copy of the fd
            proc = Supervised(cmd, env=env, stderr=log_file, name="mint-local")
        try:
            base_url = None
            for line in proc.lines(deadline=time.monotonic() + timeout_s):
                if line.startswith(LISTENING_PREFIX):
                    base_url = line[len(LISTENING_PREFIX) :].strip()
                    break
            if base_url is None:
                if proc.timed_out:
                    raise LocalServerError(f"mint-local did not start within {timeout_s:.0f} s.\n{_tail(log)}")
                proc.stop()  # it has exited (its output ended): this collects its exit code
                raise LocalServerError(f"mint-local exited with code {proc.returncode} before listening.\n{_tail(log)}")
            try:
                model_name = _served_model(base_url)
            except OSError as e:
                raise LocalServerError(
                    f"mint-local at {base_url} did not answer get_server_capabilities: {e}\n{_tail(log)}"
                ) from e
        except BaseException:  # Ctrl-C included: a half-started server must not outlive the caller
            proc.stop()
            _remove_temporaries(state if owns_state_dir else None, log if log_path is None else None)
            raise
        server = cls(proc, base_url, model_name, state, log, owns_state_dir)
        server._owns_log = log_path is None
        return server

    def stop(self) -> None:
        """Stop the server and remove the temporary state folder and log it made (not the caller's)."""
        try:
            self.proc.stop(grace_s=10)
        finally:
            _remove_temporaries(self.state_dir if self._owns_state_dir else None, self.log_path if self._owns_log else None)

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"LocalServer(base_url={self.base_url!r}, model_name={self.model_name!r}, pid={self.pid})"


def _remove_temporaries(state_dir: Path | None, log: Path | None) -> None:
    if state_dir is not None:
        shutil.rmtree(state_dir, ignore_errors=True)
    if log is not None:
        log.unlink(missing_ok=True)


def _served_model(base_url: str) -> str:
    with urllib.request.urlopen(f"{base_url}/api/v1/get_server_capabilities", timeout=30) as resp:
        data = json.loads(resp.read().decode("utf-8"))
    return data["supported_models"][0]["model_name"]


def _tail(log: Path, lines: int = 30) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "(no server log)"
    return f"last lines of {log}:\n" + "\n".join(text[-lines:])
