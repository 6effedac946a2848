"""The workspace folder seen from the host: upload, listing, fetch and remove, by descriptor.

Every backend keeps its workspace as a host folder (the docker backend bind-mounts it), so
files move by hardlink or copy, never through the kernel, and always through ``Tree``
(descriptor-relative, no-follow: ``sandbox/tree.py``). ``WorkspaceFolder`` is that folder;
``FolderSandbox`` is a sandbox composed of one: the file half of its contract (upload,
listing, fetch and the workspace edits) IS its ``workspace``'s methods, bound when looked up
(``Composed``), checked by mypy against the contract's signatures.

What a kernel may do with a file the host placed, decided once for every backend:

- ``upload`` removes a same-named file first, then places a READ-ONLY file (0444): a phase
  reads its inputs and writes new files. It COPIES by default. Given ``kernel_uid`` (the uid
  kernels run as: the docker backend's 1000) it hardlinks instead when a kernel could never
  write the source: not owned by ``kernel_uid``, read-only to everyone. A link shares the
  source's inode, so this is what lets the host place a recorded file (a read-only object of
  the run's content store) in the workspace without a copy, and without the kernel ever being
  able to change the record through it.
- ``fetch`` always COPIES from an open descriptor into a new host file: the copy belongs to
  the host user, and a later kernel can never change a fetched file.

A disk quota (``disk``: bytes) makes the folder a mount of its own: a sparse ext4 image beside
it (``<folder>.img``) loop-mounted with nosuid,nodev. A phase that fills it gets ENOSPC in
its own code, and the host is never filled. It needs root (mount); without it the folder is
a plain folder, with a warning.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from .base import FileStat, Sandbox
from .errors import PathRefused, SandboxUnavailable
from .paths import check_name
from .tree import Tree

log = logging.getLogger("sandbox")

WORLD = 0o777
READ_ONLY = 0o444
P = ParamSpec("P")
R = TypeVar("R")


class WorkspaceFolder:
    """A host folder holding one run's working files."""

    def __init__(
        self,
        root: Path,
        *,
        mode: int | None = WORLD,
        kernel_uid: int | None = None,
        disk: int | None = None,
    ) -> None:
        self.root = Path(root)
        self.mode = mode
        self.kernel_uid = kernel_uid
        self.disk = disk  # bytes, or None: no quota
        self.mounted = False  # a quota mount this object made (and unmounts at close)
        self.tree = Tree(self.root, folder_mode=mode)

    @property
    def image(self) -> Path:
        return self.root.with_name(self.root.name + ".img")

    def open(self) -> None:
        """Create the folder (and its parents) if missing, mount its quota; set its mode."""
        self.root.mkdir(parents=True, exist_ok=True)
        if self.disk is not None:
            # mounted already: by a runner that died before it unmounted; unmount it at close
            self.mounted = os.path.ismount(self.root) or self._mount()
        if self.mode is not None and stat.S_IMODE(self.root.stat().st_mode) != self.mode:
            os.chmod(self.root, self.mode)

    def close(self) -> None:
        """Unmount a quota mount this object made (its image keeps the files). Idempotent."""
        if self.mounted:
            self.mounted = False
            unmount(self.root)

    @property
    def quota(self) -> int | None:
        """The disk quota in force, in bytes (None: none)."""
        return self.disk if os.path.ismount(self.root) else None

    def _mount(self) -> bool:
        assert self.disk is not None
        image = self.image
        try:
            if not image.exists():
                with open(image, "xb") as fh:
                    fh.truncate(self.disk)
                _run(
                    ["mkfs.ext4", "-q", "-F", "-m", "0", "-J", "size=4", "-E",
                     "lazy_itable_init=1,lazy_journal_init=1,nodiscard", str(image)]
                )  # fmt: skip
            if any(self.root.iterdir()):
                raise SandboxUnavailable(f"{self.root} is not empty; cannot mount its quota")
            _wait_unused(image)
            _run(["mount", "-o", "loop,nosuid,nodev", str(image), str(self.root)])
        except (OSError, SandboxUnavailable) as exc:
            log.warning(
                "no disk quota for %s (%s): the workspace is a plain folder", self.root, exc
            )
            return False
        shutil.rmtree(self.root / "lost+found", ignore_errors=True)
        return True

    # -- files -----------------------------------------------------------------------------

    def upload(self, src: Path, name: str) -> None:
        """Place ``src`` at ``name`` read-only, removing a same-named file first."""
        check_name(name)
        src = Path(src)
        try:
            st = os.stat(src, follow_symlinks=False)
        except OSError:
            st = None
        if st is None or not stat.S_ISREG(st.st_mode):
            raise PathRefused(str(src), "is not a regular file on the host (nothing to upload)")
        if self._may_link(st):
            try:
                self.tree.link_in(src, name)
                return
            except OSError as exc:  # another filesystem (EXDEV), a full link count, ...
                log.debug("cannot link %s (%s); copying", src, exc)
        self.tree.copy_in(src, name, mode=READ_ONLY)

    def _may_link(self, st: os.stat_result) -> bool:
        """True when a kernel of ``kernel_uid`` could never write through a link to ``st``."""
        if self.kernel_uid is None or st.st_uid == self.kernel_uid:
            return False
        return stat.S_IMODE(st.st_mode) & 0o777 == READ_ONLY

    def listing(self) -> dict[str, FileStat]:
        """Relative posix path -> FileStat of every regular file (links, FIFOs skipped)."""
        return {
            name: FileStat(size=e.size, mtime_ns=e.mtime_ns, ino=e.ino, ctime_ns=e.ctime_ns)
            for name, e in self.tree.listing().items()
        }

    def survey(self) -> tuple[dict[str, FileStat], set[str], set[str]]:
        """The listing, the folders and the strays, from one walk of the tree."""
        folders: set[str] = set()
        strays: set[str] = set()
        found = self.tree.listing(folders=folders, others=strays)
        files = {
            name: FileStat(size=e.size, mtime_ns=e.mtime_ns, ino=e.ino, ctime_ns=e.ctime_ns)
            for name, e in found.items()
        }
        return files, folders, strays

    def fetch(self, name: str, dest: Path, *, max_bytes: int | None = None) -> str:
        """Copy workspace file ``name`` to ``dest`` (regular files inside the workspace only);
        the sha256 of what was copied."""
        return self.tree.copy_out(name, Path(dest), max_bytes=max_bytes)

    def remove(self, name: str) -> None:
        self.tree.remove(name)

    def folders(self) -> set[str]:
        return self.tree.folders()

    def strays(self) -> set[str]:
        return self.tree.strays()

    def make_folder(self, name: str) -> None:
        self.tree.make_folder(name)

    def remove_folder(self, name: str) -> None:
        self.tree.remove_folder(name)

    def clear(self) -> None:
        self.tree.clear()

    def seal(self) -> None:
        """Every file read-only, the host's: what a phase wrote, the next can only read.
        (Changing the owner needs root; otherwise files are only made 0444.)"""
        owner = (os.geteuid(), os.getegid()) if os.geteuid() == 0 else None
        self.tree.seal(owner)


