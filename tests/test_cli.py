"""The `praxis` command as a user runs it: exit codes, one-line errors, the next command."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from praxis.flows.store import state_file

from .flows.helpers import one_script_flow, three_phase_flow, write_flow

# praxis installed: its console script is on PATH (see test_cli_edges for when it is not)
INSTALLED = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


def praxis(
    *args: str, cwd: Path | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "praxis", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        # every flow here is on the fake backend: the person's environment names it
        env={**os.environ, "PATH": INSTALLED, "PRAXIS_SANDBOX": "fake", **(env or {})},
        timeout=120,
    )


def newest_run(flow: Path) -> Path:
    return sorted((flow / "runs").iterdir())[-1]


def test_run_stops_at_the_gate_and_names_the_approve_command(tmp_path) -> None:
    flow = three_phase_flow(tmp_path)
    res = praxis("run", str(flow))
    assert res.returncode == 0, res.stderr
    assert "waiting at the Gate after review" in res.stdout
    assert "output/flags.csv" in res.stdout
    run = newest_run(flow)
    revision = state_file.load(run / "run.json").revision
    bound = f"--gate review --attempt 1 --expect-revision {revision}"
    assert f"praxis approve {flow} --run {run.name} {bound}" in res.stdout
    status = json.loads(praxis("status", str(flow), "--json").stdout)
    assert (status["waiting"], status["gate"], status["status"]) == ("gate", "review", "paused")
    assert status["next"][0].startswith("praxis approve")
    res = praxis("approve", str(flow), "--expect-revision", str(revision))
    assert res.returncode == 0, res.stderr
    assert "done" in res.stdout
    assert (run / "output" / "total.txt").read_text() == "60"


def test_stale_revision_exits_4_and_changes_nothing(tmp_path) -> None:
    flow = three_phase_flow(tmp_path)
    praxis("run", str(flow))
    before = (newest_run(flow) / "run.json").read_bytes()
    res = praxis("approve", str(flow), "--expect-revision", "1")
    assert res.returncode == 4
    assert res.stderr.startswith("Refused: run ")
    assert "Traceback" not in res.stderr
    assert (newest_run(flow) / "run.json").read_bytes() == before


def test_failed_phase_exits_1_with_one_line_and_the_next_command(tmp_path) -> None:
    flow = one_script_flow(
        tmp_path / "f", "with open('x.csv', 'w') as fh: fh.write('id\\n')", "x.csv"
    )
    res = praxis("run", str(flow))
    assert res.returncode == 1
    assert "PhaseFailed: a: output x.csv has a header and no rows" in res.stderr
    assert f"next: praxis rerun {flow} --run" in res.stderr
    assert "Traceback" not in res.stderr


def test_unknown_phase_for_rerun_is_refused(tmp_path) -> None:
    flow = three_phase_flow(tmp_path)
    praxis("run", str(flow))
    res = praxis("rerun", str(flow), "--from", "nope")
    assert res.returncode == 4 and "has no phase 'nope'" in res.stderr


def test_no_run_yet_is_bad_usage(tmp_path) -> None:
    flow = three_phase_flow(tmp_path)
    res = praxis("status", str(flow))
    assert res.returncode == 2
    assert res.stderr.splitlines() == ["NoRun: demo has no runs yet", f"  next: praxis run {flow}"]


def test_status_json_before_any_run_prints_the_route_to_run_it(tmp_path) -> None:
    flow = three_phase_flow(tmp_path)
    res = praxis("status", str(flow), "--json")
    assert res.returncode == 2  # still: there is no run
    data = json.loads(res.stdout)
    assert (data["run"], data["status"]) == (None, "none")
    route = data["route"]
    assert (route["step"], route["reason"], route["who"]) == ("run", "no_run", "anyone")
    assert route["commands"] == [["praxis", "run", str(flow)]]


def test_status_json_of_a_broken_flow_yaml_prints_the_route_to_fix_it(tmp_path) -> None:
    flow = tmp_path / "broken"
    flow.mkdir()
    (flow / "flow.yaml").write_text("flow: broken\nphases:\n  - id: a\n   kind: [\n")
    res = praxis("status", str(flow), "--json")
    assert res.returncode == 2  # still: flow.yaml has errors
    data = json.loads(res.stdout)
    assert (data["run"], data["status"]) == (None, "invalid")
    route = data["route"]
    assert (route["step"], route["reason"], route["who"]) == ("fix", "flow_invalid", "person")
    assert route["commands"] == [["praxis", "check", str(flow)]]
    problem = data["problems"][0]
    assert problem["file"] == "flow.yaml" and problem["line"] == 4 and problem["message"]
    assert route["problems"][0].startswith("flow.yaml:4")


SLOW = """
    sandbox: {backend: fake}
    phases:
      - {id: slow, kind: script, script: slow.py, outputs: [x.txt]}
