"""The one rule for files a tool writes: inside the workspace root, never over a file unasked."""

from pathlib import Path

from mcp_server.errors import OutsideWorkspace, WouldOverwrite


def resolve_output(path: str | Path, workspace: Path, *, overwrite: bool) -> Path:
    """Turn a user-given output path into an absolute one that is safe to write.

    Relative paths are taken from the workspace root. The resolved path (symlinks followed) must
    stay inside the root, and an existing file is only replaced when `overwrite` is true.
    """
    root = workspace.resolve()
    target = Path(path)
    if not target.is_absolute():
        target = root / target
    target = target.resolve()
    if target != root and root not in target.parents:
        raise OutsideWorkspace(
            f"{target} is outside the workspace root {root}; write inside it, or start the "
            "server with --workspace pointing at a folder that contains this path."
        )
    if target.exists() and not overwrite:
        raise WouldOverwrite(f"{target} already exists; pass overwrite=true (CLI: --force) to replace it.")
    return target


def write_text(path: str | Path, text: str, workspace: Path, *, overwrite: bool) -> Path:
    target = resolve_output(path, workspace, overwrite=overwrite)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target
