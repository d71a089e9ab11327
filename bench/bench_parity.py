"""Benchmark `mint-migrate parity` on one TRL SFT script, with a smoke run as the baseline.

    python bench/bench_parity.py            # ~1-3 minutes on 2 CPU cores

Each figure is a fresh `mint-migrate` process, as a person at a shell runs it, so each one starts
its own mint-local:
  baseline   `mint-migrate smoke train.py --steps 2`: the check every migration already runs;
  cold       `mint-migrate parity SRC --train train.py --fresh`: TRL's step in a child process,
             train.py's step on mint-local, the comparison (the target: under a minute on 2 cores);
  warm       the same without --fresh: the source side comes from the cache, as when an agent
             fixes train.py and checks again.
Wall time and CPU time (user + sys of the whole process tree) are printed; on a shared machine
the CPU time is the steadier figure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "fixtures" / "parity" / "trl_sft_text" / "sft_text.py"


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
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