"""
SLOW_FILES = {
    "slow.py": """
    import time
    with open("started", "w") as fh:
        fh.write("1")
    time.sleep(60)
    with open("x.txt", "w") as fh:
        fh.write("done")
"""
}


def _start_slow(flow: Path) -> subprocess.Popen:
    begin = praxis("begin", str(flow))
    assert begin.returncode == 0
    child = subprocess.Popen(
        [sys.executable, "-m", "praxis", "advance", str(flow), "--allow-local"],  # fake
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    started = newest_run(flow) / "workspace" / "started"
    deadline = time.monotonic() + 60
    while not started.exists():
        assert time.monotonic() < deadline and child.poll() is None
        time.sleep(0.05)
    return child


def test_second_advance_exits_3_naming_the_holder(tmp_path) -> None:
    flow = write_flow(tmp_path / "slow", SLOW, SLOW_FILES)
    child = _start_slow(flow)
    try:
        res = praxis("advance", str(flow))
        assert res.returncode == 3
        assert f"process {child.pid} is advancing" in res.stderr
    finally:
        child.kill()
        child.wait()


def test_status_of_a_running_phase_says_how_long_it_has_run(tmp_path) -> None:
    flow = write_flow(tmp_path / "slow", SLOW, SLOW_FILES)
    child = _start_slow(flow)
    try:
        res = praxis("status", str(flow))
        assert res.returncode == 0, res.stderr
        head, *rows = res.stdout.splitlines()
        assert re.search(rf"running slow for [\d.]+ (s|ms) \(process {child.pid}\)", head), head
        row = next(r for r in rows if " slow " in r)
        assert re.match(r"  ▶ running  slow +[\d.]+ (s|ms) +█+ +running for [\d.]+ (s|ms)$", row)
        shown = json.loads(praxis("status", str(flow), "--json").stdout)
        assert shown["phases"][0]["elapsed"] >= 0 and shown["phases"][0]["seconds"] is None
    finally:
        child.kill()
        child.wait()


def test_sigkill_mid_phase_then_status_advance_rerun(tmp_path) -> None:
    flow = write_flow(tmp_path / "slow", SLOW, SLOW_FILES)
    child = _start_slow(flow)
    child.send_signal(signal.SIGKILL)
    child.wait()
    run = newest_run(flow)
    assert state_file.load(run / "run.json").phase("slow").status == "running"
    res = praxis("status", str(flow))
    assert "stopped before it finished" in res.stdout
    res = praxis("advance", str(flow))
    assert res.returncode == 1 and "stopped before it finished" in res.stderr
    (flow / "slow.py").write_text("with open('x.txt', 'w') as fh:\n    fh.write('done')\n")
    assert praxis("rerun", str(flow), "--from", "slow").returncode == 0
    res = praxis("advance", str(flow))
    assert res.returncode == 0, res.stderr
    assert (run / "output" / "x.txt").read_text() == "done"
