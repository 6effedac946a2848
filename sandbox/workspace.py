"""The workspace folder seen from the host: upload, listing and fetch as plain file operations.

Every backend keeps its workspace as a host folder (the docker backend bind-mounts it), so
files move by hardlink or copy, never through the kernel.

Ownership, decided once for every backend:

- ``open`` sets the workspace root to ``mode`` (0o777 for a container whose kernel runs as
  another uid; ``None`` leaves it alone, right when the kernel runs as the host user), and
  folders ``upload`` creates get the same mode. In a world-writable folder without the
  sticky bit, either side can rename or unlink the other's files.
- ``upload`` removes a same-named file first, then COPIES by default. Given ``kernel_uid``
  (the uid kernels run as: the docker backend's 1000) it hardlinks instead when it can:
  same filesystem, the source readable by all, not owned by ``kernel_uid`` and not
  group/other-writable.
  A link shares the source's inode, so a kernel that could write the source could change
  it by rewriting the input *in place*; a kernel of another uid can replace an input
  (unlink/rename in the 0o777 folder) but never write into it. Moving a 1 GB input then
  costs nothing.
- ``fetch`` always COPIES, into a temporary file beside ``dest`` and ``os.replace``: the copy
  belongs to the host user, and a later kernel writing to the same workspace file in place
  can never change a fetched file.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import uuid
from pathlib import Path

from .base import FileStat, Sandbox
from .errors import PathRefused
from .paths import check_name, confined

WORLD = 0o777


class Workspace:
    """A host folder holding one run's working files."""

    def __init__(
        self, root: Path, *, mode: int | None = WORLD, kernel_uid: int | None = None
    ) -> None:
        self.root = Path(root)
        self.mode = mode
        self.kernel_uid = kernel_uid

    def open(self) -> None:
        """Create the folder (and its parents) if missing; set its mode. Idempotent."""
        self.root.mkdir(parents=True, exist_ok=True)
        if self.mode is not None and stat.S_IMODE(self.root.stat().st_mode) != self.mode:
            os.chmod(self.root, self.mode)

    def upload(self, src: Path, name: str) -> None:
        """Place ``src`` at ``name``, removing a same-named file first; create parent folders.

        The copy (or link) is readable by every user, so a kernel of another uid can read it.
        """
        check_name(name)
        src = Path(src)
        if not src.is_file():
            raise PathRefused(str(src), "is not a regular file on the host (nothing to upload)")
        dest = self.root / name
        self._make_parents(name)
        try:
            st = os.lstat(dest)
        except FileNotFoundError:
            pass
        else:
            if stat.S_ISDIR(st.st_mode):
                raise PathRefused(name, "is a folder in the workspace; remove it or rename")
            os.unlink(dest)  # never follows a symlink; drops the old inode's link
        if self._may_link(src.stat()):
            try:
                os.link(src, dest)
                return
            except OSError as exc:
                if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                    raise
        _copy_atomic(src, dest, mode=0o644)

    def _may_link(self, st: os.stat_result) -> bool:
        """True when a kernel of ``kernel_uid`` could not write through a link to ``st``."""
        if self.kernel_uid is None or st.st_uid == self.kernel_uid:
            return False
        readable = st.st_mode & stat.S_IROTH  # a link keeps the source's mode
        return bool(readable) and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)

    def listing(self) -> dict[str, FileStat]:
        """Relative posix path -> FileStat of every regular file (symlinks, FIFOs skipped)."""
        found: dict[str, FileStat] = {}
        stack = [(self.root, "")]
        while stack:
            folder, prefix = stack.pop()
            try:
                entries = os.scandir(folder)
            except (FileNotFoundError, NotADirectoryError, PermissionError):
                continue
            with entries:
                for entry in entries:
                    rel = prefix + entry.name
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((Path(entry.path), rel + "/"))
                    elif entry.is_file(follow_symlinks=False):
                        try:
                            st = entry.stat(follow_symlinks=False)
                        except FileNotFoundError:  # removed while we looked
                            continue
                        found[rel] = FileStat(size=st.st_size, mtime_ns=st.st_mtime_ns)
        return found

    def fetch(self, name: str, dest: Path) -> None:
        """Copy workspace file ``name`` to ``dest`` (regular files inside the workspace only)."""
        path = confined(self.root, name)
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        _copy_atomic(path, dest)

    def _make_parents(self, name: str) -> None:
        """Create the folders above ``name`` one by one, refusing any that is not a folder."""
        folder = self.root
        for part in name.split("/")[:-1]:
            folder = folder / part
            try:
                st = os.lstat(folder)
            except FileNotFoundError:
                folder.mkdir()
                if self.mode is not None:
                    os.chmod(folder, self.mode)
                continue
            if not stat.S_ISDIR(st.st_mode):
                raise PathRefused(name, f"{folder.relative_to(self.root)} is not a folder")


class FolderSandbox(Sandbox):
    """A sandbox whose workspace is a host folder: files move by plain file operations."""

    workspace: Workspace

    def upload(self, src: Path, name: str) -> None:
        self.workspace.upload(src, name)

    def listing(self) -> dict[str, FileStat]:
        return self.workspace.listing()

    def fetch(self, name: str, dest: Path) -> None:
        self.workspace.fetch(name, dest)


def _copy_atomic(src: Path, dest: Path, mode: int | None = None) -> None:
    """Copy ``src`` to ``dest`` through a temporary file in ``dest``'s folder and os.replace."""
    tmp = dest.with_name(f".{dest.name[:200]}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        shutil.copyfile(src, tmp)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
