"""transitions.py (phase_moves.py, run_moves.py): the events each transition records, from the
state before and after and the facts ``apply`` is given; asserted on the whole tuple of events
after each event."""

from __future__ import annotations

import pytest

from praxis.flows.model import events as ev
from praxis.flows.model import state as st
from praxis.flows.model.machine import apply
from praxis.flows.model.transitions import (
    Accept,
    Approve,
    Cancel,
    Edit,
    End,
    Fail,
    Finish,
    Gate,
    Manage,
    Params,
    Pause,
    Recover,
    Reject,
    Rerun,
    Reuse,
    Start,
    Wait,
)


def fresh() -> st.RunState:
    return st.new_run("r1", "f", ["a", "b", "c"], now=0.0)


def ran(s: st.RunState, *phases: str, now: float = 1.0) -> st.RunState:
    for ph in phases:
        s = apply(s, Start(phase=ph), now=now).state
        s = apply(s, Finish(phase=ph, hashes={f"{ph}.csv": ph}), now=now).state
    return s


def at_gate(*phases: str) -> st.RunState:
    return apply(ran(fresh(), *phases), Gate(phase=phases[-1]), now=2.0).state


def test_a_phase_starts_the_run_and_then_the_next_phase() -> None:
    first = apply(fresh(), Start(phase="a", pid=42), now=1.0)
    assert first.events == (
        ev.RunStateChanged(status="running", revision=1, reason="start", at=1.0),
        ev.PhaseStarted(phase="a", attempt=1, at=1.0),
    )
    done = apply(first.state, Finish(phase="a", hashes={}), now=2.0).state
    assert apply(done, Start(phase="b"), now=3.0).events == (
        ev.PhaseStarted(phase="b", attempt=1, at=3.0),
    )


def test_a_phase_done_names_its_seconds_hashes_and_the_phases_it_made_stale() -> None:
    s = apply(ran(fresh(), "a", "b", "c"), End(), now=2.0).state
    s = apply(s, Rerun(phase="a"), now=3.0).state
    s = apply(s, Start(phase="a"), now=4.0).state
    change = apply(s, Finish(phase="a", hashes={"a.csv": "new"}, seconds=1.5), now=5.0)
    assert change.events == (
        ev.PhaseDone(phase="a", attempt=2, seconds=1.5, hashes={"a.csv": "new"}, at=5.0),
    )  # b and c were made stale by the re-run already
    fresh_run = apply(fresh(), Start(phase="a"), now=1.0).state
    assert apply(fresh_run, Finish(phase="a", hashes={}), now=2.0).events == (
        ev.PhaseDone(phase="a", attempt=1, seconds=0.0, hashes={}, at=2.0),
    )


def test_a_phase_run_again_out_of_order_names_the_phases_it_makes_stale() -> None:
    s = ran(fresh(), "a", "b")
    s.phases[0].status, s.cursor = "stale", 0  # a stale phase before done ones runs again
    s = apply(s, Start(phase="a"), now=3.0).state
    change = apply(s, Finish(phase="a", hashes={}), now=4.0)
    assert change.events[1:] == (ev.PhasesStale(phases=["b"], because="a ran again", at=4.0),)


def test_a_failure_and_a_recovery_name_the_error() -> None:
    s = apply(fresh(), Start(phase="a"), now=1.0).state
    assert apply(s, Fail(phase="a", error="boom", seconds=2.0), now=3.0).events == (
        ev.RunStateChanged(status="failed", revision=2, reason="fail", at=3.0),
        ev.PhaseFailed(phase="a", attempt=1, error="boom", seconds=2.0, at=3.0),
    )
    waiting = apply(s, Wait(phase="a", what="approval"), now=2.0)
    assert waiting.events == ()  # nothing beyond run.json: the status stays
    assert apply(waiting.state, Recover(phase="a"), now=3.0).events == (
        ev.RunStateChanged(status="failed", revision=3, reason="recover", at=3.0),
        ev.PhaseFailed(phase="a", attempt=1, error=st.APPROVAL_LOST, at=3.0),
    )


def test_a_gate_names_what_a_reviewer_may_edit() -> None:
    change = apply(ran(fresh(), "a"), Gate(phase="a", writable=["a.csv"]), now=2.0)
    assert change.events == (
        ev.RunStateChanged(status="paused", revision=3, reason="gate", at=2.0),
        ev.GateWaiting(phase="a", writable=["a.csv"], at=2.0),
    )


def test_a_decision_names_its_actor_and_what_it_acknowledged() -> None:
    s = at_gate("a")
    acked = [{"name": "a.csv", "sha256": "a"}]
    assert apply(s, Approve(actor="agent", acked=acked), now=3.0).events == (
        ev.GateApproved(phase="a", revision=4, actor="agent", acked=acked, attempt=1, at=3.0),
    )
    s = at_gate("a", "b")
    reject = Reject(
        phase="a", note="fix", edits="keep", actor="person", kept=["attempts/a/1"], edited=["a.csv"]
    )
    change = apply(s, reject, now=3.0)
    assert change.events == (
        ev.GateRejected(phase="b", reopen="a", note="fix", revision=6, at=3.0),
        ev.RerunRequested(phase="a", kept=["attempts/a/1"], edits="keep", edited=["a.csv"], at=3.0),
        ev.PhasesStale(phases=["b"], because="a was reopened at the Gate", at=3.0),
    )


