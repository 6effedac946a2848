"""An object is used only as what its name says (RELIABILITY 51).

An object's name is the sha256 of its content, and nothing else vouches for it: a flow folder
that came from elsewhere may carry a ``.praxis/objects/`` of its choosing, and whoever can
write the store can change an object in place. So before an object goes anywhere (into a
workspace, a run's ``output/`` or ``scratch/``, a restored record, a manifest read back) it
is hashed by descriptor, or copied while it is hashed; a mismatch raises ``ObjectTampered``
naming the object and the file it stood for, and nothing of it is kept.

Each object is hashed once per process: the identity it had when it was hashed (device,
inode, size, mtime, ctime) is remembered with its name. Writing a file, changing its mode
or putting another file in its place changes one of them (ctime cannot be set back from
user space), so an object edited or replaced since is hashed again. Objects this process
writes into the store are remembered as they are written. Nothing about this is kept on disk,
where a shipped folder could fake it.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import stat
from pathlib import Path

from sandbox.files import CHUNK, CREATE_FLAGS, READ_FLAGS, hash_fd

from ...errors import RecordCorrupt

FICLONE = 0x40049409  # ioctl: the new file shares the source's blocks (btrfs, xfs, ...)
KEPT = 1 << 16  # identities remembered (then forgotten all at once)
_known: dict[tuple[int, int, int, int, int], str] = {}  # identity -> the sha256 it held


class ObjectTampered(RecordCorrupt):
    """Raised when an object of the store does not hash to its name: it was changed in place
    or put there outside praxis. Nothing of it was used."""

    def __init__(self, sha: str, path: Path, name: str) -> None:
        super().__init__(
            f"object {sha} of the store does not hold what its name says (it stood for "
            f"{name}): it was changed or put there outside praxis; remove it (rm {path}) "
            "and run again"
        )
        self.sha = sha
        self.path = path
        self.name = name


def _identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def remember(st: os.stat_result, sha: str) -> None:
    """The file whose status is ``st`` holds ``sha`` (this process wrote or hashed it)."""
    if len(_known) >= KEPT:
        _known.clear()
    _known[_identity(st)] = sha


def known(st: os.stat_result, sha: str) -> bool:
    return _known.get(_identity(st)) == sha


def check_fd(fd: int, sha: str, path: Path, name: str) -> os.stat_result:
    """Object ``sha`` open at ``fd`` holds what its name says (its status, as checked);
    else ObjectTampered."""
    st = os.fstat(fd)
    if known(st, sha):
        return st
    os.lseek(fd, 0, os.SEEK_SET)
    if not stat.S_ISREG(st.st_mode) or hash_fd(fd) != sha:
        raise ObjectTampered(sha, path, name)
    remember(st, sha)
    return st


def check(path: Path, sha: str, name: str) -> os.stat_result:
    """Object ``path`` (named ``sha``, standing for file ``name``) holds what its name says,
    read without following a link (its status, as checked); ObjectTampered if not, OSError
    if it cannot be read."""
    fd = os.open(path, READ_FLAGS)
    try:
        return check_fd(fd, sha, path, name)
    finally:
        os.close(fd)


def linked(path: Path, sha: str, before: os.stat_result) -> None:
    """Object ``path`` was checked (``before``) and then linked elsewhere, which changes its
    ctime: when nothing else about it changed, remember it as it is now, so the link costs
    no second hash."""
    try:
        after = os.stat(path, follow_symlinks=False)
    except OSError:
        return
    if (after.st_dev, after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_dev,
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    ):
        remember(after, sha)


def link(path: Path, sha: str, dest: Path, name: str) -> None:
    """Hard-link object ``path`` at ``dest`` once it holds ``sha``. A new link changes the
    object's ctime: when nothing else about it changed, it is remembered as it is now, so
    the link costs no second hash."""
    before = check(path, sha, name)
    os.link(path, dest, follow_symlinks=False)
    linked(path, sha, before)


def holds(path: Path, sha: str) -> bool:
    """Whether object ``path`` is there and holds ``sha`` (never raises)."""
    try:
        check(path, sha, sha)
    except (OSError, ObjectTampered):
        return False
    return True


def holds_as(path: Path, sha: str, copy: Path) -> bool:
    """Whether object ``path`` is there and holds ``sha``, shown by its bytes being those of
    ``copy``: a file this process wrote and hashed to ``sha`` from its own bytes, out of
    anyone else's reach (never raises). Comparing the two reads both (page cache, memcmp)
    where hashing the object reads it through sha256, about three times slower here; a file
    that changes while it is compared does not count."""
    try:
        fd = os.open(path, READ_FLAGS)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return False
        if known(st, sha):
            return True
        if not _same_bytes(fd, copy, st.st_size) or _identity(os.fstat(fd)) != _identity(st):
            return False
        remember(st, sha)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _same_bytes(fd: int, copy: Path, size: int) -> bool:
    other = os.open(copy, READ_FLAGS)
    try:
        if os.fstat(other).st_size != size:
            return False
        pos = 0
        while pos < size:
            mine = os.pread(fd, CHUNK, pos)
            if not mine or mine != os.pread(other, len(mine), pos):
                return False
            pos += len(mine)
        return not os.pread(fd, 1, pos)  # nothing past the size it had
    finally:
        os.close(other)


def read(path: Path, sha: str, name: str) -> bytes:
    """The content of object ``path``, once it hashed to ``sha``."""
    fd = os.open(path, READ_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ObjectTampered(sha, path, name)
        chunks = []
        while chunk := os.read(fd, CHUNK):
            chunks.append(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if hashlib.sha256(data).hexdigest() != sha:
        raise ObjectTampered(sha, path, name)
    return data


def copy(path: Path, sha: str, dest: Path, name: str, *, mode: int) -> None:
    """A new file ``dest`` (not there before; never a link to the object) holding object
    ``path``'s content, once that hashed to ``sha``: a reflink where the filesystem has them,
    else a copy made in the kernel and kept only if the object's identity did not change
    while it was hashed and copied (else a copy hashed as it is written). On a mismatch
    ``dest`` is removed, ObjectTampered."""
    src = os.open(path, READ_FLAGS)
    try:
        out = os.open(dest, CREATE_FLAGS & ~os.O_WRONLY | os.O_RDWR, 0o600)
        try:
            _fill(src, out, sha, path, name)
            os.fchmod(out, mode)
        except BaseException:
            os.close(out)
            dest.unlink(missing_ok=True)
            raise
        os.close(out)
    finally:
        os.close(src)


def _fill(src: int, out: int, sha: str, path: Path, name: str) -> None:
    st = os.fstat(src)
    if not stat.S_ISREG(st.st_mode):
        raise ObjectTampered(sha, path, name)
    try:
        fcntl.ioctl(out, FICLONE, src)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EXDEV, errno.EINVAL, errno.ENOTTY):
            raise
    else:  # the blocks are shared, never the inode: what is checked is what was kept
        if not known(st, sha):
            os.lseek(out, 0, os.SEEK_SET)
            if hash_fd(out) != sha:
                raise ObjectTampered(sha, path, name)
            remember(st, sha)
        return
    check_fd(src, sha, path, name)  # hashed unless this process knows it as it is
    os.lseek(src, 0, os.SEEK_SET)
    if _in_kernel(src, out, st.st_size) and known(os.fstat(src), sha):
        return  # nothing changed the object while it was checked and copied
    os.lseek(src, 0, os.SEEK_SET)
    os.ftruncate(out, 0)
    os.lseek(out, 0, os.SEEK_SET)
    digest = hashlib.sha256()  # what is hashed is what is written
    while chunk := os.read(src, CHUNK):
        digest.update(chunk)
        view = memoryview(chunk)
        while view:
            view = view[os.write(out, view) :]
    if digest.hexdigest() != sha:
        raise ObjectTampered(sha, path, name)


def _in_kernel(src: int, out: int, size: int) -> bool:
    """Copy an object just checked without reading it into this process; False when the
    system cannot (the caller copies, hashing)."""
    try:
        while os.copy_file_range(src, out, CHUNK << 4):
            pass
    except OSError:
        return False
    return os.fstat(out).st_size == size
