"""tinker-cookbook's guess_number recipe against mint-local, this checkout against the code in DIR.

    .venv-cookbook/bin/python bench/bench_guess_number.py --baseline DIR [--rounds 2] [recipe key=value ...]

Needs the cookbook tier's venv (`make setup-cookbook`). Both servers run the built-in tiny model
(`--serve-any-model`, `--threads 1`) in the cookbook tier's stand-in workspace (tests/cookbook):
the recipe runs unmodified, as `python -m tinker_cookbook.recipes.multiplayer_rl.guess_number.train`
with the given key=value settings (default: a reduced run, batch_size=4 group_size=4
max_tokens=64 max_steps=2 eval_every=0). Runs alternate between the servers, so background load
hits both alike; each prints wall seconds and the server's CPU seconds (utime + stime from /proc)
during the run. DIR is e.g. `git archive 4869f2a | tar -x -C DIR`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TINKER_TELEMETRY", "0")

from bench.bench_scheduler import cpu_seconds, servers  # noqa: E402

RECIPE = "tinker_cookbook.recipes.multiplayer_rl.guess_number.train"
DEFAULT_SETTINGS = ["model_name=Qwen/Qwen3-4B-Instruct-2507", "batch_size=4", "group_size=4", "max_tokens=64", "max_steps=2", "eval_every=0"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", type=Path, required=True, help="a copy of the code to compare with")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("settings", nargs="*", help="the recipe's key=value settings (default: a reduced run)")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = "1"
    from mint_local.tiny_model import ensure_tiny_model
    from tests.cookbook.standins import build_workspace

    work = Path(tempfile.mkdtemp(prefix="mint-local-guess-number-"))
    workspace = build_workspace(work / "workspace", ensure_tiny_model("tiny"))
    settings = args.settings or DEFAULT_SETTINGS
    print(f"# guess_number, {time.strftime('%Y-%m-%d %H:%M')} UTC, load average {os.getloadavg()}; {' '.join(settings)}")
    codes = [("branch", None), ("baseline", args.baseline.resolve())]
    runs: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in codes}
    with servers(codes, "tiny", work, serve_any_model=True, threads=1) as live:
        for i in range(args.rounds):
            for label, server in live.items():
                env = dict(
                    os.environ, TINKER_BASE_URL=server.base_url, TINKER_API_KEY="tml-mint-local-bench", HF_HUB_OFFLINE="1",
                    HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=str(work / "hf-home"), WANDB_MODE="disabled",
                )
                env.pop("PYTHONPATH", None)
                cmd = [sys.executable, "-m", RECIPE, *settings, f"log_path={work / f'log-{label}-{i}'}", "behavior_if_log_dir_exists=delete"]
                cpu, t = cpu_seconds(server.pid), time.perf_counter()
                out = subprocess.run(cmd, cwd=workspace, env=env, capture_output=True, text=True, timeout=3600)
                wall, used = time.perf_counter() - t, cpu_seconds(server.pid) - cpu
                if out.returncode != 0:
                    raise RuntimeError(f"{label} run {i} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
                runs[label].append((wall, used))
                steps = [json.loads(line) for line in (work / f"log-{label}-{i}" / "metrics.jsonl").read_text().splitlines() if line.strip()]
                phases = ", ".join(f"{k} {sum(r.get(f'time/{k}', 0.0) for r in steps):.1f} s" for k in ("sampling", "train_step"))
                print(
                    f"round {i + 1} {label:8s}: wall {wall:.1f} s, server CPU {used:.1f} s; the recipe's own timers over "
                    f"{len(steps)} steps: {phases} (load average {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
    for label, r in runs.items():
        print(f"{label:8s}: wall median {statistics.median(w for w, _ in r):.1f} s, server CPU median {statistics.median(c for _, c in r):.1f} s")
    walls = [b[0] / a[0] for a, b in zip(runs["branch"], runs["baseline"], strict=True)]
    cpus = [b[1] / a[1] for a, b in zip(runs["branch"], runs["baseline"], strict=True)]
    print(f"baseline / branch per round: wall {', '.join(f'{x:.2f}' for x in walls)}; server CPU {', '.join(f'{x:.2f}' for x in cpus)}")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
