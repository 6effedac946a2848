"""The runner on the fake sandbox: gates, reruns, revisions, recovery, events."""

from __future__ import annotations

import json

import pytest

from praxis.flows.definition import isolation
from praxis.flows.engine import runner
from praxis.flows.model import state as st
from praxis.flows.model.transitions import Start
from praxis.flows.store.event_log import EventLog
from praxis.flows.store.handle import RunHandle
from praxis.flows.store.layout import NotWritable
from sandbox import ExecResult, SandboxUnavailable

from .helpers import Fakes, three_phase_flow


def kinds(run: RunHandle) -> list[str]:
    return [e.kind for e in EventLog(run.paths.events).read()]


def test_runs_to_the_gate_and_routes_files(tmp_path) -> None:
    flow = three_phase_flow(tmp_path)
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert (state.status, state.waiting, state.gate) == ("paused", "gate", "review")
    assert [p.status for p in state.phases] == ["done", "done", "pending"]
    out = run.paths.output
    assert sorted(p.name for p in out.iterdir()) == ["clean.csv", "flags.csv"]
    assert (run.paths.scratch_of("load") / "notes" / "log.txt").read_text() == "3 rows"
    # the uploaded input is not collected as an output or as scratch
    assert not (run.paths.scratch_of("load") / "data").exists()
    assert run.paths.record("load").is_file()
    assert state.phase("load").hashes.keys() == {"clean.csv"}


def test_edit_at_gate_then_approve_next_phase_reads_the_edit(tmp_path) -> None:
    flow = three_phase_flow(tmp_path)
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    state = runner.edit(
        flow, "flags.csv", b"id,keep\n1,yes\n2,no\n3,yes\n", run.id, expect_revision=state.revision
    )
    state = runner.approve(flow, run.id, expect_revision=state.revision)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert state.status == "done"
    assert (run.paths.out("total.txt")).read_text() == "40"
    assert "artifact_edited" in kinds(run) and "gate_approved" in kinds(run)


def test_edit_outside_the_writable_outputs_is_refused(tmp_path) -> None:
    flow = three_phase_flow(tmp_path)
    run = runner.begin(flow)
    runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    before = run.paths.out("clean.csv").read_bytes()
    with pytest.raises(NotWritable, match="only the outputs of phase 'review'"):
        runner.edit(flow, "clean.csv", b"id,amount\n", run.id)
    assert run.paths.out("clean.csv").read_bytes() == before


def test_edit_through_a_symlink_is_refused(tmp_path) -> None:
    flow = three_phase_flow(tmp_path)
    run = runner.begin(flow)
    runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    target = tmp_path / "elsewhere.csv"
    target.write_text("secret")
    run.paths.out("flags.csv").unlink()
    run.paths.out("flags.csv").symlink_to(target)
    with pytest.raises(NotWritable):
        runner.edit(flow, "flags.csv", b"id,keep\n", run.id)
    assert target.read_text() == "secret"


def test_stale_revision_is_refused_and_nothing_changes(tmp_path) -> None:
    flow = three_phase_flow(tmp_path)
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    before = run.paths.state.read_bytes()
    with pytest.raises(runner.Refused, match=f"at revision {state.revision}, not 1"):
        runner.approve(flow, run.id, expect_revision=1)
    assert run.paths.state.read_bytes() == before
    runner.approve(flow, run.id, expect_revision=state.revision)
    with pytest.raises(runner.Refused):  # a duplicate approval
        runner.approve(flow, run.id, expect_revision=state.revision)


def test_rerun_marks_later_phases_stale_and_keeps_the_attempt(tmp_path) -> None:
    flow = three_phase_flow(tmp_path)
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    runner.approve(flow, run.id, expect_revision=state.revision)
    runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    first = run.paths.out("clean.csv").read_bytes()
    state = runner.rerun(flow, "load", run.id)
    assert [p.status for p in state.phases] == ["pending", "stale", "stale"]
    assert state.status == "paused" and state.cursor == 0
    kept = run.paths.attempt("load", 1)
    assert (kept / "output" / "clean.csv").read_bytes() == first
    assert (kept / "record.ipynb").is_file()
    assert "rerun_requested" in kinds(run) and "phases_stale" in kinds(run)
    fakes = Fakes()
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=fakes, reuse=False))
    assert state.waiting == "gate"  # load and review ran again, the Gate holds again
    assert [p.attempt for p in state.phases] == [2, 2, 1]
    assert run.paths.attempt("review", 1).is_dir()
    assert len(fakes.executed) == 2


