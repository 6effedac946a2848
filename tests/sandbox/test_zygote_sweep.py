"""The kernel server's sweep, on real processes and real folders of this machine.

The kill is tried on processes this test started only (found by a mark in their
environment: the sweep's listing is handed in); the IPC removal runs in a container
(``tests/reliability/test_leftovers.py``), never on this machine's own objects.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import SandboxUnavailable
from sandbox.forkserver import SOCKET, ForkServer, ZygoteGone
from sandbox.zygote_sweep import SweepFailed, kill_all_but, processes, scrub

# a process that leaves a daemon of its own session and then forks new children until killed
BREEDER = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            time.sleep(1)
    os._exit(0)
while True:
    try:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
    except OSError:
        pass
    time.sleep(0.001)
"""


def _marked(mark: str) -> dict[int, tuple[set[int], int, bool]]:
    """The processes of ``processes()`` whose environment holds ``mark``."""
    found = {}
    for pid, row in processes().items():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if mark.encode() in environ.split(b"\0"):
            found[pid] = row
    return found


@pytest.fixture
def breeders() -> Iterator[tuple[str, list[subprocess.Popen[bytes]]]]:
    mark = f"PRAXIS_SWEEP_TEST={uuid.uuid4().hex}"
    env = {**os.environ, mark.split("=")[0]: mark.split("=")[1]}
    procs = [subprocess.Popen([sys.executable, "-c", BREEDER], env=env) for _ in range(3)]
    keeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    procs.append(keeper)
    try:
        yield mark, procs
    finally:
        for pid in _marked(mark):
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        for proc in procs:
            proc.kill()
            proc.wait()


def _reap(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.poll()


def test_the_sweep_kills_every_process_but_the_kept_ones_daemons_and_new_children_too(
    breeders: tuple[str, list[subprocess.Popen[bytes]]],
) -> None:
    mark, procs = breeders
    keeper = procs[-1]
    for _ in range(200):  # each breeder has left its daemon and started breeding
        if len(_marked(mark)) >= 10:
            break
        time.sleep(0.01)
    before = _marked(mark)
    assert len(before) >= 10
    kill_all_but({keeper.pid}, 10.0, reap=lambda: _reap(procs), listing=lambda: _marked(mark))
    _reap(procs)
    left = {pid for pid, (_, _, live) in _marked(mark).items() if live}
    assert left == {keeper.pid}
    assert keeper.poll() is None
    assert all(proc.poll() == -9 for proc in procs[:-1])


def test_a_sweep_that_cannot_kill_fails_naming_what_survives(
    breeders: tuple[str, list[subprocess.Popen[bytes]]],
) -> None:
    mark, procs = breeders
    with pytest.raises(SweepFailed, match=r"^\d+ process\(es\) of the phase survive the sweep$"):
        kill_all_but(set(), 0.2, kill=lambda pid, sig: None, listing=lambda: _marked(mark))


def _deep(root: Path, levels: int, name: str = "d") -> None:
    """A chain of ``levels`` folders in a new folder ``root``, made by descriptor (no long
    paths), a file at its bottom."""
    root.mkdir()
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        with open(os.open("planted", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
            f.write("planted by p1")
    finally:
        os.close(fd)


def test_the_scrub_empties_a_folder_2000_levels_deep_without_recursion(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    _deep(tmp / "deep", 2000, name="x" * 200)
    (tmp / "locked").mkdir()
    (tmp / "locked" / "inside").write_text("x")
    (tmp / "locked").chmod(0)
    (tmp / "readonly").mkdir()
    (tmp / "readonly" / "inside").write_text("x")
    (tmp / "readonly").chmod(0o500)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept").write_text("kept")
    (tmp / "link").symlink_to(outside)
    (tmp / "file").write_text("x")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # far below the depth: a recursive removal would die here
    try:
        scrub(folders=(str(tmp), str(tmp_path / "missing")))
    finally:
        sys.setrecursionlimit(limit)
    assert os.listdir(tmp) == []
    assert (outside / "kept").read_text() == "kept"  # a link is removed, never followed


def test_a_scrub_that_cannot_finish_fails_naming_the_entry(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    _deep(tmp, 50)
    with pytest.raises(SweepFailed, match=r"^cannot remove .*/tmp/d: "):
        scrub(folders=(str(tmp),), seconds=-1)
    assert (tmp / "d").is_dir()


def test_a_sweep_that_misses_its_deadline_fails_and_is_not_taken_for_a_gone_server(
    tmp_path: Path,
) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(tmp_path / SOCKET))
        listener.listen(1)  # a server that takes the request and never answers
        with pytest.raises(SandboxUnavailable, match="sweep did not finish within 0.2 s") as info:
            ForkServer(tmp_path).sweep(timeout=0.2)
    assert not isinstance(info.value, ZygoteGone)
    with pytest.raises(ZygoteGone):  # nobody listening: the server is gone
        ForkServer(tmp_path).sweep(timeout=0.2)
