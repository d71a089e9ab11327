"""The fence around what MCP tools touch: read, run and write only inside the workspace root(s).

Rules (the CLI, run by a person, passes ANYWHERE and may go wherever its paths say):
- A path is taken the way a shell would: `~` and `~user` are expanded, for reading and for writing
  alike; a relative path is relative to the workspace root.
- Reads and runs stay inside the roots: the workspace root and, when the MCP client sends them,
  its roots. `inside()` checks a path lexically and walks it without following a link below the
  root; `read_fence()` makes the engine's own reads (companion files a launch script names) obey
  the same roots.
- No check-then-use: a check of a path says nothing about what the same name holds a moment later
  (a folder or file swapped for a link). So under a fence a file is opened first and the opened
  descriptor's real place (/proc/self/fd) is checked and read (`read_bytes_checked`), and a script
  to run is opened through folder fds with O_NOFOLLOW and run from those fds (`pinned_script`: the
  child fchdir()s to the folder fd and compiles the file fd's content). What stays by name is what
  the script itself does once running (its imports, its open() calls, multiprocessing re-running
  `__file__`): running a script is running the user's code, which the fence does not sandbox. A
  hard link inside the roots to a file elsewhere reads as the file it is (its name is inside);
  the tools never create one. Parity's source side runs the pinned fds too (its harness's
  --script-fds); the data file it is given is checked in the parent (the rows compared are read
  through `read_bytes_checked`) but its harness opens it again by name, and a smoke run reads the
  .env beside the script by name for the keys to redact: the two reads left by name.
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
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path

from mint_migrate import userfiles
from mint_migrate.errors import MintMigrateError, OutsideWorkspace, WouldOverwrite

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
        fd = userfiles.open_regular(relative.parts[-1], dir_fd=dir_fd, nofollow=True, shown=str(target))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OutsideWorkspace(f"{target} is a link; tools read only real files inside the workspace.") from None
        if isinstance(exc, userfiles.NotARegularFile):
            raise
        raise type(exc)(exc.errno, exc.strerror, str(target)) from None
    finally:
        os.close(dir_fd)
    try:
        return target, userfiles.read_fd(fd, str(target))
    finally:
        os.close(fd)


@contextlib.contextmanager
def read_fence(roots: Sequence[Path]) -> Iterator[None]:
    """While active, `read_bytes_checked` and `pinned_script` refuse files outside `roots` (the MCP
    tools' engine calls)."""
    token = _READ_ROOTS.set(tuple(Path(r) for r in roots))
    try:
        yield
    finally:
        _READ_ROOTS.reset(token)


@contextlib.contextmanager
def also_readable(folder: Path) -> Iterator[None]:
    """Under a read fence, `folder` (one the engine made itself, a temporary one) is inside it too."""
    roots = _READ_ROOTS.get()
    if roots is None:
        yield
        return
    with read_fence([*roots, folder]):
        yield


def _open_checked(path: Path) -> int:
    """An fd of `path` (O_NONBLOCK, so a FIFO cannot hang the tool), opened FIRST and then checked:
    the place the fd really points at (/proc/self/fd) must lie inside the fence. A link swapped in
    before the open is seen here; one swapped in after it changes nothing about this fd."""
    roots = _READ_ROOTS.get()
    assert roots is not None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket
            raise userfiles.NotARegularFile(f"{path} is a socket; tools read only regular files.", str(path)) from None
        raise
    try:
        real = Path(os.readlink(f"/proc/self/fd/{fd}"))
        if _relative_to_some(real, [r.resolve() for r in roots]) is None:
            raise _outside(Path(path), list(roots), "read")
        userfiles.check_regular(fd, str(path))  # a FIFO, a device or a huge file is refused here
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes_checked(path: str | os.PathLike[str]) -> bytes:
    """The content of `path`. Under a read fence, read from the one descriptor whose real place was
    checked to lie inside the fence (never check a path and then read it by name)."""
    if _READ_ROOTS.get() is None:
        return userfiles.read_bytes(path)
    fd = _open_checked(Path(path))
    try:
        return userfiles.read_fd(fd, str(path))
    finally:
        os.close(fd)


def read_text_checked(path: str | os.PathLike[str], *, errors: str = "strict") -> str:
    """`read_bytes_checked` decoded as UTF-8."""
    return read_bytes_checked(path).decode("utf-8", errors=errors)


def fenced() -> bool:
    """Whether a read fence is active (an MCP tool's engine call)."""
    return _READ_ROOTS.get() is not None


def line_inside(path: str, number: int) -> str | None:
    """Line `number` of the file at `path` read through the fence now, or None (outside the fence,
    not a regular file, no such line)."""
    try:
        lines = read_text_checked(path, errors="replace").splitlines()
    except (OSError, MintMigrateError):
        return None
    return lines[number - 1] if 0 < number <= len(lines) else None


# The child's first code when a fenced tool runs a script: run the script whose folder and file the
# parent opened (pinned) and passed as fds, as `python SCRIPT ARGS` would (argv, __file__, sys.path[0]
# the script's real folder, the cwd that folder). Its names are deleted before the script runs.
_PINNED_RUN = """\
def _pinned_script():
    import os, sys
    dir_fd, file_fd = int(sys.argv[1]), int(sys.argv[2])
    os.fchdir(dir_fd)
    os.close(dir_fd)
    with os.fdopen(file_fd, "rb") as handle:
        source = handle.read()
    path = os.path.join(os.getcwd(), sys.argv[3])
    sys.argv[:] = [path, *sys.argv[4:]]
    sys.path[0] = os.getcwd()
    globals()["__file__"] = path
    del globals()["_pinned_script"]
    return compile(source, path, "exec")
exec(_pinned_script())
"""


class PinnedScript:
    """A script to run: its `source`, the `command` prefix (the interpreter and what names the
    script) and the `cwd` and `pass_fds` to start it with. Under a read fence the folder and the file
    are open descriptors (reached with O_NOFOLLOW from the fence root) that the child runs from, so
    nothing swapped in after the check can be run; `close()` when the child has started."""

    def __init__(self, path: Path, source: bytes, command: list[str], cwd: Path | None, fds: tuple[int, ...]):
        self.path, self.source, self.command, self.cwd, self.pass_fds = path, source, command, cwd, fds

    def __enter__(self) -> "PinnedScript":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for fd in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.pass_fds = ()


def pinned_script(path: str | os.PathLike[str], python: str) -> PinnedScript:
    """`path` ready to run with `python`. Without a fence (the CLI) it is run by name from its folder,
    as ever. Under a fence the folder chain is opened from the fence root with O_NOFOLLOW and the
    file with O_NOFOLLOW beside it, and the child runs the content of that very file from that very
    folder (_PINNED_RUN). Raises OutsideWorkspace, FileNotFoundError or IsADirectoryError."""
    roots = _READ_ROOTS.get()
    if roots is None:
        script = Path(path).expanduser().resolve()
        return PinnedScript(script, userfiles.read_bytes(script), [python, str(script)], script.parent, ())
    target, root, relative = _locate(path, roots[0], roots[1:])
    if not relative.parts:
        raise IsADirectoryError(21, "Is a directory", str(target))
    dir_fd = _open_dir(root, relative.parts[:-1], create=False)
    try:
        try:
            file_fd = os.open(relative.parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise OutsideWorkspace(f"{target} is a link; tools run only real files inside the workspace.") from None
            raise type(exc)(exc.errno, exc.strerror, str(target)) from None
        try:
            userfiles.check_regular(file_fd, str(target))
            source = userfiles.read_fd(file_fd, str(target))  # pread: the child reads the fd from offset 0
        except BaseException:
            os.close(file_fd)
            raise
    except BaseException:
        os.close(dir_fd)
        raise
    command = [python, "-c", _PINNED_RUN, str(dir_fd), str(file_fd), target.name]
    return PinnedScript(target, source, command, None, (dir_fd, file_fd))


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
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise MintMigrateError(
                f"cannot write {target}: {target.parent} (or a folder above it) is a file, not a folder. Give an "
                "output folder that is new or a folder already."
            ) from None
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
