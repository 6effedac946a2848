"""lock.py: one holder at a time, named; freed the moment the holder dies; a brief holder is
waited for, an advancing one never."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from praxis.flows.store.lock import Busy, Lock, Vanished, holder, is_held

from ..waiting import waits_for_lock


def test_second_taker_is_busy_naming_the_holder(tmp_path) -> None:
    path = tmp_path / "run.lock"
    with Lock(path, run="r1"):
        with pytest.raises(Busy) as info:
            Lock(path, run="r1").acquire()
        assert info.value.pid == os.getpid()
        assert f"run r1: process {os.getpid()} is advancing it" in str(info.value)
        assert info.value.next("f") == "praxis status f --run r1"
    with Lock(path):
        pass


def test_killing_the_holder_frees_the_lock_at_once(tmp_path) -> None:
    path = tmp_path / "run.lock"
    code = (
        "import sys, time; from praxis.flows.store.lock import Lock;"
        f"l = Lock(__import__('pathlib').Path({str(path)!r})); l.acquire();"
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


def _contend(lock: Lock, outcome: list[str]) -> threading.Thread:
    def take() -> None:
        try:
            with lock:
                outcome.append("took it")
        except Busy as busy:
            outcome.append(f"busy: {busy.doing}")

    thread = threading.Thread(target=take)
    thread.start()
    return thread


def test_a_patient_contender_waits_for_a_brief_holder(tmp_path) -> None:
    path = tmp_path / "run.lock"
    outcome: list[str] = []
    with Lock(path, "changing"):
        thread = _contend(Lock(path, patience=60), outcome)
        waits_for_lock(thread, path)  # it found the lock taken and tries again
        assert outcome == []
    thread.join(60)
    assert outcome == ["took it"]


def test_an_advancing_holder_is_never_waited_for(tmp_path) -> None:
    """Had the contender waited, it would take the lock once the holder lets go."""
    path = tmp_path / "run.lock"
    outcome: list[str] = []
    with Lock(path, "advancing"):
        _contend(Lock(path, "changing", patience=60), outcome).join(30)
    assert outcome == ["busy: advancing"]


def test_an_advance_done_with_its_phases_is_waited_for(tmp_path) -> None:
    path = tmp_path / "run.lock"
    outcome: list[str] = []
    with Lock(path, "advancing") as lock:
        lock.now("closing")
        assert holder(path) == (os.getpid(), "closing")
        thread = _contend(Lock(path, "changing", patience=60), outcome)
        waits_for_lock(thread, path)
        assert outcome == []
    thread.join(60)
    assert outcome == ["took it"]
    assert path.read_text() == ""  # the last holder let go: the file names nobody


def test_is_held_only_looks(tmp_path) -> None:
    path = tmp_path / "run.lock"
    assert is_held(path) is None and not path.exists()  # never creates the file
    path.write_text("")
    assert is_held(path) is None and path.read_text() == ""
    with Lock(path, "changing"):
        assert is_held(path) == os.getpid()


def test_a_pid_alone_is_an_earlier_versions_advancing_holder(tmp_path) -> None:
    path = tmp_path / "run.lock"
    path.write_text("4242\n")
    assert holder(path) == (4242, "advancing")
    path.write_text("not a pid")
    assert holder(path) == (None, "")


def test_a_lock_whose_folder_was_moved_away_meanwhile_is_vanished(tmp_path) -> None:
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    path = run / "run.lock"
    outcome: list[BaseException] = []

    def take() -> None:
        try:
            Lock(path, patience=60).acquire()
        except BaseException as exc:
            outcome.append(exc)

    with Lock(path, "deleting"):
        thread = threading.Thread(target=take)
        thread.start()
        waits_for_lock(thread, path)  # it has opened the file and waits for the lock
        run.rename(tmp_path / "runs" / ".trash-r1")
    thread.join(60)
    assert len(outcome) == 1 and isinstance(outcome[0], Vanished)
    with pytest.raises(Vanished):
        Lock(path).acquire()  # the folder is gone: no lock file is made elsewhere
    assert not Path(run).exists()
