"""One way to replace a file: a new temp file beside it, fsync, os.replace, fsync the folder.

A reader sees the old content or the new, never a mix; a crash leaves at most a temp file.
``durable=False`` skips the two fsyncs: the replacement is as atomic, and reaches the disk
with the system's writeback. run.json, the run's commit point, is always durable; a phase's
record and workspace manifests are not forced to the disk one by one (two fsyncs each cost
a phase more than its bookkeeping does).
"""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: Path, data: bytes, *, mode: int | None = None, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically (O_EXCL temp: never a file planted there)."""
    import tempfile  # a command that only reads never writes

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:100]}.", suffix=".tmp")
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None:
                os.fchmod(fd, mode)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if durable:
        fsync_folder(path.parent)


def fsync_folder(folder: Path) -> None:
    dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
