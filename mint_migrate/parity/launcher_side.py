"""The source side of a verl or OpenRLHF launcher: the framework's own reward, advantage and
policy-loss code on the completions train.py sampled (parity.rl_source), in the framework's env.

A launcher is a shell command line (`python3 -m verl.trainer.main_ppo key=value ...`,
`python3 -m openrlhf.cli.train_ppo_ray --flag value ...`): its settings are read with the
analyzer's own shell reader, so `$VARS` and line continuations resolve as the migration saw them.
Settings a launcher does not state take the framework's defaults (parity.rl_source says which).
A YAML config the launcher builds on is not read here: a value only the YAML states falls back
to the framework's default, and the record's notes say which keys were read.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from mint_local.process import run_to_end
from mint_migrate.parity.framework_envs import ENVS, build_command, env_vars, ready_python
from mint_migrate.parity.records import SideRecord
from mint_migrate.parity.source_side import SourceSideError
from mint_migrate.smoke import redact
from mint_migrate.workspace import read_text_checked

FRAMEWORKS = tuple(ENVS)  # verl, openrlhf
_ENTRY = {"verl": "verl.trainer.main_ppo", "openrlhf": "openrlhf.cli.train_ppo_ray"}


def launcher_settings(source: Path, framework: str) -> dict[str, Any]:
    """key (as the launcher writes it, without dashes) -> value, from the command that starts the trainer."""
    from mint_migrate.analyze.shell import ShellScript

    if source.suffix == ".py":
        return {}
    script = ShellScript(read_text_checked(source, errors="replace"), source.name)
    settings: dict[str, Any] = {}
    for command in script.commands:
        if command.module != _ENTRY[framework] and _ENTRY[framework] not in (command.script or ""):
            continue
        for arg in command.args:
            if arg.kind == "positional":
                continue
            value = arg.value.value if arg.value is not None else (arg.raw or None)
            settings[arg.name] = True if value is None and arg.kind == "flag" else value
    return settings


_ESTIMATOR = {"verl": "adv_estimator", "openrlhf": "advantage_estimator"}
# A launcher whose command line does not name the estimator (a YAML states it): the one the
# migration read for GRPO, which is each framework's group-normalised estimator.
_GRPO_ESTIMATOR = {"verl": "grpo", "openrlhf": "group_norm"}


def objective_settings(source: Path, framework: str, algorithm: str) -> tuple[dict[str, Any], list[str]]:
    """The launcher's settings, and notes on what was taken from elsewhere."""
    from mint_migrate.parity.rl_source import OBJECTIVE_SETTINGS

    settings = launcher_settings(source, framework)
    key = OBJECTIVE_SETTINGS[framework][_ESTIMATOR[framework]][0]
    if key not in settings and algorithm == "grpo":
        settings[key] = _GRPO_ESTIMATOR[framework]
        return settings, [f"{key}={settings[key]}: not on {source.name}'s command line; the migration read GRPO"]
    return settings, []


def critic_estimator(source: Path, framework: str, algorithm: str) -> str | None:
    """The launcher's advantage setting when it needs a critic (GAE: the framework's default), else None."""
    from mint_migrate.parity.rl_source import OBJECTIVE_SETTINGS, setting

    name = _ESTIMATOR[framework]
    value = setting(objective_settings(source, framework, algorithm)[0], OBJECTIVE_SETTINGS[framework], name)
    return f"{OBJECTIVE_SETTINGS[framework][name][0]}={value}" if value == "gae" else None


def framework_python(framework: str) -> Path:
    """The interpreter that imports the framework's loss code: its built env, or the server's own
    when the framework is installed there; else the check cannot run (SourceSideError with the fix)."""
    python = ready_python(framework)
    if python is not None:
        return python
    if importlib.util.find_spec(framework) is not None:
        return Path(sys.executable)
    raise SourceSideError(
        f"{framework} is not installed for parity: its package cannot live in the server's interpreter "
        f"({ENVS[framework].package} pins other transformers and GPU-only builds), so parity runs its loss code in "
        "an environment of its own, which has not been built on this machine.",
        cause="framework_missing",
        fix=f"Build it once, where PyPI is reachable (about 300 MB): {build_command(framework)}",
    )


def run_rl_source(
    framework: str,
    algorithm: str,
    source: Path,
    groups: list[dict],
    reward_file: str | None,
    reward_name: str | None,
    model_dir: Path,
    workdir: Path,
    *,
    timeout_s: float,
    cancel: threading.Event | None,
) -> SideRecord:
    """The framework's reward, advantages and policy loss on train.py's groups, as a SideRecord."""
    python = framework_python(framework)
    settings, taken = objective_settings(source, framework, algorithm)
    job = workdir / "rl_source_job.json"
    out = workdir / "rl_source_record.json"
    job.write_text(json.dumps({
        "framework": framework, "groups": groups, "settings": settings, "reward_file": reward_file,
        "reward_name": reward_name, "model": str(model_dir),
    }, default=str), encoding="utf-8")  # fmt: skip
    started = time.monotonic()
    lines: list[str] = []
    code, timed_out = run_to_end(
        [str(python), "-m", "mint_migrate.parity.rl_source", "--job", str(job), "--out", str(out)],
        cwd=source.parent, env=env_vars(), deadline=time.monotonic() + timeout_s, on_line=lines.append,
        cancel=cancel, name=f"parity-{framework}",
    )  # fmt: skip
    tail = redact("\n".join(lines[-15:]))
    if cancel is not None and cancel.is_set():
        raise SourceSideError(f"{framework}'s loss code was stopped: the caller went away.")
    if timed_out:
        raise SourceSideError(f"{framework}'s loss code had not finished after {timeout_s:g} s.\n{tail}")
    if not out.is_file():
        raise SourceSideError(f"{framework}'s loss code died (exit code {code}) before writing its record.\n{tail}")
    result = json.loads(out.read_text(encoding="utf-8"))
    if "unsupported" in result:
        raise SourceSideError(result["unsupported"], cause="not_supported",
                              fix="Nothing to fix in train.py: parity cannot compare this objective here.")  # fmt: skip
    if "error" in result:
        raise SourceSideError(f"{framework}'s loss code failed: {redact(result['error'])}\n{redact(result['traceback'])}")
    from mint_migrate.parity.rl_source import OBJECTIVE_SETTINGS

    shaping = sorted(key for key, _ in OBJECTIVE_SETTINGS[framework].values() if key in settings)
    notes = [f"{framework} settings that shape the objective, read from {source.name}: {', '.join(shaping) or 'none'} "
             f"(the others at {framework}'s defaults)", *taken]  # fmt: skip
    if framework == "openrlhf":
        notes.append(
            "OpenRLHF's PolicyLoss is its own code; its advantage estimators live in a Ray actor's method "
            "(PPOExperienceMaker.compute_advantages_and_returns) that cannot run without a cluster, so the group "
            "baseline / std step follows that method's formulas (OpenRLHF 0.11)"
        )
    record = SideRecord.model_validate({**result, "notes": notes})
    record.seconds = round(time.monotonic() - started, 3)
    return record
