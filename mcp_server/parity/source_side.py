"""The source side: the user's script, run by its own framework for one step, in a child process.

The child (parity.harness) imports torch, transformers and TRL; this process does not. A record
is cached by the hash of everything that shapes it (the script's folder, the data, the model, the
arguments, the framework versions), so checking a corrected train.py again reuses the source
side; `fresh=True` runs it anyway.
"""

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import sys
import threading
import time
from pathlib import Path

from mcp_server.errors import MintMigrateError, OutsideWorkspace
from mcp_server.parity.records import SideRecord
from mcp_server.smoke import redact
from mcp_server.workspace import pinned_script, read_bytes_checked, read_text_checked
from mint_local.process import run_to_end

_MAX_HASHED_FILE = 20 * 1024 * 1024
_TRL_IMPORT = re.compile(r"^\s*(from|import)\s+trl\b", re.M)


class SourceSideError(RuntimeError):
    """The source script did not reach its first training step; the message says why."""


def uses_trl(script: Path) -> bool:
    """The script, or a module beside it, imports TRL."""
    for path in [script, *sorted(script.parent.glob("*.py"))[:50]]:
        try:
            if _TRL_IMPORT.search(read_text_checked(path, errors="replace")):
                return True
        except (OSError, OutsideWorkspace):  # a link out of an MCP tool's fence is not looked into
            continue
    return False


def require_frameworks(script: Path) -> None:
    """Stop early, with the install line, when the script's framework is missing here."""
    missing = [name for name in ("torch", "transformers") if importlib.util.find_spec(name) is None]
    if uses_trl(script) and importlib.util.find_spec("trl") is None:
        missing.append("trl")
    if missing:
        raise MintMigrateError(
            f"Running {script.name} for parity needs {', '.join(missing)}, not installed in {sys.executable}. "
            "Install them with: pip install 'mint-migrate[local,parity]' (torch==2.13.0 first)."
        )


def cache_root() -> Path:
    env = os.environ.get("MINT_MIGRATE_CACHE")
    return (Path(env).expanduser() if env else Path.home() / ".cache" / "mint-migrate") / "parity"


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "-"


def cache_key(script: Path, model_dir: Path, rows: int, inputs: list[Path], script_args: list[str]) -> str:
    """Everything that shapes the record: the script's folder, the given data files, the model, the
    arguments and the framework versions."""
    digest = hashlib.sha256()
    files = sorted(p for p in script.parent.iterdir() if p.is_file()) + inputs
    for path in files:
        if path.stat().st_size <= _MAX_HASHED_FILE:
            try:  # under an MCP tool's fence, a link out of it counts by its name only
                content = read_bytes_checked(path)
            except OutsideWorkspace:
                content = b"outside"
            digest.update(path.name.encode() + b"\0" + content + b"\0")
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "mint_local_build.json"):
        if (model_dir / name).is_file():
            digest.update((model_dir / name).read_bytes())
    versions = [_version(n) for n in ("torch", "transformers", "trl", "datasets", "mint-migrate")]
    digest.update(json.dumps([str(script), rows, script_args, versions]).encode())
    return digest.hexdigest()[:24]


def run_source_side(
    script: Path,
    model_dir: Path,
    rows: int,
    workdir: Path,
    *,
    data: Path | None = None,
    script_args: list[str] | None = None,
    completions: Path | None = None,
    timeout_s: float = 600,
    fresh: bool = False,
    cancel: threading.Event | None = None,
) -> tuple[SideRecord, bool]:
    """(the source's first-step record, whether it came from the cache). completions: GRPO's
    sampled answers to score (JSON from parity.check). `cancel`, when set, stops the run and
    everything it started."""
    script_args = list(script_args or [])
    require_frameworks(script)
    key = cache_key(script, model_dir, rows, [p for p in (data, completions) if p is not None], script_args)
    cached = cache_root() / f"{key}.json"
    if cached.is_file() and not fresh:
        return SideRecord.model_validate_json(cached.read_text(encoding="utf-8")), True
    started = time.monotonic()
    out = workdir / "source_record.json"
    command = [
        sys.executable, "-m", "mcp_server.parity.harness",
        "--script", str(script), "--model", str(model_dir), "--rows", str(rows), "--out", str(out),
    ]  # fmt: skip
    if data is not None:
        command += ["--data", str(data)]
    if completions is not None:
        command += ["--completions", str(completions)]
    pinned = pinned_script(script, sys.executable)  # under a fence: the very file checked is run
    if pinned.pass_fds:
        command += ["--script-fds", ",".join(str(fd) for fd in pinned.pass_fds)]
    command += ["--", *script_args]
    env = dict(
        os.environ,
        PYTHONUNBUFFERED="1",
        HF_DATASETS_CACHE=str(workdir / "datasets-cache"),
        HF_DATASETS_DISABLE_PROGRESS_BARS="1",
        TRANSFORMERS_VERBOSITY="error",
        PYTHONWARNINGS="ignore",
    )
    # The harness must import this package even when the caller runs from elsewhere.
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    lines: list[str] = []
    with pinned:
        code, timed_out = run_to_end(
            command, cwd=pinned.cwd, env=env, deadline=time.monotonic() + timeout_s, on_line=lines.append,
            cancel=cancel, name="parity-source", pass_fds=pinned.pass_fds,
        )
    tail = redact("\n".join(lines[-20:]))
    if cancel is not None and cancel.is_set():
        raise SourceSideError(f"{script.name} was stopped: the caller went away.")
    if timed_out:
        raise SourceSideError(f"{script.name} had not finished its first step after {timeout_s:g} s.\n{tail}")
    if not out.is_file():
        raise SourceSideError(f"the parity harness died (exit code {code}) before writing its record.\n{tail}")
    result = json.loads(out.read_text(encoding="utf-8"))
    if "error" in result:
        message = redact(result["error"])
        if "Give --data FILE" in message:
            raise MintMigrateError(message)
        raise SourceSideError(f"{script.name}: {message}\n{redact(result.get('traceback', ''))}")
    record = SideRecord.model_validate(result)
    record.seconds = round(time.monotonic() - started, 3)
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(record.model_dump_json(), encoding="utf-8")
    return record, False
