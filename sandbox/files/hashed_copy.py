"""A copy hashed on the way, at the speed of the slower of the two.

``copy_hashed(src, dst)`` copies what is left of open file ``src`` into the empty file
``dst`` (open for reading and writing) and returns the sha256 of what it copied. The bytes
move inside the kernel: a reflink (``FICLONE``) where the filesystem shares blocks, else
``os.copy_file_range`` in steps, else ``read``/``write``. A hashing thread follows the copy,
reading back from ``dst`` what has been copied so far (from the page cache the copy just
filled): the digest is of what ``dst`` holds, never of a source that could change after it was
read, and hashing (one core) overlaps the copy (the other). Size is bounded: more than
``max_bytes`` copied raises ``OutputTooLarge``, after at most ``max_bytes`` + one step.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import stat
import threading

from ..errors import OutputTooLarge

CHUNK = 1 << 20  # bytes a read, a write or a hashing step moves
STEP = 16 << 20  # bytes one copy_file_range is asked for: the hashing thread follows by these
SMALL = 4 << 20  # bytes up to which a file is hashed after its copy, on the caller's thread
FICLONE = 0x40049409  # ioctl: dst shares src's blocks (btrfs, xfs with reflink, ...)
# copy_file_range or FICLONE refused for this pair of files: fall back, never fail
_UNSUPPORTED = {
    *(errno.EXDEV, errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTTY, errno.EBADF),
    errno.ESPIPE,  # a pipe: no offsets
}


class _Follower:
    """The hashing thread: sha256 of ``fd`` from offset 0 up to what the copy says it wrote."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.digest = hashlib.sha256()
        self.error: BaseException | None = None
        self._written = 0
        self._done = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="hash-copy", daemon=True)
        self._thread.start()

    def wrote(self, total: int) -> None:
        with self._cond:
            self._written = total
            self._cond.notify()

    def finish(self) -> str:
        """Wait for the digest of everything written; raise what the thread met."""
        with self._cond:
            self._done = True
            self._cond.notify()
        self._thread.join()
        if self.error is not None:
            raise self.error
        return self.digest.hexdigest()

    def _run(self) -> None:
        pos = 0
        try:
            while True:
                with self._cond:
                    while pos >= self._written and not self._done:
                        self._cond.wait()
                    end, done = self._written, self._done
                while pos < end:
                    chunk = os.pread(self.fd, min(CHUNK, end - pos), pos)
                    if not chunk:
                        raise OSError(errno.EIO, "the copy ended before the bytes it wrote")
                    self.digest.update(chunk)  # releases the GIL: the copy goes on meanwhile
                    pos += len(chunk)
                if done and pos >= self._written:
                    return
        except BaseException as exc:  # handed to the copying thread by finish()
            self.error = exc


def copy_hashed(
    src: int, dst: int, *, max_bytes: int | None = None, what: str = "", digest: bool = True
) -> str | None:
    """Copy the rest of ``src`` into the empty ``dst`` (read-write: the hash reads it back);
    the sha256 of what ``dst`` holds after (None with ``digest=False``). ``what`` names the
    file in ``OutputTooLarge``."""
    st = os.fstat(src)
    if digest and stat.S_ISREG(st.st_mode) and st.st_size <= SMALL:
        # a small file: no thread, the copy then its digest read back, one after the other
        copied = _copy(src, dst, max_bytes, what, None)
        return _digest_of(dst, copied)
    follower = _Follower(dst) if digest else None
    try:
        copied = _copy(src, dst, max_bytes, what, follower)
    except BaseException:
        if follower is not None:
            try:
                follower.finish()
            except BaseException:  # the copy's error is the one to raise
                pass
        raise
    if follower is None:
        return None
    follower.wrote(copied)
    return follower.finish()


def _digest_of(fd: int, size: int) -> str:
    digest = hashlib.sha256()
    pos = 0
    while pos < size:
        chunk = os.pread(fd, min(CHUNK, size - pos), pos)
        if not chunk:
            raise OSError(errno.EIO, "the copy ended before the bytes it wrote")
        digest.update(chunk)
        pos += len(chunk)
    return digest.hexdigest()


def _copy(src: int, dst: int, max_bytes: int | None, what: str, follower: _Follower | None) -> int:
    """Bytes copied, by the fastest way the two files allow."""
    st = os.fstat(src)
    if max_bytes is not None and stat.S_ISREG(st.st_mode):
        size = st.st_size - os.lseek(src, 0, os.SEEK_CUR)
        if size > max_bytes:
            raise OutputTooLarge(what or "a file", size, max_bytes)
    limit = None if max_bytes is None else max_bytes + 1  # one byte over is enough to tell
    copied = _clone(src, dst) if stat.S_ISREG(st.st_mode) else None
    if copied is not None:
        if follower is not None:
            follower.wrote(copied)
        return _bounded(copied, max_bytes, what)
    copied = 0
    ranged = hasattr(os, "copy_file_range")
    while limit is None or copied < limit:
        want = STEP if limit is None else min(STEP, limit - copied)
        n = 0
        if ranged:
            try:
                n = os.copy_file_range(src, dst, want)
            except OSError as exc:
                if exc.errno not in _UNSUPPORTED or copied:
                    raise
                ranged = False
        if not ranged:
            n = _read_write(src, dst, min(want, CHUNK))
        if n == 0:
            break
        copied += n
        _bounded(copied, max_bytes, what)
        if follower is not None:
            follower.wrote(copied)
    return copied


def _clone(src: int, dst: int) -> int | None:
    """Bytes shared by a reflink of all of ``src`` (from its start), or None where the
    filesystem cannot (or ``src`` is not at its start: a reflink takes the whole file)."""
    if os.lseek(src, 0, os.SEEK_CUR) != 0:
        return None
    try:
        fcntl.ioctl(dst, FICLONE, src)
    except OSError as exc:
        if exc.errno in _UNSUPPORTED:
            return None
        raise
    size = os.fstat(dst).st_size
    os.lseek(src, size, os.SEEK_SET)
    os.lseek(dst, size, os.SEEK_SET)
    return size


def _read_write(src: int, dst: int, want: int) -> int:
    chunk = os.read(src, want)
    view = memoryview(chunk)
    while view:
        view = view[os.write(dst, view) :]
    return len(chunk)


def _bounded(copied: int, max_bytes: int | None, what: str) -> int:
    if max_bytes is not None and copied > max_bytes:
        raise OutputTooLarge(what or "a file", copied, max_bytes)
    return copied
