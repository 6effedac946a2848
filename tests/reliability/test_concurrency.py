"""docs/reliability.md items 13-15: one advancing process per run; Gates, approvals, restarts."""

from __future__ import annotations

import json
import multiprocessing
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from praxis.flows.definition import contract
from praxis.flows.engine import runner
from praxis.flows.model.events import PhaseStarted
from praxis.flows.store.event_log import EventLog
from praxis.flows.store.lock import Lock

from . import _child
from ._flows import begin, one_line_error, praxis, praxis_here, state_of, write_flow

# every flow here asks for the fake or local backend: the person allows it
pytestmark = pytest.mark.usefixtures("local_env")

WORKERS = 8
ROUNDS = 50

SLOW_PHASE = """
    flow: contended
    sandbox: {backend: fake, timeout: 30}
    phases:
      - id: only
        kind: script
        script: only.py
        outputs: [only.txt]
        reuse: never  # every run's phase runs (and holds its lock), none is restored
"""
# Long enough that every worker released by the barrier meets the lock still held.
SLOW_FILES = {"only.py": "import time\ntime.sleep(0.25)\nopen('only.txt', 'w').write('x')\n"}


def test_item13_exclusive_advance_each_phase_starts_once(tmp_path: Path) -> None:
    flow_root = write_flow(tmp_path / "contended", SLOW_PHASE, SLOW_FILES)
    flow = contract.require(flow_root)
    run_ids = [runner.begin(flow).id for _ in range(ROUNDS)]
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    results = ctx.Queue()
    workers = [
        ctx.Process(target=_child.advance_rounds, args=(str(flow_root), run_ids, barrier, results))
        for _ in range(WORKERS)
    ]
    for w in workers:
        w.start()
    rows = []
    try:
        for _ in range(WORKERS * ROUNDS):
            rows.append(results.get(timeout=120))
    finally:
        for w in workers:
            w.join(timeout=30)
            if w.is_alive():
                w.kill()
                w.join()
    assert all(w.exitcode == 0 for w in workers)
    by_round: dict[int, list[tuple[int, str, object]]] = defaultdict(list)
    for n, pid, outcome, detail in rows:
        by_round[n].append((pid, outcome, detail))
    for n, run_id in enumerate(run_ids):
        events = EventLog(flow_root / "runs" / run_id / "events.jsonl").read()
        assert sum(isinstance(e, PhaseStarted) for e in events) == 1, run_id
        assert state_of(flow_root / "runs" / run_id).status == "done"
        holders = [pid for pid, outcome, _ in by_round[n] if outcome == "advanced"]
        assert len(holders) == 1, by_round[n]
        busy = [detail for _, outcome, detail in by_round[n] if outcome == "busy"]
        assert busy, f"round {n}: nobody met the lock held"
        for pid, message in busy:  # type: ignore[misc]
            assert pid == holders[0] and f"process {holders[0]} is advancing" in message


def test_item13_cli_exits_3_naming_the_holder_and_a_killed_holder_frees_the_lock(
    tmp_path: Path,
) -> None:
    flow_root = write_flow(tmp_path / "contended", SLOW_PHASE, SLOW_FILES)
    run = begin(flow_root)
    before = (run / "run.json").read_bytes()
    ready = tmp_path / "ready"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from tests.reliability._child import hold_lock; "
            "hold_lock(sys.argv[1], sys.argv[2])",
            str(run / "run.lock"),
            str(ready),
        ],
        cwd=Path(__file__).parents[2],
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert holder.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        res = praxis("advance", str(flow_root))
        assert res.returncode == 3, (res.stdout, res.stderr)
        line = one_line_error(res, "Busy: ")
        assert f"run {run.name}: process {holder.pid} is advancing it" in line
        assert (run / "run.json").read_bytes() == before
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with Lock(run / "run.lock"):  # free at once: no retry, no wait
        pass
    res = praxis("advance", str(flow_root))
    assert res.returncode == 0, res.stderr
    assert state_of(run).status == "done"


GATED = """
    flow: gated
    sandbox: {backend: fake, timeout: 30}
    phases:
      - id: flag
        kind: script
        script: flag.py
        outputs: [review.csv]
        review: required
      - id: report
        kind: script
        script: report.py
        inputs: {working: [review.csv]}
        outputs: [report.txt]
"""
GATED_FILES = {
    "flag.py": "open('review.csv', 'w').write('id,action\\n1,keep\\n2,drop\\n')\n",
    "report.py": "open('report.txt', 'w').write(open('review.csv').read().upper())\n",
}


