"""Waiting on what a blocked thread shows the kernel, never on the clock: a lock contender
polls (``flock`` with ``LOCK_NB``, then a short sleep), so it is waiting once it holds the lock
file open and sleeps between its tries."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

GIVE_UP = 120.0  # seconds: a guard against a hang, not a measurement


def open_here(path: Path) -> int:
    """How many of this process's descriptors are open on ``path``'s file."""
    want = path.stat()
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            got = os.stat(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile (or the listing's own descriptor)
            continue
        count += (got.st_dev, got.st_ino) == (want.st_dev, want.st_ino)
    return count


def asleep(thread: threading.Thread) -> bool:
    """Whether ``thread`` sleeps in the kernel's timer (``time.sleep``) right now."""
    wchan = Path(f"/proc/self/task/{thread.native_id}/wchan").read_text()
    return "nanosleep" in wchan


def waits_for_lock(thread: threading.Thread, path: Path, holders: int = 1) -> None:
    """Until ``thread`` has the lock file ``path`` open beside its ``holders`` and sleeps
    between two tries at it: it found the lock taken and did not give up."""
    deadline = time.monotonic() + GIVE_UP
    while not (open_here(path) > holders and asleep(thread)):
        if not thread.is_alive():
            pytest.fail(f"the contender ended instead of waiting for {path.name}")
        if time.monotonic() > deadline:
            pytest.fail(f"the contender never waited for {path.name}")
        time.sleep(0.001)
