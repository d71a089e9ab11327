#!/usr/bin/env python3
"""Start the mint-migrate MCP server from a plugin checkout, installing what it needs once.

A Claude Code marketplace install copies this repository but installs no Python package, so the
plugin's `.mcp.json` runs this file with the `python3` on PATH. It keeps a virtual environment
with the server's core dependencies (pyproject.toml's [project] dependencies; no torch) in the
plugin's data folder (${CLAUDE_PLUGIN_DATA}, else ~/.cache/mint-migrate), creates it on the first
start, and then runs `python -m mint_migrate` from this checkout inside it.

    python3 scripts/mint_migrate_launcher.py serve [--workspace DIR]   # what .mcp.json runs
    python3 scripts/mint_migrate_launcher.py --install [--extras local,sdk]
        # create or update the environment and exit (local,sdk: mint-local and the MinT SDK too,
        # for smoke runs; torch is installed first, pinned, as the Makefile does)

Standard library only: it runs before anything is installed. stdout is the MCP channel, so every
word this file says goes to stderr, and pip writes to a log file.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIN_PYTHON = (3, 11)
# torch, pinned, from the index that fits this machine (scripts/torch_install_args.py; the
# Makefile asks the same): the CUDA build with CUDA, PyTorch's CPU wheels without.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_install_args import torch_install_args  # noqa: E402

INSTALL_COMMAND = f"python3 {ROOT / 'scripts' / 'mint_migrate_launcher.py'} --install"


def say(message: str) -> None:
    print(f"mint-migrate: {message}", file=sys.stderr, flush=True)


def requirements(extras: list[str]) -> list[str]:
    """The dependencies pyproject.toml declares: the core ones, plus the named extras."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found = list(project["dependencies"])
    for extra in extras:
        if extra not in project["optional-dependencies"]:
            raise SystemExit(f"mint-migrate: unknown extra {extra!r}; pyproject.toml has "
                             f"{', '.join(sorted(project['optional-dependencies']))}")
        found += project["optional-dependencies"][extra]
    return found


def data_dir() -> Path:
    if os.environ.get("CLAUDE_PLUGIN_DATA"):
        return Path(os.environ["CLAUDE_PLUGIN_DATA"]).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser()
    return cache / "mint-migrate"


def venv_dir() -> Path:
    """One environment per Python version and core dependency set: a plugin update that changes
    the dependencies gets a fresh one, the next start after that reuses it."""
    key = hashlib.sha256(json.dumps([sys.version_info[:2], requirements([])]).encode()).hexdigest()[:12]
    return data_dir() / f"venv-py{sys.version_info[0]}{sys.version_info[1]}-{key}"


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def is_ready(venv: Path) -> bool:
    return (venv / ".ready").is_file() and venv_python(venv).exists()


def install_into(venv: Path, extras: list[str], log: Path) -> int:
    """Build the environment next to `venv` and move it into place only when complete, so a start
    never sees half an environment. Holds a lock so two starts do not build it twice."""
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / "install.lock", "w") as lock, open(log, "a", encoding="utf-8") as out:
        try:
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:  # Windows: no advisory locks; the rename below still keeps it whole
            pass
        if is_ready(venv) and not extras:
            return 0
        target = venv if is_ready(venv) else venv.with_name(venv.name + f".partial-{os.getpid()}")
        own_pip = _pip_with_python_option()
        steps = []
        if target != venv:  # without pip when this interpreter's pip can install into it (seconds faster)
            steps.append([sys.executable, "-m", "venv", *(["--without-pip"] if own_pip else []), str(target)])
        pip = (
            [sys.executable, "-m", "pip", "--python", str(venv_python(target))]
            if own_pip and not (target / "bin" / "pip").exists()
            else [str(venv_python(target)), "-m", "pip"]
        ) + ["install", "--disable-pip-version-check", "--no-compile", "-q"]
        if "local" in extras:
            steps.append(pip + torch_install_args())
        steps.append(pip + requirements(extras))
        for step in steps:
            out.write(f"$ {' '.join(step)}\n")
            out.flush()
            code = subprocess.call(step, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
            if code != 0:
                if target != venv:
                    shutil.rmtree(target, ignore_errors=True)
                return code
        if target != venv:
            (target / ".ready").write_text(json.dumps(requirements([])) + "\n", encoding="utf-8")
            try:
                target.rename(venv)
            except OSError:  # another start got there first; its environment is as good
                shutil.rmtree(target, ignore_errors=True)
    return 0


def _pip_with_python_option() -> bool:
    """Whether this interpreter has a pip that installs into another one (`pip --python`, 22.3+)."""
    try:
        import pip
    except ImportError:
        return False
    parts = pip.__version__.split(".")
    return tuple(int(p) for p in parts[:2] if p.isdigit()) >= (22, 3)


def ensure_environment(extras: list[str]) -> Path:
    venv = venv_dir()
    if is_ready(venv) and not extras:
        return venv
    log = venv.parent / "install.log"
    venv.parent.mkdir(parents=True, exist_ok=True)
    say(f"installing the MCP server's dependencies into {venv} (once; log: {log})")
    # The installer runs in its own session: if the MCP client gives up waiting and ends this
    # process, the install still finishes, and the next start uses it.
    installer = subprocess.Popen(
        [sys.executable, __file__, "--install-into", str(venv), "--log", str(log), "--extras", ",".join(extras)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    code = installer.wait()
    if code != 0 or not is_ready(venv):
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-15:] if log.exists() else []
        say("could not install the dependencies (pip exit {}):\n  {}".format(code, "\n  ".join(tail)))
        say(f"run this once with network access to PyPI, then restart Claude Code:\n  {INSTALL_COMMAND}")
        raise SystemExit(1)
    return venv


def main(argv: list[str]) -> None:
    if sys.version_info < MIN_PYTHON:
        say(f"needs Python {'.'.join(map(str, MIN_PYTHON))} or newer; `python3` here is "
            f"{sys.version.split()[0]} ({sys.executable}). Put a newer python3 first on PATH, then restart.")
        raise SystemExit(1)
    extras: list[str] = []
    if "--extras" in argv:
        at = argv.index("--extras")
        extras = [e for e in argv[at + 1].split(",") if e] if at + 1 < len(argv) else []
        argv = argv[:at] + argv[at + 2 :]
    if argv[:1] == ["--install-into"]:  # the detached installer (see ensure_environment)
        venv, log = Path(argv[1]), Path(argv[argv.index("--log") + 1])
        raise SystemExit(install_into(venv, extras, log))
    if argv[:1] == ["--install"]:
        venv = ensure_environment(extras)
        say(f"ready: {venv}")
        return
    venv = ensure_environment([])
    python = str(venv_python(venv))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    os.execve(python, [python, "-m", "mint_migrate", *(argv or ["serve"])], env)


if __name__ == "__main__":
    main(sys.argv[1:])
