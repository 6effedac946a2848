"""lock.py: one holder at a time, named; freed the moment the holder dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from praxis.flows.lock import Busy, FlowLock, is_held


def test_second_taker_is_busy_naming_the_holder(tmp_path) -> None:
    path = tmp_path / "run.lock"
    with FlowLock(path):
        with pytest.raises(Busy) as info:
            FlowLock(path).acquire()
        assert info.value.pid == os.getpid()
        assert str(os.getpid()) in str(info.value)
    with FlowLock(path):
        pass


def test_killing_the_holder_frees_the_lock_at_once(tmp_path) -> None:
    path = tmp_path / "run.lock"
    code = (
        "import sys, time; from praxis.flows.lock import FlowLock;"
        f"l = FlowLock(__import__('pathlib').Path({str(path)!r})); l.acquire();"
        "print('held', flush=True); time.sleep(60)"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        assert is_held(path) == child.pid
        child.send_signal(signal.SIGKILL)
        child.wait()
        deadline = time.monotonic() + 5
        while is_held(path) is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert is_held(path) is None
    finally:
        child.kill()
        child.wait()
        assert child.stdout is not None
        child.stdout.close()
