"""Benchmark `mint-migrate parity`: one whole check per source framework, a smoke run as the baseline.

    python bench/bench_parity.py            # ~5 minutes on 2 CPU cores

Each figure is a fresh `mint-migrate` process, as a person at a shell runs it, so each one starts
its own mint-local:
  baseline   `mint-migrate smoke train.py --steps 2` (TRL SFT's migration): the check every migration
             already runs;
  cold       `mint-migrate parity SRC --train train.py --fresh`, per framework: the source side (TRL in
             a child process; verl's / OpenRLHF's loss code in their envs; a Tinker script against
             mint-local), train.py's step on mint-local, the comparison;
  warm       TRL SFT again without --fresh: the source side comes from the cache, as when an agent
             fixes train.py and checks again.
verl and OpenRLHF need their envs (`python -m mint_migrate.parity.framework_envs build verl|openrlhf`);
without one, that row is the (fast) inconclusive check. Wall time and CPU time (user + sys of the
whole process tree) are printed; on a shared machine the CPU time is the steadier figure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "parity"
SOURCE = FIXTURES / "trl_sft_text" / "sft_text.py"
# One source per framework; the Tinker script sums its loss, so its train.py sums too (the fix parity gives).
FRAMEWORKS = {
    "trl sft (prompt/completion)": (SOURCE, None),
    "trl sft (chat, assistant_only_loss)": (FIXTURES / "trl_sft_assistant_only" / "sft_assistant_only.py", None),
    "trl grpo": (FIXTURES / "trl_grpo" / "grpo.py", None),
    "verl grpo launcher": (FIXTURES / "verl_grpo" / "run_grpo.sh", None),
    "openrlhf grpo launcher": (FIXTURES / "openrlhf_grpo" / "train_grpo_ray.sh", None),
    "tinker sft script": (FIXTURES / "tinker_sft" / "sft_tinker.py", ("LOSS_NORMALIZATION", '"sum"')),
}


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float, dict]:
    """(wall s, CPU s of the process tree, the JSON it printed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return wall, cpu, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8)
    args = parser.parse_args()
    cli = str(Path(sys.executable).parent / "mint-migrate")
    work = Path(tempfile.mkdtemp(prefix="bench-parity-"))
    env = dict(os.environ, MINT_MIGRATE_CACHE=str(work / "cache"), TINKER_TELEMETRY="0", MINT_SMOKE_DEVICE="cpu")
    subprocess.run([cli, "migrate", str(SOURCE), "--out", str(work / "out")], check=True, capture_output=True)
    train = str(work / "out" / "train.py")
    parity = [cli, "parity", str(SOURCE), "--train", train, "--rows", str(args.rows), "--no-report", "--json"]

    print(f"machine: {os.cpu_count()} CPU cores, {platform.machine()}, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    base_wall, base_cpu, verdict = timed([cli, "smoke", train, "--steps", "2", "--json"], env)
    print(f"baseline smoke (2 steps)   wall {base_wall:6.1f} s   cpu {base_cpu:6.1f} s   passed={verdict['passed']}")
    cold_wall, cold_cpu, cold = timed([*parity, "--fresh"], env)
    print(f"parity, cold               wall {cold_wall:6.1f} s   cpu {cold_cpu:6.1f} s   passed={cold['passed']} "
          f"(source side {cold['timings'].get('source_s', 0):.1f} s, train.py side {cold['timings']['mint_s']:.1f} s)")
    warm_wall, warm_cpu, warm = timed(parity, env)
    print(f"parity, source cached      wall {warm_wall:6.1f} s   cpu {warm_cpu:6.1f} s   passed={warm['passed']}")
    print(f"ratio to the smoke run: cold {cold_wall / base_wall:.2f}x wall, {cold_cpu / base_cpu:.2f}x cpu; "
          f"cached {warm_wall / base_wall:.2f}x wall, {warm_cpu / base_cpu:.2f}x cpu")
    print("one whole check per framework (fresh process, --fresh, 4 rows / prompts):")
    for name, (source, edit) in FRAMEWORKS.items():
        out = work / name.replace(" ", "_").replace("(", "").replace(")", "").replace(",", "")
        subprocess.run([cli, "migrate", str(source), "--out", str(out)], check=True, capture_output=True)
        if edit is not None:
            text = (out / "train.py").read_text(encoding="utf-8")
            (out / "train.py").write_text(re.sub(rf"^{edit[0]} = .*$", f"{edit[0]} = {edit[1]}", text, flags=re.M))
        command = [cli, "parity", str(source), "--train", str(out / "train.py"), "--rows", "4", "--no-report",
                   "--json", "--fresh"]  # fmt: skip
        wall, cpu, report = timed(command, env)
        print(f"  {name:38s} wall {wall:6.1f} s   cpu {cpu:6.1f} s   {report['verdict']:12s} "
              f"{wall / base_wall:.2f}x the smoke run's wall")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
