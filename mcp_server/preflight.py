"""Preflight: is this machine, SDK, endpoint and script ready for a MinT run?"""

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field


class PreflightCheck(BaseModel):
    name: str
    status: Literal["ok", "warn", "fail"]
    message: str
    fix: str | None = None


class PreflightReport(BaseModel):
    ok: bool
    checks: list[PreflightCheck] = Field(default_factory=list)


def run_preflight(script_path: Path | None = None) -> PreflightReport:
    raise NotImplementedError("preflight lands with the preflight issue")
