"""state_events.py: the events each change records, from the state before and after and the
facts ``apply`` is given; asserted on the whole tuple of events after each event."""

from __future__ import annotations

import pytest

from praxis.flows.model import events as ev
from praxis.flows.model import state as st
from praxis.flows.model import state_events


def fresh() -> st.RunState:
    return st.new_run("r1", "f", ["a", "b", "c"], now=0.0)


def ran(s: st.RunState, *phases: str, now: float = 1.0) -> st.RunState:
    for ph in phases:
        s = st.apply(s, "start", phase=ph, now=now).state
        s = st.apply(s, "finish", phase=ph, now=now, hashes={f"{ph}.csv": ph}).state
    return s


def at_gate(*phases: str) -> st.RunState:
    return st.apply(ran(fresh(), *phases), "gate", phase=phases[-1], now=2.0).state


def test_a_phase_starts_the_run_and_then_the_next_phase() -> None:
    first = st.apply(fresh(), "start", phase="a", now=1.0, pid=42)
    assert first.events == (
        ev.RunStateChanged(status="running", revision=1, reason="start", at=1.0),
        ev.PhaseStarted(phase="a", attempt=1, at=1.0),
    )
    done = st.apply(first.state, "finish", phase="a", now=2.0, hashes={}).state
    assert st.apply(done, "start", phase="b", now=3.0).events == (
        ev.PhaseStarted(phase="b", attempt=1, at=3.0),
    )


def test_a_phase_done_names_its_seconds_hashes_and_the_phases_it_made_stale() -> None:
    s = st.apply(ran(fresh(), "a", "b", "c"), "end", now=2.0).state
    s = st.apply(s, "rerun", phase="a", now=3.0).state
    s = st.apply(s, "start", phase="a", now=4.0).state
    change = st.apply(s, "finish", phase="a", now=5.0, hashes={"a.csv": "new"}, seconds=1.5)
    assert change.events == (
        ev.PhaseDone(phase="a", attempt=2, seconds=1.5, hashes={"a.csv": "new"}, at=5.0),
    )  # b and c were made stale by the re-run already
    fresh_run = st.apply(fresh(), "start", phase="a", now=1.0).state
    assert st.apply(fresh_run, "finish", phase="a", now=2.0, hashes={}).events == (
        ev.PhaseDone(phase="a", attempt=1, seconds=0.0, hashes={}, at=2.0),
    )


def test_a_phase_run_again_out_of_order_names_the_phases_it_makes_stale() -> None:
    s = ran(fresh(), "a", "b")
    s.phases[0].status, s.cursor = "stale", 0  # a stale phase before done ones runs again
    s = st.apply(s, "start", phase="a", now=3.0).state
    change = st.apply(s, "finish", phase="a", now=4.0, hashes={})
    assert change.events[1:] == (ev.PhasesStale(phases=["b"], because="a ran again", at=4.0),)


def test_a_failure_and_a_recovery_name_the_error() -> None:
    s = st.apply(fresh(), "start", phase="a", now=1.0).state
    assert st.apply(s, "fail", phase="a", now=3.0, error="boom", seconds=2.0).events == (
        ev.RunStateChanged(status="failed", revision=2, reason="fail", at=3.0),
        ev.PhaseFailed(phase="a", attempt=1, error="boom", seconds=2.0, at=3.0),
    )
    waiting = st.apply(s, "waiting", phase="a", now=2.0, what="approval")
    assert waiting.events == ()  # nothing beyond run.json: the status stays
    assert st.apply(waiting.state, "recover", phase="a", now=3.0).events == (
        ev.RunStateChanged(status="failed", revision=3, reason="recover", at=3.0),
        ev.PhaseFailed(phase="a", attempt=1, error=st.APPROVAL_LOST, at=3.0),
    )


def test_a_gate_names_what_a_reviewer_may_edit() -> None:
    change = st.apply(ran(fresh(), "a"), "gate", phase="a", now=2.0, writable=["a.csv"])
    assert change.events == (
        ev.RunStateChanged(status="paused", revision=3, reason="gate", at=2.0),
        ev.GateWaiting(phase="a", writable=["a.csv"], at=2.0),
    )


def test_a_decision_names_its_actor_and_what_it_acknowledged() -> None:
    s = at_gate("a")
    acked = [{"name": "a.csv", "sha256": "a"}]
    assert st.apply(s, "approve", phase="a", now=3.0, actor="agent", acked=acked).events == (
        ev.GateApproved(phase="a", revision=4, actor="agent", acked=acked, at=3.0),
    )
    s = at_gate("a", "b")
    change = st.apply(
        s, "reject", phase="a", now=3.0, note="fix", edits="keep",
        actor="person", kept=["attempts/a/1"], edited=["a.csv"],
    )  # fmt: skip
    assert change.events == (
        ev.GateRejected(phase="b", reopen="a", note="fix", revision=6, at=3.0),
        ev.RerunRequested(phase="a", kept=["attempts/a/1"], edits="keep", edited=["a.csv"], at=3.0),
        ev.PhasesStale(phases=["b"], because="a was reopened at the Gate", at=3.0),
    )


