"""A sandbox's watchdog: when the process that owns a sandbox dies without closing it, what
the sandbox started ends, and the watchdog says what it ended; a sandbox closed by its owner
is not ended twice and nothing is reported."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from sandbox.watchdog import Watchdog, report_of

# An owner: starts a process in a session of its own (as the local backend's kernel server
# is), tells its watchdog of it, says both pids, then waits (to be killed) or closes.
OWNER = r"""
import json, subprocess, sys, time
from pathlib import Path
from sandbox.watchdog import Watchdog
report, close = sys.argv[1], sys.argv[2] == "close"
server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                          start_new_session=True)
dog = Watchdog(Path(report))
dog.watch("group", server.pid)
print(json.dumps({"server": server.pid, "watchdog": dog.pid}), flush=True)
if close:
    server.kill()
    server.wait()
    dog.close()
    print("closed", flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


def _gone_within(pid: int, bound: float) -> bool:
    """Poll until ``pid`` has ended, at most ``bound`` s (a generous bound, not a timing)."""
    deadline = time.monotonic() + bound
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _owner(tmp_path: Path, mode: str) -> tuple[subprocess.Popen[str], dict[str, int]]:
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(tmp_path / "report.json"), mode],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    assert owner.stdout is not None
    pids = json.loads(owner.stdout.readline())
    return owner, pids


def _end(owner: subprocess.Popen[str], pids: dict[str, int]) -> None:
    for pid in pids.values():
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    if owner.poll() is None:
        owner.kill()
    owner.wait()
    assert owner.stdout is not None
    owner.stdout.close()


def test_a_killed_owner_leaves_nothing_running_and_a_report(tmp_path: Path) -> None:
    owner, pids = _owner(tmp_path, "wait")
    try:
        assert _alive(pids["server"])
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        assert _gone_within(pids["server"], 10.0), "the owner's process outlived it"
        assert _gone_within(pids["watchdog"], 10.0)
        report = report_of(tmp_path / "report.json")
        assert report is not None
        assert report["owner"] == owner.pid
        assert report["ended"] == [f"process group {pids['server']}"]
    finally:
        _end(owner, pids)


def test_an_owner_that_closes_gets_no_report_and_its_watchdog_ends(tmp_path: Path) -> None:
    owner, pids = _owner(tmp_path, "close")
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "closed"
        assert not _alive(pids["watchdog"])  # close() waited for it
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        assert report_of(tmp_path / "report.json") is None
    finally:
        _end(owner, pids)


def test_a_watchdog_told_of_nothing_reports_nothing_ended(tmp_path: Path) -> None:
    dog = Watchdog(tmp_path / "report.json")
    assert dog.pid is not None
    pipe = dog._pipe
    assert pipe is not None
    pipe.close()  # as the kernel does when the owner dies
    assert _gone_within(dog.pid, 10.0)
    dog.close()
    report = report_of(tmp_path / "report.json")
    assert report is not None and report["ended"] == [] and report["owner"] == os.getpid()
