"""Smoke run: run a train.py for a few steps against mint-local (or a real MinT) and judge it."""

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field


class SmokeProgress(BaseModel):
    step: int
    total: int
    message: str


class SmokeVerdict(BaseModel):
    passed: bool
    target: Literal["local", "remote"]
    model: str | None = None
    steps_done: int = 0
    log_tail: str = ""
    errors: list[str] = Field(default_factory=list)


def run_smoke(
    script_path: Path,
    *,
    target: Literal["local", "remote"] = "local",
    steps: int = 2,
    timeout_s: float = 600,
    on_progress: Callable[[SmokeProgress], None] | None = None,
) -> SmokeVerdict:
    raise NotImplementedError("smoke lands with the scaffolds issue")