def test_a_rerun_names_the_kept_attempt_and_the_phases_after_it_that_were_done() -> None:
    s = st.apply(ran(fresh(), "a", "b", "c"), "end", now=2.0).state
    change = st.apply(s, "rerun", phase="b", now=3.0, reuse=False, kept=["attempts/b/1"])
    assert change.events == (
        ev.RunStateChanged(status="paused", revision=8, reason="rerun", at=3.0),
        ev.RerunRequested(phase="b", kept=["attempts/b/1"], at=3.0),
        ev.PhasesStale(phases=["c"], because="re-run from b", at=3.0),
    )
    assert st.apply(s, "rerun", phase="c", now=3.0).events[1:] == (
        ev.RerunRequested(phase="c", kept=[], at=3.0),
    )


def test_edits_and_acceptances_name_the_version_before() -> None:
    s = at_gate("a")
    change = st.apply(s, "edit", now=3.0, name="a.csv", sha256="new", by="hand", diff="1 row")
    assert change.events == (
        ev.ArtifactEdited(
            name="a.csv", sha256="new", by="hand", old="a", phase="a", attempt=1,
            revision=4, diff="1 row", at=3.0,
        ),
    )  # fmt: skip
    done = ran(fresh(), "a")
    change = st.apply(done, "accept", phase="a", now=3.0, name="a.csv", sha256="x", actor="person")
    assert change.events == (
        ev.OutputAccepted(name="a.csv", phase="a", old="a", sha256="x", revision=3, at=3.0),
    )


def test_cancel_manage_and_reuse_are_recorded() -> None:
    assert st.apply(fresh(), "cancel", now=1.0).events == (
        ev.RunStateChanged(status="cancelled", revision=1, reason="cancel", at=1.0),
        ev.RunCancelled(revision=1, at=1.0),
    )
    assert st.apply(fresh(), "manage", now=1.0, managed=True, actor="person").events == (
        ev.ManagedMode(granted=True, revision=1, at=1.0),
    )
    other = st.apply(
        fresh(), "reuse", phase="a", now=1.0, source="20261201-0000/3", hashes={"a.csv": "h"}
    )
    assert other.events[1:] == (
        ev.PhaseReused(phase="a", attempt=1, source_run="20261201-0000", source_attempt=3, at=1.0),
    )
    s = st.apply(ran(fresh(), "a", "b", "c"), "end", now=2.0).state
    s = st.apply(s, "rerun", phase="a", now=2.0).state
    s = st.apply(s, "start", phase="a", now=3.0).state
    s = st.apply(s, "finish", phase="a", now=4.0, hashes={}).state  # b is stale: it may stand
    assert st.apply(s, "reuse", phase="b", now=5.0).events == (
        ev.PhaseReused(phase="b", attempt=1, at=5.0),
    )


def test_changes_that_record_only_the_run_s_status() -> None:
    s = ran(fresh(), "a", "b", "c")
    assert st.apply(s, "end", now=2.0).events == (
        ev.RunStateChanged(status="done", revision=7, reason="end", at=2.0),
    )
    assert st.apply(s, "pause", now=2.0).events == (
        ev.RunStateChanged(status="paused", revision=7, reason="pause", at=2.0),
    )
    assert st.apply(fresh(), "params", now=1.0, params={"w": 1}).events == ()


def test_facts_never_reach_the_state() -> None:
    s = at_gate("a")
    bare = st.apply(s, "approve", now=3.0).state
    assert st.apply(s, "approve", now=3.0, actor="agent", acked=[{"name": "x"}]).state == bare
    running = st.apply(fresh(), "start", phase="a", now=1.0).state
    plain = st.apply(running, "finish", phase="a", now=2.0, hashes={}).state
    assert st.apply(running, "finish", phase="a", now=2.0, hashes={}, seconds=9.0).state == plain


def test_a_fact_of_another_event_is_refused() -> None:
    with pytest.raises(TypeError, match="seconds"):
        st.apply(fresh(), "start", phase="a", now=1.0, seconds=3.0)


def test_the_tables_name_events_of_the_state_machine() -> None:
    assert set(state_events.RECORDS) <= set(st.EVENTS)
    assert set(state_events.FACTS) <= set(state_events.RECORDS)
    assert set(st.EVENTS) - set(state_events.RECORDS) == {"waiting", "end", "params", "pause"}
