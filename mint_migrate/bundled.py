"""Where the files that ship with mint-migrate live.

In a checkout they sit at the top of the repository; in an installed wheel hatch copies them to
`mint_migrate/_bundled/` (see pyproject.toml). Callers ask for a relative path and get the first
place that has it.
"""

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
_SEARCH = (_PACKAGE_DIR / "_bundled", _PACKAGE_DIR.parent)


def bundled_path(relative: str) -> Path:
    """Absolute path of a shipped file or folder such as "scaffolds" or "SKILL.md"."""
    for root in _SEARCH:
        candidate = root / relative
        if candidate.exists():
            return candidate
    raise FileNotFoundError(
        f"{relative} is not bundled with this install of mint-migrate; reinstall the package "
        "(pip install --force-reinstall mint-migrate) or run from a full checkout."
    )


def bundled_text(relative: str) -> str:
    return bundled_path(relative).read_text(encoding="utf-8")