def test_a_rerun_names_the_kept_attempt_and_the_phases_after_it_that_were_done() -> None:
    s = apply(ran(fresh(), "a", "b", "c"), End(), now=2.0).state
    change = apply(s, Rerun(phase="b", reuse=False, kept=["attempts/b/1"]), now=3.0)
    assert change.events == (
        ev.RunStateChanged(status="paused", revision=8, reason="rerun", at=3.0),
        ev.RerunRequested(phase="b", kept=["attempts/b/1"], at=3.0),
        ev.PhasesStale(phases=["c"], because="re-run from b", at=3.0),
    )
    assert apply(s, Rerun(phase="c"), now=3.0).events[1:] == (
        ev.RerunRequested(phase="c", kept=[], at=3.0),
    )


def test_edits_and_acceptances_name_the_version_before() -> None:
    s = at_gate("a")
    change = apply(s, Edit(output="a.csv", sha256="new", by="hand", diff="1 row"), now=3.0)
    assert change.events == (
        ev.ArtifactEdited(
            name="a.csv", sha256="new", by="hand", old="a", phase="a", attempt=1,
            revision=4, diff="1 row", at=3.0,
        ),
    )  # fmt: skip
    done = ran(fresh(), "a")
    change = apply(done, Accept(phase="a", output="a.csv", sha256="x", actor="person"), now=3.0)
    assert change.events == (
        ev.OutputAccepted(name="a.csv", phase="a", old="a", sha256="x", revision=3, at=3.0),
    )


def test_cancel_manage_and_reuse_are_recorded() -> None:
    assert apply(fresh(), Cancel(), now=1.0).events == (
        ev.RunStateChanged(status="cancelled", revision=1, reason="cancel", at=1.0),
        ev.RunCancelled(revision=1, at=1.0),
    )
    assert apply(fresh(), Manage(managed=True, actor="person"), now=1.0).events == (
        ev.ManagedMode(granted=True, revision=1, at=1.0),
    )
    other = apply(
        fresh(), Reuse(phase="a", source="20261201-0000/3", hashes={"a.csv": "h"}), now=1.0
    )
    assert other.events[1:] == (
        ev.PhaseReused(phase="a", attempt=1, source_run="20261201-0000", source_attempt=3, at=1.0),
    )
    s = apply(ran(fresh(), "a", "b", "c"), End(), now=2.0).state
    s = apply(s, Rerun(phase="a"), now=2.0).state
    s = apply(s, Start(phase="a"), now=3.0).state
    s = apply(s, Finish(phase="a", hashes={}), now=4.0).state  # b is stale: it may stand
    assert apply(s, Reuse(phase="b"), now=5.0).events == (
        ev.PhaseReused(phase="b", attempt=1, at=5.0),
    )


def test_changes_that_record_only_the_run_s_status() -> None:
    s = ran(fresh(), "a", "b", "c")
    assert apply(s, End(), now=2.0).events == (
        ev.RunStateChanged(status="done", revision=7, reason="end", at=2.0),
    )
    assert apply(s, Pause(), now=2.0).events == (
        ev.RunStateChanged(status="paused", revision=7, reason="pause", at=2.0),
    )
    assert apply(fresh(), Params(params={"w": 1}), now=1.0).events == ()


def test_facts_never_reach_the_state() -> None:
    s = at_gate("a")
    bare = apply(s, Approve(), now=3.0).state
    assert apply(s, Approve(actor="agent", acked=[{"name": "x"}]), now=3.0).state == bare
    running = apply(fresh(), Start(phase="a"), now=1.0).state
    plain = apply(running, Finish(phase="a", hashes={}), now=2.0).state
    assert apply(running, Finish(phase="a", hashes={}, seconds=9.0), now=2.0).state == plain


def test_a_fact_of_another_event_is_refused() -> None:
    with pytest.raises(TypeError, match="seconds"):
        apply(fresh(), Start(phase="a", seconds=3.0), now=1.0)


def test_every_event_a_transition_records_is_in_the_catalogue() -> None:
    """What each transition at a Gate records is read back as its class (the catalogue)."""
    made = [
        e
        for t in (
            Edit(output="b.csv", sha256="e"),
            Approve(),
            Manage(),
            Accept(phase="a", output="a.csv", sha256="x"),
            Reject(phase="a", note="n"),
            Cancel(),
        )
        for e in apply(at_gate("a", "b"), t, now=3.0).events
    ]
    kinds = {e.kind for e in made}
    assert {"artifact_edited", "gate_approved", "managed_mode", "output_accepted"} <= kinds
    assert {"gate_rejected", "rerun_requested", "phases_stale", "run_cancelled"} <= kinds
    assert all(ev.KINDS[e.kind] is type(e) for e in made)
