"""Before a command acts, the record is made to match the files: a hand edit at a Gate is
recorded (and stales what was bound to the look), an output changed outside praxis blocks
the phases that read it until accepted, and an unchanged linked output is not read again."""

from __future__ import annotations

import json
import os
import time

import pytest

from praxis.flows.definition import digest
from praxis.flows.engine import checks, reconcile, runner
from praxis.flows.report.status import status_of
from praxis.flows.store import intact
from praxis.flows.store.handle import RunHandle
from praxis.flows.store.lock import Lock

from .helpers import Fakes
from .test_decisions import at_first_gate, events, main


def test_a_hand_edit_after_the_look_is_recorded_and_stales_the_approve(tmp_path) -> None:
    flow, run, state = at_first_gate(tmp_path)
    seen = state.revision
    picks = run.paths.out("picks.csv")
    original = picks.read_bytes()
    picks.write_bytes(original.replace(b"2,20,keep", b"2,20,drop"))  # by hand, after the look
    with pytest.raises(runner.Refused, match=f"not {seen}"):
        runner.approve(flow, run.id, expect_revision=seen)
    edited = [e for e in events(run) if e.kind == "artifact_edited"]
    assert len(edited) == 1 and edited[0].by == "hand"
    assert edited[0].old and edited[0].sha256 != edited[0].old
    assert edited[0].diff.startswith("1 row(s) changed, 0 added, 0 removed")
    diff = json.loads((run.root / "edits" / "pick" / "1.json").read_text())[0]
    assert diff["diff"]["cells"] == [{"row": 2, "column": "action", "old": "keep", "new": "drop"}]
    state = RunHandle.open(run.flow, run.id).state
    assert state.revision == seen + 1
    assert state.phase("pick").hashes["picks.csv"] == edited[0].sha256
    runner.approve(flow, run.id, expect_revision=state.revision)
    runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert run.paths.out("total.csv").read_text() == "kept,total\n2,40.0\n"
    receipt = status_of(RunHandle.open(run.flow, run.id)).receipt
    pick = receipt["ledger"][0]
    assert pick["edits"][0]["by"] == "hand" and pick["decisions"][0]["actor"] == "person"


def test_a_hand_edit_after_approval_blocks_the_rerun_until_accepted(tmp_path, capsys) -> None:
    flow, run, state = at_first_gate(tmp_path)
    state = runner.approve(flow, run.id, gate="pick")
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    state = runner.approve(flow, run.id, gate="total")
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert state.status == "done"
    picks = run.paths.out("picks.csv")
    picks.write_bytes(picks.read_bytes().replace(b"3,30,keep", b"3,30,drop"))  # not writable now
    runner.rerun(flow, "total", run.id)
    with pytest.raises(runner.Refused, match="picks.csv of pick was changed outside praxis"):
        runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    status = status_of(RunHandle.open(run.flow, run.id))
    assert status.changed_outputs[0]["name"] == "picks.csv"
    assert status.route["reason"] == "output_changed" and status.route["who"] == "person"
    assert not status.receipt["ok"]
    with pytest.raises(runner.Refused, match="only a person"):
        runner.accept(flow, "picks.csv", run.id, actor="agent")
    code, out, err = main(capsys, "accept", str(flow), "--run", run.id, "--output", "picks.csv")
    assert code == 0, err
    accepted = [e for e in events(run) if e.kind == "output_accepted"]
    assert accepted[0].name == "picks.csv" and accepted[0].actor == "person:tester"
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert state.waiting == "gate"
    assert run.paths.out("total.csv").read_text() == "kept,total\n2,30.0\n"
    picks.write_bytes(picks.read_bytes().replace(b"1,10,keep", b"1,10,drop"))  # again
    runner.rerun(flow, "pick", run.id)  # its producer runs again: nothing to accept
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert (state.waiting, state.gate) == ("gate", "pick")
    assert b"1,10,keep" in picks.read_bytes()


