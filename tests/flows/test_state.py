"""state.py: the transition tables, asserted on the whole state after each event."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest

from praxis.flows.model import state as st


def fresh() -> st.RunState:
    return st.new_run("r1", "f", ["a", "b", "c"], now=0.0)


def moved(
    s: st.RunState, now: float, phases: Mapping[str, Mapping[str, Any]] | None = None, **run: Any
) -> st.RunState:
    """``s`` one event later at ``now``: the given run fields and phase fields changed,
    ``revision`` one more, and nothing else."""
    changes = phases or {}
    return replace(
        s,
        phases=[replace(p, **changes.get(p.id, {})) for p in s.phases],
        revision=s.revision + 1,
        updated=now,
        **run,
    )


def refused(s: st.RunState, event: str, **kw: Any) -> str:
    """The one-line message ``event`` is refused with; ``s`` is left as it was."""
    before = copy.deepcopy(s)
    with pytest.raises(st.IllegalTransition) as info:
        st.apply(s, event, **kw)
    assert s == before
    message = str(info.value)
    assert message.startswith("cannot ") and "\n" not in message
    return message


def ran(s: st.RunState, *phases: str, now: float = 1.0) -> st.RunState:
    """``s`` after each of ``phases`` started and finished at ``now``."""
    for ph in phases:
        s = st.apply(s, "start", phase=ph, now=now).state
        s = st.apply(s, "finish", phase=ph, now=now, hashes={f"{ph}.csv": ph}).state
    return s


def test_a_run_goes_through_its_phases_to_done() -> None:
    s0 = fresh()
    s1 = st.apply(s0, "start", phase="a", now=1.0, pid=42).state
    assert s1 == moved(
        s0, 1.0, {"a": dict(status="running", attempt=1, started=1.0, pid=42)}, status="running"
    )
    s2 = st.apply(s1, "finish", phase="a", now=2.0, hashes={"x.csv": "h"}).state
    assert s2 == moved(
        s1, 2.0, {"a": dict(status="done", ended=2.0, hashes={"x.csv": "h"}, pid=None)}, cursor=1
    )
    assert s2.phase("a").seconds == 1.0
    s = s2
    for ph in ("b", "c"):
        s = st.apply(s, "start", phase=ph, now=3.0).state
        s = st.apply(s, "finish", phase=ph, now=4.0, hashes={}).state
    s = st.apply(s, "end", now=5.0).state
    assert s == st.RunState(
        run="r1",
        flow="f",
        phases=[
            st.PhaseState(
                id="a", status="done", attempt=1, started=1.0, ended=2.0, hashes={"x.csv": "h"}
            ),
            st.PhaseState(id="b", status="done", attempt=1, started=3.0, ended=4.0),
            st.PhaseState(id="c", status="done", attempt=1, started=3.0, ended=4.0),
        ],
        status="done",
        revision=7,
        cursor=3,
        created=0.0,
        updated=5.0,
    )


def test_gate_approve_clears_waiting_and_keeps_cursor() -> None:
    s = ran(fresh(), "a")
    at_gate = st.apply(s, "gate", phase="a", now=3).state
    assert at_gate == moved(s, 3, status="paused", waiting="gate", gate="a")
    approved = st.apply(at_gate, "approve", phase="a", now=4).state
    assert approved == moved(at_gate, 4, waiting=None, gate=None)
    assert approved.cursor == 1
    assert refused(approved, "approve", phase="a", now=5) == (
        "cannot approve a run that is not at a Gate"
    )


def test_a_gate_follows_only_a_done_phase() -> None:
    s = st.apply(fresh(), "start", phase="a", now=1).state
    assert refused(s, "gate", phase="a", now=2) == (
        "cannot pause at a Gate after a phase that is running"
    )


def test_illegal_move_raises_and_changes_nothing() -> None:
    assert "cannot finish a phase that is pending" in refused(
        fresh(), "finish", phase="a", now=1, hashes={}
    )


FAILED_ONCE = {"failure": {"error": "boom"}, "repeats": 1, "retries": 1}


def test_failure_then_rerun_marks_later_done_phases_stale() -> None:
    s = st.apply(ran(fresh(), "a", "b"), "start", phase="c", now=3).state
    failed = st.apply(s, "fail", phase="c", now=4, error="boom").state
    assert failed == moved(
        s,
        4,
        {"c": dict(status="failed", ended=4, error="boom", pid=None) | FAILED_ONCE},
        status="failed",
        error="c: boom",
    )
    rerun = st.apply(failed, "rerun", phase="a", now=5).state
    assert rerun == moved(
        failed,
        5,
        {"a": dict(status="pending"), "b": dict(status="stale"), "c": dict(status="pending")},
        status="paused",
        cursor=0,
        error=None,
    )
    again = st.apply(rerun, "start", phase="a", now=6).state
    assert again == moved(
        rerun,
        6,
        {"a": dict(status="running", attempt=2, started=6, ended=None, hashes={})},
        status="running",
    )


def test_rerun_without_reuse_makes_later_done_phases_pending() -> None:
    s = st.apply(ran(fresh(), "a", "b", "c"), "end", now=2).state
    rerun = st.apply(s, "rerun", phase="b", now=5, reuse=False).state
    later = dict(status="pending", no_reuse=True)  # no other run's attempt stands for c either
    assert rerun == moved(
        s, 5, {"b": dict(status="pending"), "c": later}, status="paused", cursor=1
    )


def test_rerun_cannot_skip_ahead_of_the_cursor() -> None:
    s = st.apply(fresh(), "cancel", now=1).state
    assert refused(s, "rerun", phase="c", now=2) == "cannot rerun a phase that is not reached yet"


def test_reject_reopens_an_earlier_phase_with_its_note() -> None:
    s = st.apply(ran(fresh(), "a", "b"), "gate", phase="b", now=3).state
    rejected = st.apply(s, "reject", phase="a", now=4, note="fix the regions").state
    assert rejected == moved(
        s,
        4,
        {
            "a": dict(status="pending", note="fix the regions"),
            "b": dict(status="stale"),
        },
        cursor=0,
        waiting=None,
        gate=None,
    )
    assert refused(rejected, "reject", phase="a", now=5, note="again") == (
        "cannot reject a run that is not at a Gate"
    )


def test_reject_cannot_reopen_a_phase_after_the_gate() -> None:
    s = st.apply(ran(fresh(), "a"), "gate", phase="a", now=3).state
    assert refused(s, "reject", phase="c", now=4, note="") == (
        "cannot reject a phase that is after the Gate"
    )


def test_recover_names_a_lost_approval() -> None:
    s = st.apply(fresh(), "start", phase="a", now=1).state
    s = st.apply(s, "waiting", phase="a", now=2, what="approval").state
    assert s.phase("a").waiting == "approval"
    lost = st.apply(s, "recover", phase="a", now=3).state
    assert lost == moved(
        s,
        3,
        {"a": dict(status="failed", ended=3, error=st.APPROVAL_LOST, waiting=None, pid=None)},
        status="failed",
        error=f"a: {st.APPROVAL_LOST}",
    )
    s2 = st.apply(fresh(), "start", phase="a", now=1).state
    stopped = st.apply(s2, "recover", phase="a", now=2).state
    assert stopped == moved(
        s2,
        2,
        {"a": dict(status="failed", ended=2, error=st.STOPPED)},
        status="failed",
        error=f"a: {st.STOPPED}",
    )


def test_recovering_a_paused_run_is_refused() -> None:
    """No event leaves a phase running in a paused run; a hand-made one is refused."""
    s = st.apply(fresh(), "start", phase="a", now=1).state
    s.status = "paused"
    assert refused(s, "recover", phase="a", now=2) == "cannot recover a run that is paused"


def test_cancel_from_paused_and_running() -> None:
    s = fresh()
    assert st.apply(s, "cancel", now=1).state == moved(s, 1, status="cancelled")
    running = st.apply(fresh(), "start", phase="a", now=1).state
    cancelled = st.apply(running, "cancel", now=2).state
    assert cancelled == moved(
        running,
        2,
        {"a": dict(status="failed", ended=2, error=st.STOPPED, pid=None)},
        status="cancelled",
    )
    assert refused(cancelled, "cancel", now=3) == "cannot cancel a run that is cancelled"


def test_waiting_only_in_a_running_phase() -> None:
    s = st.apply(fresh(), "start", phase="a", now=1).state
    waiting = st.apply(s, "waiting", phase="a", now=2, what="approval").state
    assert waiting == moved(s, 2, {"a": dict(waiting="approval")})
    assert refused(s, "waiting", phase="b", now=2, what="approval") == (
        "cannot wait in a phase that is pending"
    )


def test_edit_at_the_gate_records_the_new_hash() -> None:
    s = st.apply(ran(fresh(), "a"), "gate", phase="a", now=3).state
    edited = st.apply(s, "edit", now=4, name="a.csv", sha256="new").state
    assert edited == moved(s, 4, {"a": dict(hashes={"a.csv": "new"}, edited={"a.csv": "a"})})
    again = st.apply(edited, "edit", now=5, name="a.csv", sha256="newer").state
    assert again.phase("a").edited == {"a.csv": "a"}  # what the phase wrote, still
    back = st.apply(again, "edit", now=6, name="a.csv", sha256="a").state
    assert back.phase("a").edited == {}  # edited back to the phase's version
    approved = st.apply(s, "approve", now=4).state
    assert refused(approved, "edit", now=5, name="a.csv", sha256="x") == (
        "cannot edit a run that is not at a Gate"
    )


def test_accept_takes_only_a_recorded_output() -> None:
    s = ran(fresh(), "a")
    accepted = st.apply(s, "accept", phase="a", now=2, name="a.csv", sha256="new").state
    assert accepted == moved(s, 2, {"a": dict(hashes={"a.csv": "new"})})
    assert refused(s, "accept", phase="a", now=2, name="z.csv", sha256="x") == (
        "cannot accept an output that is not recorded for a"
    )


def test_params_change_between_advances_only() -> None:
    s = fresh()
    assert st.apply(s, "params", now=1, params={"week": "W1"}).state == moved(
        s, 1, params={"week": "W1"}
    )
    running = st.apply(s, "start", phase="a", now=1).state
    assert refused(running, "params", now=2, params={}) == (
        "cannot change the parameters of a run that is running"
    )


def test_manage_in_any_status() -> None:
    s = st.apply(fresh(), "cancel", now=1).state
    assert st.apply(s, "manage", now=2, managed=True).state == moved(s, 2, managed=True)


def test_an_unknown_event_is_refused() -> None:
    assert refused(fresh(), "explode", now=1) == "cannot explode a run that is paused"


def one_in_each_status() -> dict[str, st.RunState]:
    running = st.apply(fresh(), "start", phase="a", now=1).state
    return {
        "paused": fresh(),
        "running": running,
        "failed": st.apply(running, "fail", phase="a", now=2, error="boom").state,
        "done": st.apply(ran(fresh(), "a", "b", "c"), "end", now=2).state,
        "cancelled": st.apply(fresh(), "cancel", now=1).state,
    }


@pytest.mark.parametrize("status", st.RUN_STATUSES)
def test_every_event_the_run_table_does_not_list_is_refused(status: str) -> None:
    s = one_in_each_status()[status]
    assert s.status == status
    illegal = [e for e in st.EVENTS if e not in st.RUN_MOVES[s.status]]
    assert illegal
    for event in illegal:
        refused(s, event, phase="a", now=9)


def test_the_tables_name_the_same_events() -> None:
    assert set(st.HANDLERS) == set(st.EVENTS)
    assert set(st.RUN_MOVES) == set(st.RUN_STATUSES)
    assert set(st.PHASE_MOVES) == set(st.PHASE_STATUSES)
    assert {e for row in st.RUN_MOVES.values() for e in row} == set(st.EVENTS)
    in_phase_table = {e for row in st.PHASE_MOVES.values() for e in row}
    assert st.PHASE_EVENTS == in_phase_table & set(st.EVENTS)
    assert in_phase_table - set(st.EVENTS) == {"stale", "reset"}
    assert set(st.GUARDS) <= set(st.EVENTS)


def test_a_failure_repeated_from_the_same_digests_counts_and_a_change_resets_it() -> None:
    digests = {"pre": "p", "definition": "d", "code": "c"}

    def attempt(s: st.RunState, error: str, **kw: object) -> st.RunState:
        s = st.apply(s, "start", phase="a", now=1).state
        return st.apply(s, "fail", phase="a", now=2, error=error, **kw).state

    def again(s: st.RunState) -> st.RunState:
        return st.apply(s, "rerun", phase="a", now=3).state

    s = attempt(fresh(), "boom", digests=digests)
    assert (s.phase("a").repeats, s.phase("a").failure) == (
        1,
        {"error": "boom", "pre": "p", "definition": "d"},
    )
    s = attempt(again(s), "boom", digests=digests)
    assert s.phase("a").repeats == 2  # the same error, from the same definition and pre-state
    s = attempt(again(s), "boom", digests={**digests, "pre": "q"})
    assert s.phase("a").repeats == 1  # an input changed: not a repeat
    s = attempt(again(s), "other", digests={**digests, "pre": "q"})
    assert (s.phase("a").repeats, s.phase("a").retries) == (1, 2)  # another error, same inputs
    s = attempt(again(s), st.STOPPED)
    assert (s.phase("a").repeats, s.phase("a").failure) == (0, {})  # a stop is no failure
    s = st.apply(again(attempt(again(s), "boom", digests=digests)), "start", phase="a", now=4).state
    done = st.apply(s, "finish", phase="a", now=5, hashes={}, digests=digests).state
    assert (done.phase("a").repeats, done.phase("a").failure) == (0, {})


def test_a_run_left_running_between_phases_pauses_and_never_while_a_phase_runs() -> None:
    s = ran(fresh(), "a")
    assert s.status == "running"
    paused = st.apply(s, "pause", now=3).state
    assert paused == moved(s, 3, status="paused")
    running = st.apply(paused, "start", phase="b", now=4).state
    assert refused(running, "pause", now=5) == "cannot pause a run that is running a phase"
    assert not st.allows(running, "pause") and st.allows(s, "pause")


def test_a_rerun_keeps_or_discards_the_edits_it_would_replace() -> None:
    s = st.apply(ran(fresh(), "a"), "gate", phase="a", now=3).state
    edited = st.apply(s, "edit", now=4, name="a.csv", sha256="fixed").state
    kept = st.apply(edited, "reject", phase="a", now=5, note="n", edits="keep").state
    assert kept.phase("a").carry == {"a.csv": ["a", "fixed"]}
    assert kept.phase("a").edited == {"a.csv": "a"}  # until the phase runs again
    dropped = st.apply(kept, "rerun", phase="a", now=6, edits="discard").state
    assert dropped.phase("a").carry == {}
    started = st.apply(kept, "start", phase="a", now=7).state
    assert started.phase("a").edited == {} and started.phase("a").carry == {"a.csv": ["a", "fixed"]}
    finished = st.apply(started, "finish", phase="a", now=8, hashes={"a.csv": "b"}).state
    at_gate = st.apply(finished, "gate", phase="a", now=9).state
    assert at_gate.phase("a").carry == {}  # re-applied on the way to the Gate
