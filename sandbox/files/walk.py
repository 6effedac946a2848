"""Walking a folder the sandbox can write: iterative, bounded, and never skipping a folder.

``entries`` lists a tree depth first by descriptor (``O_NOFOLLOW | O_DIRECTORY`` opens
relative to the parent's descriptor, the inode checked against the listing). It holds one
descriptor per level of the folder it is in (never one per folder still to visit: those are
names in their parent's frame), reads each folder's listing once and closes it, and stops
with ``WalkRefused`` naming the folder when one cannot be opened (EMFILE, EACCES, ...), when
it is deeper than ``MAX_DEPTH`` levels or its path longer than ``MAX_PATH`` bytes, or when the
tree holds more than ``max_entries`` files, folders and others. Time is linear in the entries.

``clear`` empties a tree whatever its depth (a restore after a walk refused it): two
descriptors at a time, climbing back through ``..`` checked against the inode it came down
from, so a chain of any depth costs linear time and a name a level.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..errors import WalkRefused, shown

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_ENTRIES = 100_000  # files, folders and others one walk reads at the most
MAX_DEPTH = 256  # folder levels below the root (a descriptor each while the walk is there)
MAX_PATH = 4096  # bytes of one path below the root (PATH_MAX: longer ones no tool can open)

TOO_MANY = (
    "holds more than {limit} files and folders (the count passed it in {where}), the most a "
    "walk of it reads; remove files in the phase (or pack them into one archive)"
)


@dataclass
class _Frame:
    fd: int
    prefix: str  # "" for the root, else "a/b/"
    listed: bool = False
    folders: list[tuple[str, int, int]] = field(default_factory=list)  # (name, dev, ino) to visit


def entries(root: int, max_entries: int = MAX_ENTRIES) -> Iterator[tuple[str, os.stat_result]]:
    """(relative posix path, lstat) of every entry below the open folder ``root``, a folder
    before what it holds; ``WalkRefused`` where a folder cannot be read whole."""
    seen = 0
    stack = [_Frame(os.dup(root), "")]
    try:
        while stack:
            frame = stack[-1]
            if not frame.listed:
                frame.listed = True
                for name, st in _listed(frame):
                    seen += 1
                    if seen > max_entries:
                        where = shown(frame.prefix[:-1])
                        raise WalkRefused("", TOO_MANY.format(limit=max_entries, where=where))
                    yield frame.prefix + name, st
                    if stat.S_ISDIR(st.st_mode):
                        frame.folders.append((name, st.st_dev, st.st_ino))
                frame.folders.reverse()  # visited in listing order
            if not frame.folders:
                os.close(stack.pop().fd)
                continue
            name, dev, ino = frame.folders.pop()
            rel = frame.prefix + name
            sub = _enter(frame.fd, name, rel, (dev, ino), len(stack))
            if sub is not None:
                stack.append(_Frame(sub, rel + "/"))
    finally:
        for frame in stack:
            os.close(frame.fd)


def _listed(frame: _Frame) -> Iterator[tuple[str, os.stat_result]]:
    """The entries of one folder, as its listing is read (one descriptor while it is)."""
    try:
        with os.scandir(frame.fd) as listing:
            for entry in listing:
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:  # removed since it was listed: not there
                    continue
                yield entry.name, st
    except OSError as exc:
        raise WalkRefused(frame.prefix[:-1], f"cannot be listed ({exc.strerror})") from exc


def _enter(parent: int, name: str, rel: str, identity: tuple[int, int], depth: int) -> int | None:
    """A descriptor of folder ``name`` of ``parent`` (None: it is gone since it was listed)."""
    if depth >= MAX_DEPTH:
        raise WalkRefused(rel, f"is more than {MAX_DEPTH} folder levels deep; flatten it")
    if len(os.fsencode(rel)) > MAX_PATH:
        raise WalkRefused(rel, f"has a path longer than {MAX_PATH} bytes; shorten it")
    try:
        sub = os.open(name, DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as exc:
        reason = "was replaced by a link" if exc.errno in (errno.ELOOP, errno.ENOTDIR) else ""
        raise WalkRefused(rel, f"cannot be opened ({reason or exc.strerror})") from exc
    st = os.fstat(sub)
    if (st.st_dev, st.st_ino) != identity:
        os.close(sub)
        raise WalkRefused(rel, "was replaced while it was read")
    return sub


def clear(root: int) -> int:
    """Remove everything below the open folder ``root`` (links removed, never followed);
    the number of entries removed. Any depth: the walk climbs back through ``..``."""
    removed = 0
    fd = os.dup(root)
    names: list[str] = []  # the path from the root to fd, a name a level
    identities = [_identity(fd)]  # of every folder on that path, the root first
    try:
        pending, count = _clear_files(fd, names)
        stack = [pending]
        removed += count
        while True:
            if stack[-1]:
                name = stack[-1].pop()
                try:
                    sub = os.open(name, DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    rel = "/".join([*names, name])
                    raise WalkRefused(rel, f"cannot be opened ({exc.strerror})") from exc
                os.close(fd)
                fd = sub
                names.append(name)
                identities.append(_identity(fd))
                pending, count = _clear_files(fd, names)
                stack.append(pending)
                removed += count
                continue
            if not names:
                return removed
            parent = os.open("..", DIR_FLAGS, dir_fd=fd)
            if _identity(parent) != identities[-2]:
                os.close(parent)
                raise WalkRefused("/".join(names), "was moved while it was removed")
            os.close(fd)
            fd = parent
            identities.pop()
            stack.pop()
            name = names.pop()
            try:
                os.rmdir(name, dir_fd=fd)
            except OSError as exc:
                rel = "/".join([*names, name])
                raise WalkRefused(rel, f"cannot be removed ({exc.strerror})") from exc
            removed += 1
    finally:
        os.close(fd)


def _clear_files(fd: int, names: list[str]) -> tuple[list[str], int]:
    """Unlink every non-folder of folder ``fd``; its folders' names, and the number unlinked."""
    folders: list[str] = []
    count = 0
    try:
        with os.scandir(fd) as listing:
            for entry in listing:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.name)
                    continue
                try:
                    os.unlink(entry.name, dir_fd=fd)
                except FileNotFoundError:
                    continue
                count += 1
    except OSError as exc:
        raise WalkRefused("/".join(names), f"cannot be emptied ({exc.strerror})") from exc
    return folders, count


def _identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino
