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
import shlex
import sys
import threading
import time
from pathlib import Path

from mint_local.process import run_to_end
from mint_migrate.errors import MintMigrateError, OutsideWorkspace
from mint_migrate.parity.records import SideRecord
from mint_migrate.smoke import redact
from mint_migrate.workspace import pinned_script, read_bytes_checked, read_text_checked

_MAX_HASHED_FILE = 20 * 1024 * 1024
_TRL_IMPORT = re.compile(r"^\s*(from|import)\s+trl\b", re.M)


class SourceSideError(RuntimeError):
    """The source script did not reach its first training step: the message says why, `cause` and
    `fix` what kind of problem it is and what to do (a fix is a command the user can run as it is)."""

    def __init__(self, message: str, *, cause: str = "source_run", fix: str | None = None) -> None:
        super().__init__(message)
        self.cause = cause
        self.fix = fix or "Make the script run on this machine (CPU, offline), or give --data for its dataset."


# What the source side imports, as pip must be asked for it: the same ranges as pyproject.toml's
# `local` and `parity` extras (a test holds them equal), named here because the server may run
# from a wheel or another checkout, where `mint-migrate[parity]` means nothing to pip.
REQUIREMENTS = {
    "torch": "torch==2.13.0",
    "transformers": "transformers>=4.56.2",
    "trl": "trl>=1.16,<2",
    "peft": "peft>=0.14",
    "tinker": "tinker==0.22.0",  # what mindlab-toolkit 0.2.0 (the sdk extra) pins
}
_PEFT_IMPORT = re.compile(r"^\s*(from|import)\s+peft\b", re.M)
_TINKER_IMPORT = re.compile(r"^\s*(from|import)\s+tinker\b", re.M)


def pip_install(*requirements: str) -> str:
    """The command that installs `requirements` into the interpreter this server runs on."""
    # Each requirement in single quotes, always: `>`, `<` and `,` would reach the shell otherwise.
    quoted = [f"'{r}'" if "'" not in r else shlex.quote(r) for r in requirements]
    return " ".join([shlex.quote(sys.executable), "-m", "pip", "install", *quoted])


def uses_trl(script: Path) -> bool:
    """The script, or a module beside it, imports TRL."""
    return _imports(script, _TRL_IMPORT)


def _imports(script: Path, pattern: re.Pattern) -> bool:
    for path in [script, *sorted(script.parent.glob("*.py"))[:50]]:
        try:
            if pattern.search(read_text_checked(path, errors="replace")):
                return True
        except (OSError, OutsideWorkspace):  # a link out of an MCP tool's fence is not looked into
            continue
    return False


def missing_frameworks(script: Path) -> list[str]:
    """The packages the source side needs for `script` that this interpreter cannot import."""
    needed = ["torch", "transformers"]
    if uses_trl(script):
        needed.append("trl")
    if _imports(script, _PEFT_IMPORT):
        needed.append("peft")
    if _imports(script, _TINKER_IMPORT):
        needed.append("tinker")
    return [name for name in needed if importlib.util.find_spec(name) is None]


def require_frameworks(script: Path) -> None:
    """Stop early, with the exact install command, when the script's framework is missing here."""
    missing = missing_frameworks(script)
    if missing:
        raise SourceSideError(
            f"running {script.name} needs {', '.join(missing)}, not installed in {sys.executable}",
            cause="framework_missing",
            fix=f"Install them into the server's interpreter: {pip_install(*(REQUIREMENTS[m] for m in missing))}"
            + (" (torch first: the CPU wheel, pinned)" if "torch" in missing else ""),
        )


def source_error(script: Path, message: str, traceback: str) -> SourceSideError:
    """Why the source stopped before its first step, and the fix: an argument this TRL no longer
    accepts names the TRL that did and the command that installs it; a missing module, its install."""
    from mint_migrate.parity.trl_versions import installed_trl, rejected_argument, written_for

    rejected = rejected_argument(message)
    if rejected is not None and installed_trl() is not None:
        cls, argument = rejected
        installed = installed_trl()
        version, how = written_for(script, cls, argument)
        if version is None:
            return SourceSideError(
                f"{script.name} passes {cls}({argument}=...), which TRL {installed} (installed here) does not "
                "accept: the script was written for another TRL release, so its first step cannot run here.",
                cause="framework_version",
                fix=f"Install the TRL release the script was written for (the one its requirements name): "
                f"{pip_install('trl==VERSION')}, then run parity again.",
            )
        return SourceSideError(
            f"{script.name} passes {cls}({argument}=...), which TRL {installed} (installed here) does not "
            f"accept: the script was written for TRL {version} or earlier ({how}), so its first step cannot "
            "run here.",
            cause="framework_version",
            fix=f"Port the script to TRL {installed}: remove {argument}= from {cls}(...). Or run it as written: "
            f"install that TRL into the server's interpreter, {pip_install(f'trl=={version}')}, and run parity "
            f"again ({pip_install(REQUIREMENTS['trl'])} restores this one afterwards)"
            + ("; parity's GRPO hooks follow TRL 1.16's GRPOTrainer, so a GRPO script needs the port." if
               cls == "GRPOConfig" else "."),
        )
    missing = re.search(r"No module named '([\w.]+)'", message)
    if missing is not None:
        module = missing.group(1).split(".")[0]
        return SourceSideError(
            f"{script.name} imports {module}, not installed in {sys.executable}.",
            cause="framework_missing",
            fix=f"Install it into the server's interpreter: {pip_install(REQUIREMENTS.get(module, module))}",
        )
    return SourceSideError(f"{script.name}: {message}\n{traceback}")


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
    extra_env: dict[str, str] | None = None,
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
        sys.executable, "-m", "mint_migrate.parity.harness",
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
    env.update(extra_env or {})
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
        raise source_error(script, message, redact(result.get("traceback", "")))
    record = SideRecord.model_validate(result)
    record.seconds = round(time.monotonic() - started, 3)
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(record.model_dump_json(), encoding="utf-8")
    return record, False
