"""Imported by the MCP server's worker fork server only (mint_migrate.worker): importing it makes one
small call of each engine, so every worker forked afterwards starts with the lazy imports done and
the templates compiled (a cold migrate costs about 0.4 s more than a warm one). Nothing is written
outside a temporary folder; a failure here only leaves the workers cold."""

import contextlib
import tempfile
from pathlib import Path

_SFT = "from trl import SFTConfig, SFTTrainer\nSFTTrainer(model='Qwen/Qwen3-0.6B', args=SFTConfig(output_dir='o')).train()\n"


def _warm() -> None:
    from mint_migrate.lint import lint_source
    from mint_migrate.migrate import migrate

    with tempfile.TemporaryDirectory(prefix="mint-migrate-warm-") as folder:
        source = Path(folder) / "sft.py"
        source.write_text(_SFT, encoding="utf-8")
        migrate(source, [], output_dir=None, workspace=Path(folder), overwrite=False)
    lint_source(_SFT)


with contextlib.suppress(Exception):
    _warm()