def test_reject_reopens_with_the_note(tmp_path) -> None:
    flow = three_phase_flow(tmp_path)
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    state = runner.reject(
        flow, "load", "amounts are in cents", run.id, expect_revision=state.revision
    )
    assert state.phase("load").note == "amounts are in cents"
    assert [p.status for p in state.phases] == ["pending", "stale", "pending"]
    assert "gate_rejected" in kinds(run)


def test_unavailable_sandbox_changes_nothing(tmp_path) -> None:
    flow = three_phase_flow(tmp_path)
    run = runner.begin(flow)
    before = run.paths.state.read_bytes()

    def unavailable(flow, run):
        raise SandboxUnavailable("no daemon")

    with pytest.raises(SandboxUnavailable):
        runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=unavailable))
    assert run.paths.state.read_bytes() == before


def test_a_phase_left_running_is_recovered_as_stopped(tmp_path) -> None:
    flow = three_phase_flow(tmp_path)
    run = runner.begin(flow)
    run.change(Start(phase="load", pid=999999))  # as a process that then died
    from praxis.flows.report.status import status_of

    assert "stopped before it finished" in status_of(RunHandle.open(run.flow, run.id)).message
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert (state.status, state.phase("load").error) == ("failed", st.STOPPED)
    state = runner.rerun(flow, "load", run.id)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert state.waiting == "gate"


def test_cancel_request_stops_before_the_next_phase(tmp_path) -> None:
    flow = three_phase_flow(tmp_path)
    run = runner.begin(flow)

    def cancel_during(code, workspace):
        run.paths.cancel_request.write_text("1")
        exec(compile(code, "s", "exec"), {"__name__": "__main__"})
        return ExecResult(status="ok")

    import os

    cwd = os.getcwd()
    os.chdir(run.paths.workspace)
    try:
        state = runner.advance(
            flow, run.id, options=runner.RunOptions(make_sandbox=Fakes(handler=cancel_during))
        )
    finally:
        os.chdir(cwd)
    assert state.status == "cancelled"
    assert "run_cancelled" in kinds(run)


def test_every_state_change_is_an_event(tmp_path) -> None:
    flow = three_phase_flow(tmp_path)
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    runner.approve(flow, run.id, expect_revision=state.revision)
    runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    got = kinds(run)
    assert got.count("phase_started") == 3 and got.count("phase_done") == 3
    assert "gate_waiting" in got and "sandbox_opened" in got
    statuses = [
        json.loads(line)["status"]
        for line in run.paths.events.read_text().splitlines()
        if json.loads(line)["kind"] == "run_state"
    ]
    assert statuses == ["running", "paused", "running", "done"]


def test_flow_yaml_s_backend_is_confined_once_per_run_and_per_advance(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    confined: list[str] = []
    confine = isolation.confine

    def counted(settings, where: str = "flow.yaml") -> str:
        confined.append(settings.backend)
        return confine(settings, where)

    monkeypatch.setattr(isolation, "confine", counted)
    monkeypatch.delenv(isolation.ENV, raising=False)
    before = isolation.allow_local(True)  # the fake backend runs on this host: granted
    try:
        flow = three_phase_flow(tmp_path)
        state = runner.run(flow)  # the default sandbox: flow.yaml's fake backend
        assert (state.status, confined) == ("paused", ["fake"])
        runner.approve(flow, state.run, expect_revision=state.revision)
        runner.advance(flow, state.run)
        assert confined == ["fake", "fake"]
        isolation.allow_local(False)
        with pytest.raises(isolation.LocalRefused):
            runner.run(flow)
        assert len(list((flow / "runs").iterdir())) == 1  # refused before a run was made
    finally:
        isolation.allow_local(before)
