"""docs/reliability.md items 1-7 through the runner and the CLI, on a real Docker daemon."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import docker
import pytest

from sandbox.container import RUN_LABEL

from ..labels import left_after
from ..probes import assert_contained, probe_code
from ._flows import (
    SESSION,
    SESSION_LABEL,
    begin,
    docker_sandbox,
    one_line_error,
    popen_praxis,
    praxis,
    state_of,
    write_flow,
)

pytestmark = pytest.mark.docker

CANARY = "PRAXIS_RELIABILITY_CANARY"
WAIT_FOR_RELEASE = """
    import os, time
    open("started", "w").write("1")
    while not os.path.exists("release"):
        time.sleep(0.05)
    status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
    ids = f"{os.getuid()} {status['CapEff'].strip()} {status['NoNewPrivs'].strip()}"
    open("held.txt", "w").write("released " + ids)
"""


def _one_phase(image: str, script: str, *, timeout: int = 120, **sandbox: object) -> str:
    return f"""
        {docker_sandbox(image, timeout=timeout, **sandbox)}
        phases:
          - id: work
            kind: script
            script: work.py
            outputs: [held.txt]
    """


def _flow(tmp_path: Path, image: str, script: str, **sandbox: object) -> Path:
    return write_flow(tmp_path / "flow", _one_phase(image, script, **sandbox), {"work.py": script})


def _wait_for(path: Path, proc: subprocess.Popen[str], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"praxis ended early: {proc.communicate()}")
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def _containers(run_id: str) -> list[dict]:
    client = docker.from_env()
    try:
        found = client.api.containers(all=True, filters={"label": f"{RUN_LABEL}={run_id}"})
        return [client.api.inspect_container(c["Id"]) for c in found]
    finally:
        client.close()


def test_item01_the_container_of_a_running_phase_is_hardened(
    docker_image: str, tmp_path: Path
) -> None:
    flow = _flow(tmp_path, docker_image, WAIT_FOR_RELEASE, memory="512m", cpus=1)
    run = begin(flow)
    proc = popen_praxis("advance", str(flow))
    try:
        _wait_for(run / "workspace" / "started", proc)
        (attrs,) = _containers(run.name)
    finally:
        (run / "workspace" / "release").write_text("go")
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    host, config = attrs["HostConfig"], attrs["Config"]
    assert attrs["State"]["Running"] is True
    assert host["NetworkMode"] == "none"
    assert host["CapDrop"] == ["ALL"]
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["ReadonlyRootfs"] is True
    assert host["PidsLimit"] and host["PidsLimit"] > 0
    assert host["Memory"] == host["MemorySwap"] == 512 * 1024**2
    assert host["NanoCpus"] == 10**9
    assert host["Init"] is True and host["Privileged"] is False
    # the kernel server is root with only the capabilities to start kernels as uid 1000 and
    # to kill that uid's processes; phase code runs as uid 1000 with no capability at all
    assert config["User"] == "0:0" and sorted(host["CapAdd"]) == ["KILL", "SETGID", "SETUID"]
    assert host["LogConfig"]["Config"].get("max-size")
    assert config["Labels"][SESSION_LABEL] == SESSION
    mounts = {m["Destination"]: m["Source"] for m in attrs["Mounts"]}
    assert set(mounts) == {"/workspace", "/rt"}
    assert mounts["/workspace"] == str((run / "workspace").resolve())
    assert left_after(run.name) == []  # removed when the run stopped
    assert (run / "output" / "held.txt").read_text() == "released 1000 0000000000000000 1"


BOMB = """
    import os, time
    root, end = os.getpid(), time.time() + 5
    while True:
        if os.getpid() != root and time.time() > end:
            os._exit(0)
        try:
            os.fork()
        except OSError:
            if os.getpid() == root:
                raise
            os._exit(0)
