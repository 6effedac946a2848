"""Files at the boundary, handled one way: praxis's runs, a flow's folder and a workspace are
all written by someone the host does not trust, so every path is opened here.

- **One file, no link** (``open_nofollow``, ``nofollow_opener``): ``os.open`` of a path whose
  last component is never followed (``O_NOFOLLOW``, ``O_CLOEXEC``): the one place outside this
  module's walks where a praxis or sandbox module opens a file a stranger may have replaced
  with a link (a run's records, a flow's files, a chat's journal). Nothing else names
  ``O_NOFOLLOW`` (tools/house.py holds that, in ``make lint``).
- **The walk** (``walk``): every entry below a root, folders entered by descriptor only, bounded
  in entries and depth; and ``clear``, which empties a folder the same way.
- **Confinement**: ``folder_below`` and ``open_below`` walk from a descriptor of a root one
  component at a time with ``O_NOFOLLOW``: a symbolic link anywhere on the way is refused
  (``PathRefused``), never followed, even when it points back inside; what is opened must be
  a regular file. ``confined`` is the same walk for a caller that needs the path.
- **Hashing**: ``hash_file`` and ``hash_fd``, the sha256 of a file read never through a link.
- **Replacing**: ``replace_at`` (relative to a folder's descriptor) and ``replace_file``,
  of bytes or of what a writer writes: a new file beside the old one, made with
  ``O_EXCL`` (never a file planted there), fsync, ``os.replace``, fsync of the folder. A reader
  sees the old content or the new, never a mix; a crash leaves at most a temp file.
  ``durable=False`` skips the fsyncs: as atomic, on the disk with the system's writeback.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from ..errors import PathRefused
from ..paths import check_name

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
CHUNK = 1 << 20


def refused(name: str, exc: OSError) -> PathRefused:
    """What an ``OSError`` met on the walk says to the person who named the file."""
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return PathRefused(name, "is or passes through a symbolic link or a non-folder")
    if exc.errno == errno.ENOENT:
        return PathRefused(name, "does not exist")
    return PathRefused(name, f"cannot be opened ({exc.strerror})")


# -- one file, no link ---------------------------------------------------------------------


def open_nofollow(
    path: Path | str, flags: int = os.O_RDONLY, mode: int = 0o600, *, dir_fd: int | None = None
) -> int:
    """``os.open(path, flags | O_NOFOLLOW | O_CLOEXEC, mode)``: a descriptor of ``path``, its
    last component never a link followed (OSError ELOOP for one). Whatever else the caller
    needs (regular file only, a bound) it checks on the descriptor."""
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)


def nofollow_opener(path: str, flags: int) -> int:
    """``open(path, ..., opener=nofollow_opener)``: the built-in ``open`` never through a link
    (files it creates are 0666 less the umask, as ``open``'s are)."""
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)


# -- confinement: the walk ----------------------------------------------------------------


@contextmanager
def folder_below(
    root: Path | str, parts: list[str], *, create: bool = False, mode: int | None = None
) -> Iterator[int]:
    """A descriptor of folder ``root/parts[0]/...``, opened component by component with no
    link followed; missing folders are made (0700, then ``mode``) when ``create``. An
    ``OSError`` of the walk is raised as it is (``refused`` words it)."""
    fd = os.open(root, DIR_FLAGS)  # the root itself is the caller's, never a link
    try:
        for part in parts:
            try:
                nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, 0o700, dir_fd=fd)
                except FileExistsError:
                    pass
                nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
                if mode is not None:
                    os.fchmod(nxt, mode)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    try:
        yield fd
    finally:
        os.close(fd)


def open_regular(dir_fd: int, name: str, shown: str | None = None) -> int:
    """A read descriptor of regular file ``name`` in folder ``dir_fd``; PathRefused for a
    link, a FIFO, a device or anything else."""
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise refused(shown or name, exc) from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise PathRefused(shown or name, "is not a regular file")
    return fd


@contextmanager
def open_below(root: Path | str, name: str) -> Iterator[int]:
    """A read descriptor of regular file ``name`` (a safe relative name) below ``root``."""
    check_name(name)
    *parts, last = name.split("/")
    try:
        with folder_below(root, parts) as parent:
            fd = open_regular(parent, last, name)
    except PathRefused:
        raise
    except OSError as exc:
        raise refused(name, exc) from exc
    try:
        yield fd
    finally:
        os.close(fd)


def confined(base: Path, name: str, *, must_exist: bool = True) -> Path:
    """``base/name`` once the walk shows it is a regular file below ``base`` reached through
    no link (or, when not ``must_exist``, that nothing on the way there is a link or not a
    folder: a missing folder is made later by the caller). PathRefused otherwise."""
    check_name(name)
    *parts, last = name.split("/")
    try:
        with folder_below(base, parts) as parent:
            try:
                st = os.stat(last, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                if must_exist:
                    raise PathRefused(name, "does not exist") from None
                return base / name
    except FileNotFoundError as exc:  # a folder on the way is missing: no link is there
        if must_exist:
            raise refused(name, exc) from exc
        return base / name
    except OSError as exc:
        raise refused(name, exc) from exc
    if stat.S_ISLNK(st.st_mode):
        raise PathRefused(name, "is a symbolic link")
    if not stat.S_ISREG(st.st_mode):
        raise PathRefused(name, "is not a regular file")
    return base / name


# -- hashing --------------------------------------------------------------------------------


def hash_fd(fd: int) -> str:
    """The hex sha256 of what is left to read of open file ``fd``."""
    digest = hashlib.sha256()
    while chunk := os.read(fd, CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def hash_file(path: Path | str, *, dir_fd: int | None = None) -> str:
    """The hex sha256 of file ``path``; OSError (ELOOP for a link) when it cannot be read."""
    fd = open_nofollow(path, dir_fd=dir_fd)
    try:
        return hash_fd(fd)
    finally:
        os.close(fd)


# -- replacing ------------------------------------------------------------------------------


def replace_at(
    dir_fd: int,
    name: str,
    data: bytes | Callable[[BinaryIO], None],
    *,
    mode: int | None = None,
    durable: bool = True,
) -> None:
    """Replace file ``name`` of folder ``dir_fd`` with ``data`` (bytes, or a writer that
    fills the new file), atomically. ``mode``: the new file's (None: 0600, as mkstemp)."""
    tmp = f".{name[:100]}.{os.urandom(6).hex()}.tmp"
    fd = os.open(tmp, CREATE_FLAGS, 0o600, dir_fd=dir_fd)
    try:
        try:
            if isinstance(data, bytes | bytearray | memoryview):
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            else:
                with os.fdopen(fd, "wb", closefd=False) as out:
                    data(out)
            if mode is not None:
                os.fchmod(fd, mode)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        raise
    if durable:
        os.fsync(dir_fd)


def replace_file(
    path: Path,
    data: bytes | Callable[[BinaryIO], None],
    *,
    mode: int | None = None,
    durable: bool = True,
) -> None:
    """Replace ``path`` with ``data`` or what the writer ``data`` writes, atomically."""
    dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        replace_at(dfd, path.name, data, mode=mode, durable=durable)
    finally:
        os.close(dfd)


def fsync_folder(folder: Path) -> None:
    """Make the entries of ``folder`` (a rename, a new file) durable."""
    dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
