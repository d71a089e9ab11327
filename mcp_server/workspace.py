"""The fence around what MCP tools touch: read, run and write only inside the workspace root(s).

Rules (the CLI, run by a person, passes ANYWHERE and may go wherever its paths say):
- A path is taken the way a shell would: `~` and `~user` are expanded, for reading and for writing
  alike; a relative path is relative to the workspace root.
- Reads and runs stay inside the roots: the workspace root and, when the MCP client sends them,
  its roots. `inside()` checks a path lexically and walks it without following a link below the
  root; `read_fence()` makes the engine's own reads (companion files a launch script names) obey
  the same roots.
- Writes stay inside the workspace root and go through directory file descriptors: every folder
  is opened with O_NOFOLLOW from the root down (a folder swapped for a link between a check and
  the write cannot lead outside), the text goes to a new file created with O_EXCL, and a rename
  puts it in place. An existing name is replaced, never written through, so a hard link to a file
  outside the workspace is not modified. Nothing is replaced without `overwrite`.
"""

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path

from mcp_server.errors import OutsideWorkspace, WouldOverwrite

ANYWHERE = Path(os.sep)  # the CLI's "workspace": a person names their own paths

_READ_ROOTS: ContextVar[tuple[Path, ...] | None] = ContextVar("mint_migrate_read_roots", default=None)


def user_path(path: str | os.PathLike[str]) -> Path:
    """A path as a shell would take it: `~` expanded."""
    return Path(os.path.expanduser(os.fspath(path)))


def _lexical(path: str | os.PathLike[str], workspace: Path) -> Path:
    """The absolute, normalised form of `path` (relative to the workspace), links not followed."""
    target = user_path(path)
    if not target.is_absolute():
        target = workspace / target
    return Path(os.path.normpath(target))


def _relative_to_some(target: Path, roots: Sequence[Path]) -> tuple[Path, Path] | None:
    """(root, target relative to it) for the first root that holds `target` lexically."""
    for root in roots:
        for form in {root.resolve(), Path(os.path.abspath(root))}:
            if target == form or form in target.parents:
                return form, target.relative_to(form)
    return None


def _outside(target: Path, roots: Sequence[Path], what: str) -> OutsideWorkspace:
    shown = ", ".join(str(r) for r in roots)
    return OutsideWorkspace(
        f"{target} is outside the workspace root{'s' if len(roots) > 1 else ''} {shown}; {what} inside it, or start "
        "the server with --workspace pointing at a folder that contains this path."
    )


def _not_a_real_folder(path: Path) -> OutsideWorkspace:
    return OutsideWorkspace(
        f"{path} is a link or not a folder; tools read and write only through real folders inside the workspace."
    )


