"""The one door every read of a user's file goes through, for the CLI and the MCP tools alike.

A path a user (or a launch script, or an MCP client) names may be anything: a FIFO whose open()
blocks until a writer comes (on an MCP server's event loop that froze every later call), a device
such as /dev/zero that never ends, a socket, or a file of many gigabytes. So a read here:
- looks at what the name is first (stat), and opens nothing that is not a regular file;
- opens with O_NONBLOCK (a FIFO swapped in after that look cannot block the open) and checks the
  OPENED descriptor (fstat): only a regular file is read;
- reads at most `limit` bytes, and refuses a file larger than that with a clear error.
The MCP fence (mint_migrate.workspace) adds where a file may be; what a file may be is decided here.
"""

import errno
import os
import stat
from pathlib import Path

from mint_migrate.errors import MintMigrateError

MAX_BYTES = 64 * 1024 * 1024  # a script, config, .env or data sample; never a model or a dataset dump


class NotARegularFile(MintMigrateError, OSError):
    """A FIFO, device, socket or oversized file where a regular file was expected. An OSError too,
    so a caller that skips files it cannot read skips this one."""

    def __init__(self, message: str, filename: str):
        MintMigrateError.__init__(self, message)
        self.message, self.filename, self.errno, self.strerror = message, filename, errno.EINVAL, message

    def __str__(self) -> str:
        return self.message


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _refuse(shown: str, mode: int) -> NotARegularFile:
    return NotARegularFile(
        f"{shown} is {_kind(mode)}; mint-migrate reads only regular files. Give the path of the script, "
        "config or data file itself.",
        shown,
    )


def check_regular(fd: int, shown: str, limit: int = MAX_BYTES) -> os.stat_result:
    """The fstat of an open descriptor that must be a regular file no larger than `limit`."""
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", shown)
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(shown, info.st_mode)
    if info.st_size > limit:
        raise _too_large(shown, limit)
    return info


def _too_large(shown: str, limit: int) -> NotARegularFile:
    return NotARegularFile(
        f"{shown} is larger than {limit // (1024 * 1024)} MiB; mint-migrate reads scripts, configs and small "
        "data files. Give a smaller file (for data: a sample of the rows).",
        shown,
    )


def open_regular(
    path: str | os.PathLike[str], *, dir_fd: int | None = None, nofollow: bool = False, shown: str | None = None,
    limit: int = MAX_BYTES,
) -> int:
    """An fd (O_RDONLY, O_NONBLOCK, O_CLOEXEC; O_NOFOLLOW when `nofollow`) of a regular file of at
    most `limit` bytes. Raises NotARegularFile, IsADirectoryError or the open's own OSError."""
    shown = shown or os.fspath(path)
    try:  # look before opening: opening some devices does something
        info = os.stat(path, dir_fd=dir_fd, follow_symlinks=not nofollow)
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", shown) from None
    if not stat.S_ISREG(info.st_mode) and not stat.S_ISDIR(info.st_mode) and not stat.S_ISLNK(info.st_mode):
        raise _refuse(shown, info.st_mode)
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | (os.O_NOFOLLOW if nofollow else 0)
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket swapped in after the look
            raise NotARegularFile(f"{shown} is a socket; mint-migrate reads only regular files.", shown) from None
        raise
    try:
        check_regular(fd, shown, limit)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_fd(fd: int, shown: str, limit: int = MAX_BYTES) -> bytes:
    """All of an open regular file from offset 0 (the fd's own offset untouched), at most `limit`
    bytes: a file that grows past it while read is refused too."""
    chunks, offset = [], 0
    while chunk := os.pread(fd, min(1 << 20, limit + 1 - offset), offset):
        chunks.append(chunk)
        offset += len(chunk)
        if offset > limit:
            raise _too_large(shown, limit)
    return b"".join(chunks)


def read_bytes(path: str | os.PathLike[str], *, limit: int = MAX_BYTES) -> bytes:
    """The content of the regular file at `path` (see the module docstring)."""
    fd = open_regular(path, limit=limit)
    try:
        return read_fd(fd, os.fspath(path), limit)
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike[str], *, errors: str = "strict", limit: int = MAX_BYTES) -> str:
    """`read_bytes` decoded as UTF-8."""
    return read_bytes(path, limit=limit).decode("utf-8", errors=errors)


def require_regular(path: Path, in_a_folder: str = "give the file inside it") -> None:
    """Raise FileNotFoundError, IsADirectoryError (saying `in_a_folder`) or NotARegularFile unless
    `path` names a regular file (following links)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "No such file", str(path)) from None
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, f"Is a directory; {in_a_folder}", str(path))
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(str(path), info.st_mode)


def is_regular_file(path: Path) -> bool:
    """Whether `path` names a regular file (following links), without opening it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False
