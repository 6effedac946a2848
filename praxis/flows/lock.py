"""The Flow's lock: fcntl on <flow>/run.lock, never on run.json. Freed when its holder dies."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from types import TracebackType

from ..errors import EXIT, PraxisError


class Busy(PraxisError):
    """Raised when another process holds the Flow's lock."""

    exit_code = EXIT["busy"]

    def __init__(self, path: Path, pid: int | None) -> None:
        who = f"process {pid}" if pid else "another process"
        super().__init__(f"{path.parent.name}: {who} is advancing this flow (lock {path})")
        self.path = path
        self.pid = pid


HOLDER_TRIES = 50  # x 10 ms: how long a contender looks for the holder's pid


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def holder(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


class FlowLock:
    """Non-blocking exclusive lock; ``with FlowLock(path):`` raises Busy naming the holder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            self._lock_or_name_holder(fd)
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def _lock_or_name_holder(self, fd: int) -> None:
        """Take the lock, or raise Busy naming the holder's pid.

        A holder writes its pid just after it takes the lock and clears it just before it
        lets go: in those instants the file names nobody (or a process that died holding
        it), so look again for a moment, taking the lock if it comes free meanwhile.
        """
        for _ in range(HOLDER_TRIES):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pid = holder(self.path)
                if pid is not None and _alive(pid):
                    raise Busy(self.path, pid) from None
            time.sleep(0.01)
        raise Busy(self.path, None)

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> FlowLock:
        self.acquire()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def is_held(path: Path) -> int | None:
    """The holder's pid (or 0 when unknown) if someone holds the lock now, else None."""
    if not path.exists():
        return None
    try:
        with FlowLock(path):
            return None
    except Busy as busy:
        return busy.pid or 0