def test_an_unchanged_linked_output_is_not_read_again(tmp_path, monkeypatch) -> None:
    flow, run, state = at_first_gate(tmp_path)
    runner.approve(flow, run.id, gate="pick")
    runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    runner.approve(flow, run.id, gate="total")
    runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    read: list[str] = []
    real = reconcile._digest
    monkeypatch.setattr(reconcile, "_digest", lambda r, n: read.append(n) or real(r, n))
    handle = RunHandle.open(run.flow, run.id)
    assert reconcile.changed_outputs(handle) == []
    assert "report.txt" not in read  # a hard link to its object, untouched since
    report = run.paths.out("report.txt")
    report.chmod(0o644)
    report.write_text("changed in place")
    (changed,) = reconcile.changed_outputs(handle)
    assert (changed.name, changed.phase) == ("report.txt", "report")


def test_status_records_a_hand_edit_only_when_the_lock_is_free(tmp_path) -> None:
    """reconcile_if_free: a holder of the run's lock (an advancing process) records edits
    itself; status then only reads, and records them once the lock is free."""
    flow, run, state = at_first_gate(tmp_path)
    picks = run.paths.out("picks.csv")
    picks.write_bytes(picks.read_bytes().replace(b"2,20,keep", b"2,20,drop"))
    with Lock(run.paths.lock):
        reconcile.reconcile_if_free(run.flow, run.id)
    assert RunHandle.open(run.flow, run.id).state.revision == state.revision
    reconcile.reconcile_if_free(run.flow, None)  # the newest run
    assert RunHandle.open(run.flow, run.id).state.revision == state.revision + 1
    assert [e.by for e in events(run) if e.kind == "artifact_edited"] == ["hand"]


def test_checks_of_a_hand_edit_come_from_the_saved_version_and_match_a_whole_pass(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(digest, "FINE_SETTLED_NS", -1)  # every file counts as settled
    monkeypatch.setattr(digest, "SETTLED_NS", -1)
    flow, run, _ = at_first_gate(tmp_path)
    picks = run.paths.out("picks.csv")
    staged = run.root / ".picks.save"
    staged.write_bytes(picks.read_bytes().replace(b"1,10,keep", b"1,10,drop"))
    runner.edit(flow, "picks.csv", staged, run.id, by="web", passed=True)  # a checked save
    kept = json.loads(run.paths.checked.read_text())
    saved = checks.sha256_of(picks)
    assert [(v["sha256"], v["failures"]) for v in kept.values()] == [(saved, [])]
    picks.write_bytes(picks.read_bytes().replace(b"2,20,keep", b"2,20,maybe"))  # by hand
    status_of(RunHandle.open(run.flow, run.id))  # records the edit; checks the changed row
    handle = RunHandle.open(run.flow, run.id)
    found = checks.gate_failures(handle, reconcile.phase_version(handle, "pick"))
    spec = run.flow.phase("pick").checks["picks.csv"]
    assert found == checks.evaluate("picks.csv", spec, picks) != []
    assert [str(f) for f in found] == [
        "picks.csv: check values failed on column 'action': 1 row(s) with values not in "
        "['keep', 'drop']; data row 2 (line 3)"
    ]


def test_an_output_this_process_linked_since_its_phase_ended_is_not_read_again(
    tmp_path,
) -> None:
    """A later phase taking an output as its input links its object into the workspace, which
    moves the object's ctime past the phase's end: what this process checked it holding, as
    it is now, still counts as unchanged. Written since, it is read."""
    flow, run, state = at_first_gate(tmp_path)
    runner.approve(flow, run.id, gate="pick")
    runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    runner.approve(flow, run.id, gate="total")
    runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    handle = RunHandle.open(run.flow, run.id)
    recorded = handle.state.phase("report").hashes["report.txt"]
    obj = run.paths.object(recorded)
    long_ago = time.time() - 60  # the link below is made well after the phase ended
    checked = intact.check(obj, recorded, "report.txt")  # as an upload checks it
    os.link(obj, tmp_path / "in-a-workspace")  # the upload's link: the ctime moves
    intact.linked(obj, recorded, checked)
    assert reconcile._linked(handle, "report.txt", recorded, long_ago)
    report = run.paths.out("report.txt")
    report.chmod(0o644)
    report.write_text("changed in place")
    assert not reconcile._linked(handle, "report.txt", recorded, long_ago)
