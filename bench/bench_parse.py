"""What the guarded parse door costs: mint_migrate.pyparse.parse_module against bare libcst.

    python bench/bench_parse.py [--repeat 7]

pyparse first lets CPython parse the source (bounded, exact error positions), checks the tree's
depth, then hands it to libcst; the baseline is libcst.parse_module alone, measured in the same
run on the same sources: the benchmark's 500-line TRL GRPO script and the largest module of this
project.
"""

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import libcst

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.migrate_accuracy import synthetic_script
from mint_migrate import pyparse


def interleaved_ms(first, second, repeat: int) -> tuple[float, float]:
    """Medians of `first` and `second`, run turn about so load on a shared machine hits both alike."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for fn, out in ((first, times[0]), (second, times[1])):
            started = time.perf_counter()
            fn()
            out.append((time.perf_counter() - started) * 1000)
    return statistics.median(times[0]), statistics.median(times[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    largest = max(Path(pyparse.__file__).parent.rglob("*.py"), key=lambda p: p.stat().st_size)
    sources = {"500-line TRL GRPO script": synthetic_script(), f"{largest.name}": largest.read_text()}
    for name, text in sources.items():
        bare, guarded = interleaved_ms(
            lambda text=text: libcst.parse_module(text),
            lambda text=text, name=name: pyparse.parse_module(text, name),
            args.repeat,
        )
        lines = len(text.splitlines())
        print(f"{name} ({lines} lines), median of {args.repeat}:")
        print(f"  baseline libcst.parse_module: {bare:7.1f} ms")
        print(f"  pyparse.parse_module:         {guarded:7.1f} ms  = {guarded / bare:.2f}x")


if __name__ == "__main__":
    main()
