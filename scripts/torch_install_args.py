#!/usr/bin/env python3
"""The pip arguments that install the pinned torch on this machine.

An ordinary `pip install torch==2.13.0` resolves to the CUDA build on Linux, with gigabytes of CUDA
libraries, even where there is no GPU. So: with CUDA present, the default index (the CUDA build
uses the GPU); without CUDA, PyTorch's own CPU wheel index when it answers; when it does not
(offline, a mirror, a wheelhouse), the plain pin, so pip takes what its own configuration finds
(this project's dev machines carry the CPU wheel on disk).

    python3 scripts/torch_install_args.py            # prints the arguments, space separated
    pip install $(python3 scripts/torch_install_args.py)

Standard library only: the Makefile and the plugin's launcher run it before anything is installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

TORCH = "torch==2.13.0"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def has_cuda() -> bool:
    """An NVIDIA driver that answers: the kernel module's version file, or nvidia-smi listing a GPU."""
    if Path("/proc/driver/nvidia/version").is_file():
        return True
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        done = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and "GPU" in done.stdout


def index_reachable(url: str = CPU_INDEX + "/torch/", timeout: float = 5.0) -> bool:
    """Whether PyTorch's CPU index answers (a page of torch wheels) within `timeout` seconds."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def torch_install_args(
    cuda: Callable[[], bool] = has_cuda, cpu_index_reachable: Callable[[], bool] = index_reachable
) -> list[str]:
    """The decision. The probes are parameters so that a test can give each machine's answers;
    the CPU index is asked only where it matters (no CUDA)."""
    if os.environ.get("MINT_TORCH_INDEX"):  # a person's own index (a mirror, a CUDA variant) wins
        return [TORCH, "--index-url", os.environ["MINT_TORCH_INDEX"]]
    if cuda():
        return [TORCH]
    if cpu_index_reachable():
        return [TORCH, "--index-url", CPU_INDEX]
    return [TORCH]


def main() -> int:
    print(" ".join(torch_install_args()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