"""


def test_item02_probes_fail_and_a_fork_bomb_fails_the_phase(
    docker_image: str, tmp_path: Path
) -> None:
    yaml = f"""
        {docker_sandbox(docker_image, timeout=120, pids=64, grace=1)}
        phases:
          - id: probe
            kind: script
            script: probe.py
            outputs: [probes.json]
          - id: bomb
            kind: script
            script: bomb.py
            outputs: [never.txt]
    """
    flow = write_flow(tmp_path / "flow", yaml, {"probe.py": probe_code(CANARY), "bomb.py": BOMB})
    begin(flow)
    res = praxis("advance", str(flow), env={CANARY: f"host-secret-{SESSION}"})
    assert res.returncode == 1, (res.stdout, res.stderr)
    run = next((flow / "runs").iterdir())
    found = json.loads((run / "output" / "probes.json").read_text())
    assert_contained(found)
    state = state_of(run)
    assert state.phase("probe").status == "done"
    assert state.phase("bomb").status == "failed"
    assert "BlockingIOError" in str(state.phase("bomb").error) or "OSError" in str(
        state.phase("bomb").error
    )
    assert subprocess.run(["true"], timeout=30).returncode == 0  # the host answers
    assert left_after(run.name) == []


def test_item03_no_daemon_fails_closed_exit_5(docker_image: str, tmp_path: Path) -> None:
    marker = tmp_path / "ran-on-the-host"
    script = f"open({str(marker)!r}, 'w').write('x')\nopen('held.txt', 'w').write('x')\n"
    flow = _flow(tmp_path, docker_image, script)
    run = begin(flow)
    before = (run / "run.json").read_bytes()
    events = (run / "events.jsonl").read_bytes()
    nowhere = {"DOCKER_HOST": f"unix://{tmp_path}/no-such-docker.sock", "PRAXIS_SANDBOX": ""}
    for args in (["advance", str(flow)], ["run", str(flow)]):
        res = praxis(*args, env=nowhere)
        assert res.returncode == 5, (res.stdout, res.stderr)
        assert "SandboxUnavailable: " in one_line_error(res, "SandboxUnavailable: ")
        assert not marker.exists()
    assert (run / "run.json").read_bytes() == before
    assert (run / "events.jsonl").read_bytes() == events
    newer = sorted((flow / "runs").iterdir())[-1]  # `praxis run` began a second run
    assert state_of(newer).phases[0].status == "pending" and not marker.exists()


def test_item04_a_hung_cell_fails_the_phase_at_its_timeout(
    docker_image: str, tmp_path: Path
) -> None:
    flow = _flow(tmp_path, docker_image, "while True:\n    pass\n", timeout=3, grace=1)
    run = begin(flow)
    res = praxis("advance", str(flow))
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert "timed out after 3 s" in one_line_error(res, "PhaseFailed: ")
    phase = state_of(run).phase("work")
    assert phase.status == "failed" and "timed out after 3 s" in str(phase.error)
    record = (run / "records" / "work.ipynb").read_text()
    assert "while True" in record and "timed out after 3 s" in record
    assert left_after(run.name) == []


@pytest.mark.parametrize(
    ("case", "script", "expected"),
    [
        ("suicide", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "SIGKILL"),
        (
            "memory",
            "blocks = []\nwhile True:\n    blocks.append(b'x' * (16 << 20))\n",
            "out of memory",
        ),
    ],
)
def test_item05_kernel_death_fails_the_phase_naming_the_cause(
    docker_image: str, tmp_path: Path, case: str, script: str, expected: str
) -> None:
    flow = _flow(tmp_path, docker_image, script, memory="256m", warm=False)
    run = begin(flow)
    res = praxis("advance", str(flow), timeout=120)  # a hang fails here instead
    assert res.returncode == 1, (res.stdout, res.stderr)
    line = one_line_error(res, "PhaseFailed: ")
    assert "KernelDied" in line and expected in line, line
    assert expected in str(state_of(run).phase("work").error)
    assert left_after(run.name) == []


RSS_CHILD = """
import json, resource, sys
from praxis.flows.engine import runner
marks = {}
def mark(event):
    if event.kind == "phase_done":
        marks[event.phase] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
state = runner.advance(sys.argv[1])
print(json.dumps({"status": state.status, **marks}))
"""


def test_item06_100_mb_of_output_is_capped_in_the_record(docker_image: str, tmp_path: Path) -> None:
    yaml = f"""
        {docker_sandbox(docker_image, timeout=120)}
        phases:
          - id: small
            kind: script
            script: small.py
            outputs: [small.txt]
          - id: big
            kind: script
            script: big.py
            outputs: [big.txt]
    """
    files = {
        "small.py": "print('x' * 1000)\nopen('small.txt', 'w').write('ok')\n",
        "big.py": "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(100):\n"
        "    sys.stdout.write(chunk)\nopen('big.txt', 'w').write('ok')\n",
    }
    flow = write_flow(tmp_path / "flow", yaml, files)
    run = begin(flow)
    child = RSS_CHILD.replace(
        "runner.advance(sys.argv[1])",
        "runner.advance(sys.argv[1], options=runner.RunOptions(on_event=mark))",
    )
    res = subprocess.run(
        [sys.executable, "-c", child, str(flow)], capture_output=True, text=True, timeout=240
    )
    assert res.returncode == 0, res.stderr
    marks = json.loads(res.stdout.strip().splitlines()[-1])
    assert marks["status"] == "done"
    grown = marks["big"] - marks["small"]
    assert grown < 64 << 20, f"the runner's peak memory grew by {grown >> 20} MiB"
    record = (run / "records" / "big.ipynb").read_text()
    assert "output truncated" in record
    assert len(record) < 4 << 20
    assert left_after(run.name) == []


def test_item07_prune_removes_the_containers_of_runs_no_longer_running(
    docker_image: str, tmp_path: Path
) -> None:
    dead = _flow(tmp_path / "dead", docker_image, WAIT_FOR_RELEASE)
    live = _flow(tmp_path / "live", docker_image, WAIT_FOR_RELEASE)
    dead_run, live_run = begin(dead), begin(live)
    killed = popen_praxis("advance", str(dead))
    alive = popen_praxis("advance", str(live))
    try:
        _wait_for(dead_run / "workspace" / "started", killed)
        _wait_for(live_run / "workspace" / "started", alive)
        killed.send_signal(signal.SIGKILL)  # dies without closing its sandbox
        killed.communicate(timeout=60)
        assert len(_containers(dead_run.name)) == 1  # an orphan
        res = praxis("sandbox", "prune", "--label", f"{SESSION_LABEL}={SESSION}")
        assert res.returncode == 0, res.stderr
        assert left_after(dead_run.name) == []
        # nor its runtime folder, a tmpfs mount of its own when the runner is root
        assert list(Path(tempfile.gettempdir()).glob(f"praxis-rt-{dead_run.name}-*")) == []
        assert len(_containers(live_run.name)) == 1  # its run is still being advanced
    finally:
        (live_run / "workspace" / "release").write_text("go")
        (dead_run / "workspace" / "release").write_text("go")
        out, err = alive.communicate(timeout=120)
    assert alive.returncode == 0, err
    assert left_after(live_run.name) == []
    res = praxis("advance", str(dead))  # the killed run: its phase is failed, not running
    assert state_of(dead_run).phase("work").status == "failed"
    assert "stopped before it finished" in str(state_of(dead_run).phase("work").error)
