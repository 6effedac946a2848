"""Locks of a Flow and of its runs: fcntl on a lock file, never on run.json. Freed at once
when the holder dies, however it dies.

* A run's lock, ``runs/<id>/run.lock``, is held while the run is advanced (for as long as
  its phases run) and, briefly, while it is decided, edited, re-run, cancelled or deleted.
  Two runs of one flow never wait for each other.
* The Flow's lock, ``<flow>/run.lock``, is held only for a moment: to create a run (begin is
  atomic with it), to delete runs, and (shared) to list them. Nothing holds it while a phase
  runs.

A holder writes ``<pid> <doing>`` into the file (``doing``: ``advancing``, ``closing``,
``changing``, ``creating``, ``deleting``). A contender never waits for a holder that is
advancing: it gets ``Busy`` naming it at once. A holder doing anything else lets go in a
moment, so a contender with ``patience`` waits for it, up to that many seconds.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from types import TracebackType

from sandbox.files import open_nofollow

from ...command_line import typed
from ...errors import EXIT, PraxisError

ADVANCING = "advancing"  # the one long hold: phases run under it
WORDS = {
    ADVANCING: "is advancing it",
    "closing": "is closing its sandbox",
    "changing": "is changing it",
    "creating": "is creating a run",
    "deleting": "is deleting runs",
    "keeping": "is starting the runs a schedule or trigger has due",
}
HOLDER_TRIES = 50  # x 10 ms: how long a contender looks for the holder's pid
PATIENCE = 15.0  # seconds a brief command waits for a brief holder (a decision, a close)


class Busy(PraxisError):
    """Raised when another process holds the lock of the run (or, for a moment, the flow's)."""

    exit_code = EXIT["busy"]

    def __init__(
        self, path: Path, pid: int | None, doing: str = ADVANCING, *, run: str | None = None
    ) -> None:
        who = f"process {pid}" if pid else "another process"
        subject = f"run {run}" if run else path.parent.name
        words = WORDS.get(doing, "holds it")
        super().__init__(f"{subject}: {who} {words} (lock {path})")
        self.path = path
        self.pid = pid
        self.doing = doing
        self.run = run

    def next(self, flow: str) -> str:
        return typed("status", flow, run=self.run or None)


class Vanished(Exception):
    """Raised when the lock was taken on a file its folder no longer holds (the run was
    deleted meanwhile); the caller says which run is gone."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def holder(path: Path) -> tuple[int | None, str]:
    """(pid, doing) as the holder wrote them; (None, "") when the file names nobody. A file
    an earlier version wrote holds the pid alone: that holder was advancing."""
    try:
        words = path.read_text().split()
    except (OSError, UnicodeError):
        return None, ""
    if not words or not words[0].isdigit():
        return None, ""
    return int(words[0]), (words[1] if len(words) > 1 else ADVANCING)


class Lock:
    """Non-blocking exclusive (or ``shared``) lock; ``with Lock(path, doing):`` raises Busy
    naming the holder. ``run``: the run's id, for the messages; ``patience``: how long to
    wait for a holder that is not advancing."""

    def __init__(
        self,
        path: Path,
        doing: str = ADVANCING,
        *,
        run: str | None = None,
        patience: float = 0.0,
        shared: bool = False,
    ) -> None:
        self.path = path
        self.doing = doing
        self.run = run
        self.patience = patience
        self.shared = shared
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            fd = open_nofollow(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:
            raise Vanished(self.path) from None
        try:
            self._lock_or_name_holder(fd)
            if os.fstat(fd).st_ino != os.stat(self.path, follow_symlinks=False).st_ino:
                raise Vanished(self.path)
        except FileNotFoundError:
            os.close(fd)
            raise Vanished(self.path) from None
        except BaseException:
            os.close(fd)
            raise
        if not self.shared:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {self.doing}\n".encode(), 0)
        self._fd = fd

    def _lock_or_name_holder(self, fd: int) -> None:
        """Take the lock, or raise Busy naming the holder.

        A holder writes its record just after it takes the lock and clears it just before it
        lets go (a shared holder writes none): in those instants the file names nobody (or a
        process that died holding it), so look again for a moment, taking the lock if it
        comes free meanwhile. A holder that is not advancing is waited for, up to
        ``patience`` seconds.
        """
        mode = (fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX) | fcntl.LOCK_NB
        deadline = time.monotonic() + self.patience
        unknown = 0
        while True:
            try:
                fcntl.flock(fd, mode)
                return
            except BlockingIOError:
                pid, doing = holder(self.path)
            late = time.monotonic() >= deadline
            if pid is not None and _alive(pid):
                if doing == ADVANCING or late:
                    raise Busy(self.path, pid, doing, run=self.run) from None
            else:
                unknown += 1
                if unknown >= HOLDER_TRIES and late:
                    raise Busy(self.path, None, run=self.run)
            time.sleep(0.01)

    def now(self, doing: str) -> None:
        """Say what the holder does now (an advance that is done with its phases and closes
        its sandbox is ``closing``: a decision waits for it rather than being refused)."""
        if self._fd is not None and not self.shared:
            self.doing = doing
            record = f"{os.getpid()} {doing}\n".encode()
            os.pwrite(self._fd, record, 0)
            os.ftruncate(self._fd, len(record))

    def release(self) -> None:
        if self._fd is not None:
            try:
                if not self.shared:
                    os.ftruncate(self._fd, 0)
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> Lock:
        self.acquire()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def is_held(path: Path) -> int | None:
    """The holder's pid (or 0 when unknown) if someone holds the lock exclusively now, else
    None. Looks without taking it: nothing is written, and a contender meanwhile is never
    told that this process holds it."""
    try:
        fd = open_nofollow(path)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pid, _ = holder(path)
            return pid if pid is not None and _alive(pid) else 0
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