def _open_dir(root: Path, parts: Sequence[str], *, create: bool) -> int:
    """An fd of root/parts..., each step opened with O_NOFOLLOW from the one before (made if
    `create`). A link anywhere below the root raises OutsideWorkspace."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i, part in enumerate(parts):
            try:
                try:
                    nxt = os.open(part, flags, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        missing = str(root.joinpath(*parts[: i + 1]))
                        raise FileNotFoundError(2, "No such file or directory", missing) from None
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, dir_fd=fd)
                    nxt = os.open(part, flags, dir_fd=fd)
            except (NotADirectoryError, IsADirectoryError) as exc:
                raise _not_a_real_folder(root.joinpath(*parts[: i + 1])) from exc
            except OSError as exc:
                if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a link
                    raise _not_a_real_folder(root.joinpath(*parts[: i + 1])) from None
                raise
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


# --- reading and running ---------------------------------------------------------------------------


def _locate(path: str | os.PathLike[str], workspace: Path, roots: Sequence[Path]) -> tuple[Path, Path, Path]:
    """(absolute path, the root holding it, the path relative to that root), checked lexically."""
    allowed = [workspace, *roots]
    target = _lexical(path, workspace.resolve())
    found = _relative_to_some(target, allowed)
    if found is None:
        raise _outside(target, allowed, "read")
    return target, *found


def inside(path: str | os.PathLike[str], workspace: Path, roots: Sequence[Path] = ()) -> Path:
    """`path` (relative to the workspace) as an absolute path inside the workspace or one of `roots`,
    reached without a link below its root. Raises OutsideWorkspace, or FileNotFoundError."""
    target, root, relative = _locate(path, workspace, roots)
    parts = relative.parts
    if parts:
        os.close(_open_dir(root, parts[:-1], create=False))
        with contextlib.suppress(FileNotFoundError):
            if os.path.islink(target):
                raise OutsideWorkspace(f"{target} is a link; tools read only real files inside the workspace.")
    return target


def read_text_inside(path: str | os.PathLike[str], workspace: Path, roots: Sequence[Path] = ()) -> tuple[Path, bytes]:
    """(path, content) of a file inside the roots, opened through folder fds with O_NOFOLLOW."""
    target, root, relative = _locate(path, workspace, roots)
    if not relative.parts:
        raise IsADirectoryError(21, "Is a directory", str(target))
    dir_fd = _open_dir(root, relative.parts[:-1], create=False)
    try:
        fd = os.open(relative.parts[-1], os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OutsideWorkspace(f"{target} is a link; tools read only real files inside the workspace.") from None
        raise type(exc)(exc.errno, exc.strerror, str(target)) from None
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "rb") as handle:
        if stat.S_ISDIR(os.fstat(handle.fileno()).st_mode):
            raise IsADirectoryError(21, "Is a directory", str(target))
        return target, handle.read()


@contextlib.contextmanager
def read_fence(roots: Sequence[Path]) -> Iterator[None]:
    """While active, `check_readable` refuses files outside `roots` (the MCP tools' engine calls)."""
    token = _READ_ROOTS.set(tuple(Path(r) for r in roots))
    try:
        yield
    finally:
        _READ_ROOTS.reset(token)


def check_readable(path: Path) -> Path:
    """`path` unchanged when no read fence is active or it lies inside the fence (links resolved)."""
    roots = _READ_ROOTS.get()
    if roots is None:
        return path
    real = Path(path).resolve()
    if _relative_to_some(real, [r.resolve() for r in roots]) is None:
        raise _outside(Path(path), list(roots), "read")
    return path


# --- writing -------------------------------------------------------------------------------------


def resolve_output(path: str | Path, workspace: Path, *, overwrite: bool) -> Path:
    """The absolute path a write of `path` will create: inside the workspace root (lexically, `~`
    expanded, relative paths from the root), and not an existing file unless `overwrite`."""
    root = workspace.resolve()
    if root == ANYWHERE:
        target = user_path(path).resolve()
    else:
        target = _lexical(path, root)
        if _relative_to_some(target, [workspace]) is None:
            raise _outside(target, [root], "write")
    if os.path.lexists(target) and not overwrite:
        raise WouldOverwrite(f"{target} already exists; pass overwrite=true (CLI: --force) to replace it.")
    return target


def write_text(path: str | Path, text: str, workspace: Path, *, overwrite: bool) -> Path:
    """Write `text` to `path` inside the workspace (see the module docstring); the path written."""
    target = resolve_output(path, workspace, overwrite=overwrite)
    root = workspace.resolve()
    if root == ANYWHERE:
        target.parent.mkdir(parents=True, exist_ok=True)
        dir_fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
    else:
        base, relative = _relative_to_some(target, [workspace])  # type: ignore[misc]
        if not relative.parts:
            raise IsADirectoryError(21, "Is a directory", str(target))
        dir_fd = _open_dir(base, relative.parts[:-1], create=True)
    try:
        _write_at(dir_fd, target.name, text.encode("utf-8"), overwrite=overwrite, shown=target)
    finally:
        os.close(dir_fd)
    return target


def _write_at(dir_fd: int, name: str, data: bytes, *, overwrite: bool, shown: Path) -> None:
    """A new file beside `name` (O_EXCL, O_NOFOLLOW), then renamed onto it: the old entry, whatever
    it was (a file, a hard link, a link), is replaced and never written through."""
    temporary = f".{name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if overwrite:
            try:
                os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except IsADirectoryError:
                raise IsADirectoryError(21, "Is a directory; give a file path", str(shown)) from None
        else:
            try:  # link() never replaces: an entry that appeared since the check stays as it is
                os.link(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
            except FileExistsError:
                raise WouldOverwrite(f"{shown} already exists; pass overwrite=true (CLI: --force) to replace it.") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=dir_fd)
