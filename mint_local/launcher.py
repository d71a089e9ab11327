"""Start and stop a mint-local server in a subprocess (no torch in the calling process).

    with LocalServer.start() as server:
        os.environ["MINT_BASE_URL"] = server.base_url
        ...  # base_model=server.model_name
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

LISTENING_PREFIX = "mint-local listening on "


class LocalServerError(RuntimeError):
    pass


class LocalServer:
    def __init__(self, proc: subprocess.Popen[str], base_url: str, model_name: str, state_dir: Path, log_path: Path, owns_state_dir: bool) -> None:
        self.proc = proc
        self.base_url = base_url
        self.model_name = model_name
        self.state_dir = state_dir
        self.log_path = log_path
        self._owns_state_dir = owns_state_dir

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
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        log_file = open(log, "a", encoding="utf-8")  # noqa: SIM115 - handed to the child process
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log_file, text=True, env=env)
        log_file.close()
        lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, name="mint-local-stdout", daemon=True).start()
        deadline = time.monotonic() + timeout_s
        base_url = None
        while base_url is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                _kill(proc)
                raise LocalServerError(f"mint-local did not start within {timeout_s:.0f} s.\n{_tail(log)}")
            try:
                line = lines.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            if line is None:
                proc.wait(timeout=10)
                raise LocalServerError(f"mint-local exited with code {proc.returncode} before listening.\n{_tail(log)}")
            if line.startswith(LISTENING_PREFIX):
                base_url = line[len(LISTENING_PREFIX) :].strip()
        try:
            model_name = _served_model(base_url)
        except OSError as e:
            _kill(proc)
            raise LocalServerError(f"mint-local at {base_url} did not answer get_server_capabilities: {e}\n{_tail(log)}") from e
        return cls(proc, base_url, model_name, state, log, owns_state_dir)

    def stop(self) -> None:
        _kill(self.proc)
        if self._owns_state_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"LocalServer(base_url={self.base_url!r}, model_name={self.model_name!r}, pid={self.pid})"


def _served_model(base_url: str) -> str:
    with urllib.request.urlopen(f"{base_url}/api/v1/get_server_capabilities", timeout=30) as resp:
        data = json.loads(resp.read().decode("utf-8"))
    return data["supported_models"][0]["model_name"]


def _kill(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def _tail(log: Path, lines: int = 30) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "(no server log)"
    return f"last lines of {log}:\n" + "\n".join(text[-lines:])
