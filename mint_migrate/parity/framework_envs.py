"""Environments for source frameworks that cannot be installed beside the server (verl, OpenRLHF).

    python -m mint_migrate.parity.framework_envs build verl|openrlhf

verl 0.9 pins transformers below 5.11 and OpenRLHF 0.11 pins transformers 5.15, flash-attn and
vLLM: installed into the server's interpreter they would downgrade what mint-local and TRL run on,
or fail to build. Parity needs only their loss code (parity.rl_source), so each gets a virtual
environment of its own, layered over the server's: a `.pth` file puts the server's site-packages
(torch, transformers, pydantic, this package) behind the env's own, and pip adds the framework
without its dependencies (`--no-deps`) plus the few modules its loss code imports. Built once,
on a machine that reaches PyPI, into the cache; parity never downloads anything by itself: an env
that is not there makes the check inconclusive, with this module's build command as the fix.

What each framework needs was found by importing its loss module on this project's stack:
- verl 0.9.1: `verl/__init__` imports ray (protocol.py); core_algos imports omegaconf, hydra's
  config classes, codetiming, dill and tensordict.
- OpenRLHF 0.11.2: `openrlhf.models/__init__` imports the actor, which needs flash-attn, a CUDA
  extension that cannot build without the CUDA toolkit; models/loss.py itself needs only
  models/utils.py, which imports deepspeed (builds on the CPU with --no-build-isolation). So the
  loss module is imported with its package's __init__ skipped (parity.rl_source.import_openrlhf_loss).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class FrameworkEnv:
    name: str
    package: str  # installed with --no-deps
    needs: list[str] = field(default_factory=list)
    build_needs: list[str] = field(default_factory=list)  # --no-build-isolation packages build with these
    no_build_isolation: list[str] = field(default_factory=list)
    probe: str = ""  # Python that must run in the env for it to count as ready


ENVS = {
    "verl": FrameworkEnv(
        name="verl",
        package="verl==0.9.1",
        needs=["ray", "omegaconf", "hydra-core", "codetiming", "dill", "tensordict>=0.8.0,<=0.10.0,!=0.9.0"],
        probe="import verl.trainer.ppo.core_algos",
    ),
    "openrlhf": FrameworkEnv(
        name="openrlhf",
        package="openrlhf==0.11.2",
        needs=["ray", "einops", "optree>=0.15.0"],
        build_needs=["wheel", "setuptools"],
        no_build_isolation=["deepspeed==0.19.6"],
        probe="from mint_migrate.parity.rl_source import import_openrlhf_loss; import_openrlhf_loss()",
    ),
}


def envs_root() -> Path:
    """Not under the parity record cache (MINT_MIGRATE_CACHE): an env outlives a cleared cache."""
    env = os.environ.get("MINT_MIGRATE_ENVS")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "mint-migrate" / "envs"


def env_dir(name: str) -> Path:
    spec = ENVS[name]
    # One env per server interpreter: its .pth points at that interpreter's site-packages.
    server = hashlib.sha256(sys.prefix.encode()).hexdigest()[:8]
    tag = f"py{sys.version_info.major}{sys.version_info.minor}-{server}"
    return envs_root() / f"{spec.package.replace('==', '-')}-{tag}"


def build_command(name: str) -> str:
    return " ".join([shlex.quote(sys.executable), "-m", "mint_migrate.parity.framework_envs", "build", name])


def ready_python(name: str) -> Path | None:
    """The env's interpreter, when the env was built and its probe passed."""
    folder = env_dir(name)
    python = folder / "bin" / "python"
    return python if (folder / "ready.json").is_file() and python.exists() else None


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[2])


def env_vars() -> dict[str, str]:
    """What a child in the env needs: this package importable wherever the server runs from."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONWARNINGS="ignore", TOKENIZERS_PARALLELISM="false",
               CUDA_VISIBLE_DEVICES="", RAY_USAGE_STATS_ENABLED="0", DS_ACCELERATOR="cpu")  # fmt: skip
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH")) if p)
    return env


def build(name: str, log=print) -> Path:
    """Create (or finish) the env for `name`; returns its interpreter. Needs PyPI."""
    spec = ENVS[name]
    folder = env_dir(name)
    python = folder / "bin" / "python"

    def run(*command: str) -> None:
        log("$ " + " ".join(shlex.quote(c) for c in command))
        subprocess.run(command, check=True, env=env_vars())

    if not python.exists():
        run(sys.executable, "-m", "venv", str(folder))
    # The server's packages sit behind the env's own: torch and transformers are shared, not copied.
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())  # fmt: skip
    paths = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "mint_migrate_server.pth").write_text("".join(f"{p}\n" for p in paths), encoding="utf-8")
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    run(*pip, "--no-deps", spec.package)
    if spec.build_needs:
        run(*pip, *spec.build_needs)
    if spec.needs:
        run(*pip, *spec.needs)
    if spec.no_build_isolation:
        run(*pip, "--no-build-isolation", *spec.no_build_isolation)
    run(str(python), "-c", spec.probe)
    (folder / "ready.json").write_text(json.dumps({"package": spec.package, "server": sys.executable}), "utf-8")
    return python


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("build", help="build the env parity runs a framework's loss code in (needs PyPI)")
    p.add_argument("framework", choices=sorted(ENVS))
    p = sub.add_parser("where", help="print the env's interpreter, if built")
    p.add_argument("framework", choices=sorted(ENVS))
    args = parser.parse_args(argv)
    if args.command == "where":
        python = ready_python(args.framework)
        print(python or f"not built: {build_command(args.framework)}")
        return 0 if python else 1
    try:
        python = build(args.framework)
    except subprocess.CalledProcessError as exc:
        print(f"failed: {exc}", file=sys.stderr)
        return 1
    print(f"ready: {python}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
