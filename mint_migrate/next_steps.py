"""The hand-over after a migration, in the caller's own terms: MCP tool calls for an agent that
called the tool, shell commands for a person who ran the CLI (MIGRATION.md's "Next" and the tools'
`next_steps` both read it)."""

from typing import Literal

Front = Literal["mcp", "cli"]


def after_migration(front: Front, train: str = "train.py", source: str | None = None) -> list[str]:
    """The checks that prove a migrated train.py, in order; `train` as the caller names it."""
    if front == "mcp":
        steps = [
            f'lint_script(path="{train}")',
            f'preflight_check(script_path="{train}", target="local")',
            f'launch_smoke_run(script_path="{train}", target="local", steps=2)',
        ]
        if source:
            steps.append(f'check_parity(source_path="{source}", train_path="{train}")')
        return steps
    steps = [f"mint-migrate lint {train}", f"mint-migrate preflight {train} --target local",
             f"mint-migrate smoke {train} --steps 2"]
    if source:
        steps.append(f"mint-migrate parity {source} --train {train}")
    return steps


def resume_hint(train: str = "train.py") -> str:
    """How the generated train.py picks up after a stop (mint_run.py's --save-every / --resume)."""
    return (f"python {train} --save-every 50 saves the state (weights and Adam) every 50 steps, each listed "
            f"in LOG_DIR/checkpoints.jsonl; python {train} --resume latest continues from the newest one "
            "(or --resume tinker://... from a given one)")
