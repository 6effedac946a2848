"""A folder the host works in by descriptor: the one place that touches a workspace.

Code in the sandbox can write the workspace, so nothing in it is trusted: every operation
starts from a descriptor of the workspace root and walks down one component at a time with
``O_NOFOLLOW | O_DIRECTORY`` opens, lists with ``scandir`` on a descriptor, opens files with
``O_NOFOLLOW | O_NONBLOCK`` and checks ``fstat`` of what it opened (regular file, and for a
folder the same inode that was listed), copies from the open descriptor, and creates files
with ``O_CREAT | O_EXCL``. A symlink planted anywhere (even swapped in mid-operation, as with
renameat2 RENAME_EXCHANGE) makes the operation fail instead of leading out of the folder, as
CPython's ``shutil.rmtree`` does with ``_rmtree_safe_fd``. The runner also stops every
sandbox process before it calls any of these (``Sandbox.quiesce``): both guards hold.

Sizes are bounded: a listing stops at ``max_files`` entries (and at a folder too deep, or one
it cannot open: it never skips one, ``sandbox/files/walk.py``), a copy at ``max_bytes``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import BinaryIO

from .errors import PathRefused
from .files import (
    DIR_FLAGS,
    READ_FLAGS,
    folder_below,
    open_regular,
    refused,
    replace_at,
    replace_file,
)
from .files.hashed_copy import copy_hashed
from .files.walk import MAX_ENTRIES, clear, entries
from .paths import check_name

MAX_FILES = MAX_ENTRIES  # entries one listing reads at the most


@dataclass(frozen=True)
class Entry:
    """A regular file as a listing saw it. ``identity`` changes whenever its content can have."""

    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int
    mode: int
    uid: int

    @property
    def identity(self) -> tuple[int, int, int, int]:
        return (self.ino, self.size, self.mtime_ns, self.ctime_ns)


def _entry(st: os.stat_result) -> Entry:
    return Entry(
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        ctime_ns=st.st_ctime_ns,
        ino=st.st_ino,
        mode=stat.S_IMODE(st.st_mode),
        uid=st.st_uid,
    )


class Tree:
    """Operations on the folder ``root`` (a host path the sandbox cannot replace)."""

    def __init__(self, root: Path, *, folder_mode: int | None = None) -> None:
        self.root = Path(root)
        self.folder_mode = folder_mode  # mode of folders the host creates (None: umask)

    @contextmanager
    def _root(self) -> Iterator[int]:
        fd = os.open(self.root, DIR_FLAGS)  # the root itself is the host's, never a link
        try:
            yield fd
        finally:
            os.close(fd)

    @contextmanager
    def _parent(self, name: str, *, create: bool = False) -> Iterator[tuple[int, str]]:
        """A descriptor of ``name``'s folder (made when ``create``) and its last component."""
        check_name(name)
        *parts, last = name.split("/")
        with ExitStack() as stack:
            try:
                fd = stack.enter_context(
                    folder_below(self.root, parts, create=create, mode=self.folder_mode)
                )
            except OSError as exc:
                raise refused(name, exc) from exc
            yield fd, last

    # -- reading ---------------------------------------------------------------------------

    def listing(
        self,
        max_files: int = MAX_FILES,
        folders: set[str] | None = None,
        others: set[str] | None = None,
    ) -> dict[str, Entry]:
        """Every regular file below the root: relative posix path -> Entry. Folders are
        entered by descriptor only (and added to ``folders`` when given); links, FIFOs,
        devices and sockets are never followed or opened (their names go to ``others``).
        ``WalkRefused`` names a folder it cannot read whole (``sandbox/files/walk.py``): more than
        ``max_files`` entries, too deep, or one it cannot open; it never skips one."""
        found: dict[str, Entry] = {}
        with self._root() as root:
            for rel, st in entries(root, max_files):
                if stat.S_ISREG(st.st_mode):
                    found[rel] = _entry(st)
                elif stat.S_ISDIR(st.st_mode):
                    if folders is not None:
                        folders.add(rel)
                elif others is not None:
                    others.add(rel)
        return found

    def clear(self) -> int:
        """Remove everything below the root, whatever its depth or size (never following a
        link); the number of entries removed."""
        with self._root() as root:
            return clear(root)

    @contextmanager
    def open(self, name: str) -> Iterator[int]:
        """A read descriptor of regular file ``name``; PathRefused for anything else."""
        with self._parent(name) as (parent, last):
            fd = open_regular(parent, last, name)
        try:
            yield fd
        finally:
            os.close(fd)

    def copy_out(self, name: str, dest: Path, *, max_bytes: int | None = None) -> str:
        """Copy regular file ``name`` to host path ``dest`` (replaced atomically); its sha256."""
        with self.open(name) as fd:
            return copy_fd_to(fd, Path(dest), max_bytes=max_bytes, what=name)

    # -- writing ---------------------------------------------------------------------------

    def seal(self, owner: tuple[int, int] | None) -> int:
        """Make every regular file read-only (0444), owned by ``owner`` (uid, gid) when given:
        code of another uid can then read a file but never change it. The number sealed."""
        sealed = 0
        for name, entry in self.listing().items():
            if entry.mode == 0o444 and (owner is None or entry.uid == owner[0]):
                continue
            try:
                with self.open(name) as fd:
                    if owner is not None:
                        os.fchown(fd, *owner)
                    os.fchmod(fd, 0o444)
            except PathRefused:  # replaced since it was listed: not followed
                continue
            except PermissionError:  # a host that is not root cannot seal another's file
                continue
            sealed += 1
        return sealed

    def copy_in(self, src: Path, name: str, *, mode: int = 0o644) -> None:
        """Place a copy of host file ``src`` at ``name``, replacing a same-named file."""
        src_fd = os.open(src, READ_FLAGS)
        try:
            if not stat.S_ISREG(os.fstat(src_fd).st_mode):
                raise PathRefused(str(src), "is not a regular file on the host")
            with self._parent(name, create=True) as (parent, last):
                self._unlink(parent, last, name)
                replace_at(parent, last, partial(_copy_into, src_fd), mode=mode, durable=False)
        finally:
            os.close(src_fd)

    def link_in(self, src: Path, name: str) -> None:
        """Place a hard link to host file ``src`` at ``name``, replacing a same-named file."""
        with self._parent(name, create=True) as (parent, last):
            self._unlink(parent, last, name)
            os.link(src, last, dst_dir_fd=parent, follow_symlinks=False)

    def remove(self, name: str) -> None:
        """Remove file ``name`` (a link or a file, never followed), then the folders above
        it that it leaves empty. A name that is not there is not an error."""
        try:
            with self._parent(name) as (parent, last):
                self._unlink(parent, last, name)
        except PathRefused:
            return
        parts = name.split("/")[:-1]
        while parts:
            try:
                with self._parent("/".join(parts)) as (parent, last):
                    os.rmdir(last, dir_fd=parent)  # only when empty; never follows a link
            except (PathRefused, OSError):
                return
            parts.pop()

    def folders(self) -> set[str]:
        """Every folder below the root (relative posix paths), entered by descriptor."""
        found: set[str] = set()
        self.listing(folders=found)
        return found

    def strays(self) -> set[str]:
        """Every entry below the root that is neither a regular file nor a folder: links,
        FIFOs, sockets, devices (relative posix paths; none is followed or opened)."""
        found: set[str] = set()
        self.listing(others=found)
        return found

    def make_folder(self, name: str) -> None:
        """Create folder ``name`` and those above it (never through a link)."""
        with self._parent(f"{name}/x", create=True):  # every folder of the path; x unused
            pass

    def remove_folder(self, name: str) -> None:
        """Remove folder ``name`` if it is empty (never following a link)."""
        try:
            with self._parent(name) as (parent, last):
                os.rmdir(last, dir_fd=parent)
        except (PathRefused, OSError):
            pass

    @staticmethod
    def _unlink(parent: int, last: str, name: str) -> None:
        try:
            st = os.stat(last, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(st.st_mode):
            raise PathRefused(name, "is a folder in the workspace; remove it or rename")
        os.unlink(last, dir_fd=parent)


def copy_fd_to(fd: int, dest: Path, *, max_bytes: int | None = None, what: str = "") -> str:
    """Copy open file ``fd`` to ``dest``, replaced atomically (``sandbox.files``); its sha256,
    hashed on the way (``copy_hashed``: of what ``dest`` holds)."""

    dest.parent.mkdir(parents=True, exist_ok=True)
    got: list[str | None] = []

    def write(out: BinaryIO) -> None:
        got.append(copy_hashed(fd, out.fileno(), max_bytes=max_bytes, what=what))

    replace_file(dest, write, mode=0o644, durable=False)
    sha = got[0]
    assert sha is not None
    return sha


def _copy_into(src: int, out: BinaryIO) -> None:
    copy_hashed(src, out.fileno(), digest=False)
