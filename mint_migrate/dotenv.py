"""The one `.env` reader: settings a run will see, read the way every scaffolded train.py reads them.

A scaffold's `load_dotenv()` (scaffolds/partials/env.py.j2, generated code for users) reads
KEY=VALUE lines from ./.env, then from a .env beside the script, and never replaces a variable
the shell exported. Preflight and smoke runs ask for MINT_BASE_URL / MINT_API_KEY through
`setting()`, so they check and use what the script will really get.
"""

import os
from pathlib import Path

from mint_migrate import userfiles


def dotenv_files(script: Path | None = None) -> list[Path]:
    """The .env files a script started from the current directory reads, in order."""
    paths = [Path.cwd() / ".env"]
    if script is not None:
        beside = Path(script).resolve().parent / ".env"
        if beside not in paths:
            paths.append(beside)
    return [path for path in paths if path.is_file()]


def parse_dotenv(text: str) -> dict[str, str]:
    """KEY=VALUE lines (an `export ` prefix, quotes around the value and # comments allowed)."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip().removeprefix("export ").strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        values.setdefault(key.strip(), value.strip().strip("'\""))
    return values


def _read(path: Path) -> dict[str, str]:
    try:
        return parse_dotenv(userfiles.read_text(path, errors="replace"))  # a FIFO named .env is skipped
    except OSError:
        return {}


def dotenv_values(script: Path | None = None) -> dict[str, str]:
    """Every KEY=VALUE the .env files give a run of `script`, the first file's winning."""
    values: dict[str, str] = {}
    for path in dotenv_files(script):
        for key, value in _read(path).items():
            values.setdefault(key, value)
    return values


def setting(name: str, script: Path | None = None) -> tuple[str | None, str | None]:
    """(value, where it came from) for `name`: the environment, else the first .env that sets it,
    even to an empty value (load_dotenv's setdefault then keeps that empty value: the script sees
    the name unset). `where` is "environment" or the .env path; (None, None) when nothing sets it."""
    if name in os.environ:  # even empty: load_dotenv's setdefault keeps an exported empty value too
        return os.environ[name], "environment"
    for path in dotenv_files(script):
        values = _read(path)
        if name in values:
            return values[name], str(path)
    return None, None