class Composed(Generic[P, R]):
    """A method of the contract that is the sandbox's ``workspace``'s own: looked up on a
    sandbox, it is ``sandbox.workspace.<name>``, bound. Its type is that method's, so mypy
    checks it against the contract's signature as it would a method written out."""

    def __init__(self, method: Callable[Concatenate[WorkspaceFolder, P], R]) -> None:
        self.name = method.__name__

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self.name:  # the contract's method is the folder's method of that name
            raise TypeError(f"{owner.__name__}.{name} is composed of the folder's {self.name}")

    @overload
    def __get__(self, sandbox: None, owner: Any = None) -> Composed[P, R]: ...

    @overload
    def __get__(self, sandbox: FolderSandbox, owner: Any = None) -> Callable[P, R]: ...

    def __get__(
        self, sandbox: FolderSandbox | None, owner: Any = None
    ) -> Composed[P, R] | Callable[P, R]:
        if sandbox is None:
            return self
        bound: Callable[P, R] = getattr(sandbox.workspace, self.name)
        return bound


class FolderSandbox(Sandbox):
    """A sandbox composed of a host folder (``workspace``) and the kernels a subclass starts
    in it: files move by descriptor operations, in the folder's own methods."""

    workspace: WorkspaceFolder

    upload = Composed(WorkspaceFolder.upload)
    listing = Composed(WorkspaceFolder.listing)
    fetch = Composed(WorkspaceFolder.fetch)
    remove = Composed(WorkspaceFolder.remove)
    folders = Composed(WorkspaceFolder.folders)
    strays = Composed(WorkspaceFolder.strays)
    survey = Composed(WorkspaceFolder.survey)
    make_folder = Composed(WorkspaceFolder.make_folder)
    remove_folder = Composed(WorkspaceFolder.remove_folder)
    clear = Composed(WorkspaceFolder.clear)


def _run(cmd: list[str]) -> None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise SandboxUnavailable(f"{cmd[0]}: {exc.strerror}") from exc
    if done.returncode != 0:
        raise SandboxUnavailable(f"{cmd[0]} failed: {done.stderr.strip()[:200]}")


def _wait_unused(image: Path, timeout: float = 10.0) -> None:
    """Wait while a loop device still backs ``image`` (a container that held the last mount
    of it is going away, and the device clears itself after): mounting it through a second
    device meanwhile could show one filesystem twice."""
    deadline = time.monotonic() + timeout
    while _loop_devices(image):
        if time.monotonic() > deadline:
            raise SandboxUnavailable(f"{image} is still in use by a loop device")
        time.sleep(0.02)


def _loop_devices(image: Path) -> list[str]:
    """The loop devices whose backing file is ``image`` (from /sys: no process to start)."""
    target = str(image.resolve())
    found = []
    for backing in Path("/sys/block").glob("loop*/loop/backing_file"):
        try:
            name = backing.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            continue
        if name.removesuffix(" (deleted)") == target:
            found.append(backing.parent.parent.name)
    return found


def unmount(folder: Path) -> None:
    """Unmount what is mounted at ``folder`` (a workspace's quota mount, a container's
    runtime folder), lazily when it is busy; nothing when nothing is mounted there."""
    if os.path.ismount(folder):
        done = subprocess.run(["umount", str(folder)], capture_output=True, check=False)
        if done.returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)