def test_item14_gate_survives_restart_and_double_or_stale_approval_is_refused(
    tmp_path: Path,
) -> None:
    flow_root = write_flow(tmp_path / "gated", GATED, GATED_FILES)
    res = praxis("run", str(flow_root))  # this process ends at the Gate
    assert res.returncode == 0, res.stderr
    run = next((flow_root / "runs").iterdir())
    at_gate = state_of(run)
    assert (at_gate.status, at_gate.waiting, at_gate.gate) == ("paused", "gate", "flag")
    res = praxis("status", str(flow_root))  # a new process sees the Gate
    assert "praxis approve" in res.stdout and f"revision {at_gate.revision}" in res.stdout

    snapshot = (run / "run.json").read_bytes()
    stale = praxis("approve", str(flow_root), "--expect-revision", str(at_gate.revision - 1))
    assert stale.returncode == 4, stale.stderr
    assert "it changed since you looked" in one_line_error(stale, "Refused: ")
    assert (run / "run.json").read_bytes() == snapshot

    ok = praxis("approve", str(flow_root), "--expect-revision", str(at_gate.revision))
    assert ok.returncode == 0, ok.stderr
    done = state_of(run)
    assert done.status == "done" and (run / "output" / "report.txt").exists()

    snapshot = (run / "run.json").read_bytes()
    events = (run / "events.jsonl").read_bytes()
    for args in (["--gate", "flag"], ["--expect-revision", str(at_gate.revision)]):
        again = praxis("approve", str(flow_root), *args)
        assert again.returncode == 4, again.stderr
        one_line_error(again, "Refused: ")
        assert (run / "run.json").read_bytes() == snapshot
        assert (run / "events.jsonl").read_bytes() == events
    bare = praxis("approve", str(flow_root))  # bound to nothing: a usage error, nothing changes
    assert bare.returncode == 2, bare.stderr
    one_line_error(bare, "Unbound: ")
    assert (run / "run.json").read_bytes() == snapshot
    assert (run / "events.jsonl").read_bytes() == events


ASKING = """
    sandbox: {backend: local, timeout: 60}
    phases:
      - id: ask
        kind: agent
        prompt: task.md
        outputs: [x.txt]
"""
# Advances the flow with an approver that never answers: killed while the approval is pending.
ASKING_CHILD = """
import sys, threading
from pathlib import Path
from praxis.service import acting


flow, marker = Path(sys.argv[1]), Path(sys.argv[2])

def approver(phase, code):
    marker.write_text(code)
    threading.Event().wait()
    return False

acting.advance(flow, approver=approver)
"""


def test_item15_approval_pending_when_the_process_dies_is_lost_and_rerunnable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = write_flow(tmp_path / "flow", ASKING, {"task.md": "Write x.txt.\n"})
    replies = [{"tool_calls": [{"name": "run_python", "args": {"code": "print('unprepared')"}}]}]
    (tmp_path / "turn.json").write_text(json.dumps(replies))
    monkeypatch.setenv("PRAXIS_MODEL", "praxis.agent.scripted:ScriptedChatModel")
    monkeypatch.setenv("PRAXIS_MODEL_SCRIPT", str(tmp_path / "turn.json"))
    run = flow / "runs" / praxis_here(capsys, "begin", str(flow)).stdout.strip()
    marker = tmp_path / "asked"
    child = subprocess.Popen([sys.executable, "-c", ASKING_CHILD, str(flow), str(marker)])
    try:
        deadline = time.monotonic() + 90
        while not marker.exists():
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        assert state_of(run).phase("ask").waiting == "approval"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    res = praxis_here(capsys, "status", str(flow))
    assert "approval lost in restart" in res.stdout
    res = praxis_here(capsys, "advance", str(flow))
    assert res.returncode == 1
    assert "PhaseFailed: ask: approval lost in restart" in res.stderr
    assert praxis_here(capsys, "rerun", str(flow), "--from", "ask").returncode == 0
    assert state_of(run).phase("ask").status == "pending"


def test_item14_a_new_process_can_approve_a_gate_left_by_a_killed_one(tmp_path: Path) -> None:
    """The process that reached the Gate is killed (not ended): the Gate still holds."""
    flow_root = write_flow(tmp_path / "gated", GATED, GATED_FILES)
    run = begin(flow_root)
    code = (
        "import os, signal, sys\n"
        "from praxis.flows.engine import runner\n"
        "def stop(e):\n"
        "    if e.kind == 'gate_waiting':\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "runner.advance(sys.argv[1], options=runner.RunOptions(on_event=stop))\n"
    )
    child = subprocess.run([sys.executable, "-c", code, str(flow_root)], timeout=120)
    assert child.returncode == -signal.SIGKILL
    state = state_of(run)
    assert (state.waiting, state.gate) == ("gate", "flag")
    assert runner.approve(flow_root, expect_revision=state.revision).waiting is None
    assert runner.advance(flow_root).status == "done"
    with pytest.raises(runner.Refused, match="not waiting at a Gate"):
        runner.approve(flow_root)
