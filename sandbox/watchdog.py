"""A sandbox's watchdog: a small process beside it that ends what the sandbox started when
the process that owns the sandbox dies without closing it (SIGKILL, a crash).

The owner holds the write end of a pipe whose read end is the watchdog's stdin; the kernel
closes it when the owner dies, whatever killed it, and the watchdog's blocking read returns
at once (no polling, no timer). It then ends what the owner told it of, line by line:

* ``container NAME``: a docker container (SIGKILL; the daemon removes it: auto_remove);
* ``group PID``: a process group (the local backend's kernel server: SIGTERM, which ends
  its kernels, then SIGKILL of its group after a grace);
* ``runtime PATH``: a container's runtime folder (``<tmp>/praxis-rt-*/rt``, its tmpfs
  unmounted lazily, its private folder removed), after the container;

and writes, if the owner named one, a report (JSON, one object: the owner's pid, when, what
was ended) for whoever looks next. ``close()`` says ``done`` first: a sandbox closed by its
owner is not ended twice, and no report is written.

The watchdog runs the interpreter of the owner with ``-I -S`` and the source below (no site,
no package at start: it costs the sandbox's start a spawn, 0.3 ms, and the machine about 10
ms of CPU), in a session of its own, so a signal to the owner's terminal or process group
does not reach it. It loads site and the docker SDK only when it has a container to end.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import IO

from .files import open_nofollow

log = logging.getLogger("sandbox")

GRACE = 2.0  # seconds a kernel server gets to end its kernels after SIGTERM

SOURCE = r"""
import json, os, signal, sys, time

def main():
    owner, report, grace = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    containers, groups, runtimes = [], [], []
    for raw in sys.stdin.buffer:
        word, _, value = raw.decode("utf-8", "replace").strip().partition(" ")
        if word == "done":
            return
        if word == "container":
            containers.append(value)
        elif word == "runtime":
            runtimes.append(value)
        elif word == "group" and value.isdigit():
            groups.append(int(value))
        elif word == "ungroup" and value.isdigit() and int(value) in groups:
            groups.remove(int(value))
    ended = [f"container {c}" for c in containers if end_container(c)]
    ended += [f"process group {g}" for g in groups if end_group(g, grace)]
    ended += [f"runtime folder {r}" for r in runtimes if end_runtime(r)]
    if report:
        write(report, {"owner": owner, "at": time.time(), "ended": ended})

def end_container(name):
    try:
        import site
        site.main()  # started without it (-S): the docker SDK is in site-packages
        import docker
        client = docker.from_env(timeout=30)
        try:
            client.containers.get(name).kill()
        finally:
            client.close()
        return True
    except Exception:
        return False

def end_group(pid, grace):
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        return False
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            break
        time.sleep(0.05)
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    return True

def end_runtime(path):
    # a container's runtime folder, <tmp>/praxis-rt-*/rt only; unmounted lazily (the
    # container may still be going), then its private folder removed
    import shutil, subprocess, tempfile
    folder = os.path.abspath(path)
    private = os.path.dirname(folder)
    if os.path.basename(folder) != "rt" or not os.path.basename(private).startswith("praxis-rt-"):
        return False
    if os.path.dirname(private) != tempfile.gettempdir() or os.path.islink(private):
        return False
    if os.path.ismount(folder):
        subprocess.run(["umount", "-l", folder], capture_output=True, check=False)
    shutil.rmtree(private, ignore_errors=True)
    return not os.path.exists(private)

def write(path, data):
    tmp = f"{path}.{os.getpid()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(tmp, flags, 0o644)
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh)
        os.replace(tmp, path)
    except OSError:
        pass

main()
"""


class Watchdog:
    """The watchdog of one sandbox; ``report``: where it writes what it ended (None: nowhere).
    A watchdog that cannot start is logged and does nothing: the sandbox works without it
    (the next ``open`` of the run's sandbox removes leftovers, as before)."""

    def __init__(self, report: Path | None = None) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._pipe: IO[bytes] | None = None
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", SOURCE, str(os.getpid()),
                 str(report or ""), str(GRACE)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C or a group kill of the owner is not for it
                cwd="/",
            )  # fmt: skip
            self._pipe = self._process.stdin
        except OSError as exc:
            log.warning("sandbox watchdog not started: %s", exc)

    def watch(self, word: str, value: str | int) -> None:
        """Tell the watchdog of one more thing to end if the owner dies."""
        self._say(f"{word} {value}\n")

    def close(self) -> None:
        """The owner ends what it started itself: the watchdog exits without acting."""
        self._say("done\n")
        pipe, process, self._pipe, self._process = self._pipe, self._process, None, None
        if pipe is not None:
            try:
                pipe.close()
            except OSError:
                pass
        if process is not None:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def _say(self, line: str) -> None:
        if self._pipe is None:
            return
        try:
            self._pipe.write(line.encode())
            self._pipe.flush()
        except (OSError, ValueError):
            self._pipe = None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid


def report_of(path: Path) -> dict[str, object] | None:
    """A watchdog's report at ``path`` (bounded, no link followed); None when there is none or
    it is not one."""
    try:
        fd = open_nofollow(path)
    except OSError:
        return None
    try:
        data = os.read(fd, 1 << 16)
    finally:
        os.close(fd)
    try:
        found = json.loads(data)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None
