"""Smoke runs: run a train.py for a few steps against mint-local (or a real MinT) and judge it.

One job per module: `verdict` (the models returned), `metrics` (reading the METRIC / SAMPLE / RUN
lines scaffolds print), `classify` (output -> errors with fixes), `redaction` (keys out of every
field), `servers` (the mint-local servers runs share), `runner` (the run itself, supervised by
mint_local.process) and `report` (the verdict as text). The names front ends use are here.
"""

from mint_migrate.smoke.classify import classify
from mint_migrate.smoke.metrics import RunOutput, parse_fields
from mint_migrate.smoke.redaction import redact, redact_model
from mint_migrate.smoke.report import format_verdict
from mint_migrate.smoke.runner import LOCAL_API_KEY, SmokeInterrupted, run_smoke
from mint_migrate.smoke.servers import local_server, running_server, stop_local_servers
from mint_migrate.smoke.verdict import ErrorKind, LeftProcess, SmokeError, SmokeProgress, SmokeVerdict

__all__ = [
    "LOCAL_API_KEY",
    "ErrorKind",
    "LeftProcess",
    "RunOutput",
    "SmokeError",
    "SmokeInterrupted",
    "SmokeProgress",
    "SmokeVerdict",
    "classify",
    "format_verdict",
    "local_server",
    "parse_fields",
    "redact",
    "redact_model",
    "run_smoke",
    "running_server",
    "stop_local_servers",
]
