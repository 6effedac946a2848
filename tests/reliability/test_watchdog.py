"""Item 23, SIGKILL: a runner killed by SIGKILL leaves nothing running. Its sandbox's
watchdog ends the container (docker) or the kernel server and its kernels (local) within
seconds of the runner's death, without waiting for a later command to open a sandbox; the
next command says what was ended, and ``advance`` records it (``sandbox_ended``)."""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
from pathlib import Path

import pytest

from ..labels import left_after
from ._flows import begin, event_kinds, popen_praxis, praxis, state_of
from .test_boundary import _flow, _phase, _remove_containers, _wait_until

BOUND = 10.0  # seconds after the SIGKILL by which nothing of the run may run (acceptance)

LOOP = r"""
import os, time
with open("pid", "w") as fh:
    fh.write(str(os.getpid()))
while True:
    with open("beat", "w") as fh:
        fh.write(str(time.time()))
    time.sleep(0.05)
"""


def _started(run: Path) -> bool:
    return (run / "events.jsonl").exists() and "phase_started" in event_kinds(run)


@pytest.mark.docker
def test_a_sigkilled_runner_leaves_no_container_and_the_next_command_says_so(
    docker_image: str, tmp_path: Path
) -> None:
    flow = _flow(
        tmp_path / "flow", docker_image, [_phase("work", "work.py", ["out.txt"])],
        {"work.py": LOOP}, timeout=300,
    )  # fmt: skip
    run = begin(flow)
    proc = popen_praxis("advance", str(flow))
    try:
        _wait_until(lambda: _started(run), proc, "phase_started")
        _wait_until((run / "workspace" / "beat").exists, proc, "the phase's code ran")
        assert left_after(run.name, timeout=0) != []  # the container runs the phase
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        killed = time.monotonic()
        left = left_after(run.name, timeout=BOUND)  # polls until none is left, or the bound
        print(f"containers left {left} {time.monotonic() - killed:.2f} s after the SIGKILL")
        assert left == [], f"still there {BOUND} s after its runner's SIGKILL: {left}"
        deadline = killed + BOUND
        while not (run / "watchdog.json").exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # written once the daemon answered the kill
        # nor its runtime folder (a tmpfs mount of its own): the report is written after it
        assert list(Path(tempfile.gettempdir()).glob(f"praxis-rt-{run.name}-*")) == []
        res = praxis("status", str(flow))
        assert res.returncode == 0, res.stderr
        assert "was killed; its watchdog ended container praxis-" in res.stdout, res.stdout
        assert "no process is running it" in res.stdout
        res = praxis("advance", str(flow))  # records the lost phase as failed, and the end
        assert "Traceback" not in res.stderr, res.stderr
        assert "was killed; its sandbox's watchdog ended container praxis-" in res.stderr
        assert state_of(run).phase("work").status == "failed"
        assert "sandbox_ended" in event_kinds(run)
        assert not (run / "watchdog.json").exists()
        res = praxis("status", str(flow))
        assert "watchdog" not in res.stdout  # said once recorded
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=60)
        _remove_containers(run.name)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_sigkilled_runner_on_the_local_backend_leaves_no_kernel(tmp_path: Path) -> None:
    flow = tmp_path / "flow"
    flow.mkdir()
    phases = [{"id": "work", "kind": "script", "script": "work.py", "outputs": ["out.txt"]}]
    (flow / "flow.yaml").write_text(
        'sandbox: {"backend": "local", "timeout": 300}\nphases: ' + json.dumps(phases) + "\n"
    )
    (flow / "work.py").write_text(LOOP)
    run = begin(flow)
    proc = popen_praxis("advance", str(flow), "--allow-local")
    kernel = 0
    try:
        _wait_until((run / "workspace" / "pid").exists, proc, "the phase's code ran")
        _wait_until(lambda: (run / "workspace" / "pid").read_text().strip() != "", proc, "pid")
        kernel = int((run / "workspace" / "pid").read_text())
        assert _alive(kernel)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        deadline = time.monotonic() + BOUND
        while _alive(kernel) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(kernel), f"the kernel ran on {BOUND} s after its runner's SIGKILL"
        while not (run / "watchdog.json").exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # written once the kernel server's group is ended too
        res = praxis("status", str(flow))
        assert "was killed; its watchdog ended process group" in res.stdout, res.stdout
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=60)
        if kernel and _alive(kernel):
            os.kill(kernel, signal.SIGKILL)
