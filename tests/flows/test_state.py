"""state.py: the transition tables, asserted on the whole state after each event."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from praxis.flows import state as st


def fresh() -> st.RunState:
    return st.new_run("r1", "f", ["a", "b", "c"], now=0.0)


def statuses(s: st.RunState) -> list[str]:
    return [p.status for p in s.phases]


def test_a_run_goes_through_its_phases_to_done() -> None:
    s = fresh()
    s = st.apply(s, "start", phase="a", now=1.0, pid=42)
    assert (s.status, statuses(s), s.cursor, s.revision) == (
        "running",
        ["running", "pending", "pending"],
        0,
        1,
    )
    assert s.phase("a").pid == 42 and s.phase("a").attempt == 1
    s = st.apply(s, "finish", phase="a", now=2.0, hashes={"x.csv": "h"})
    assert (s.status, statuses(s), s.cursor) == ("running", ["done", "pending", "pending"], 1)
    assert s.phase("a").hashes == {"x.csv": "h"} and s.phase("a").seconds == 1.0
    for ph in ("b", "c"):
        s = st.apply(s, "start", phase=ph, now=3.0)
        s = st.apply(s, "finish", phase=ph, now=4.0, hashes={})
    s = st.apply(s, "end", now=5.0)
    assert (s.status, statuses(s), s.cursor, s.revision) == ("done", ["done"] * 3, 3, 7)


def test_gate_approve_clears_waiting_and_keeps_cursor() -> None:
    s = st.apply(fresh(), "start", phase="a", now=1)
    s = st.apply(s, "finish", phase="a", now=2, hashes={})
    s = st.apply(s, "gate", phase="a", now=3)
    assert (s.status, s.waiting, s.gate, s.cursor) == ("paused", "gate", "a", 1)
    s = st.apply(s, "approve", phase="a", now=4)
    assert (s.status, s.waiting, s.gate, s.cursor) == ("paused", None, None, 1)
    with pytest.raises(st.IllegalTransition):
        st.apply(s, "approve", phase="a", now=5)


def test_illegal_move_raises_and_changes_nothing() -> None:
    s = fresh()
    before = asdict(s)
    with pytest.raises(st.IllegalTransition) as info:
        st.apply(s, "finish", phase="a", now=1, hashes={})
    assert "cannot finish a phase that is pending" in str(info.value)
    assert asdict(s) == before


def test_failure_then_rerun_marks_later_done_phases_stale() -> None:
    s = fresh()
    for ph in ("a", "b"):
        s = st.apply(s, "start", phase=ph, now=1)
        s = st.apply(s, "finish", phase=ph, now=2, hashes={})
    s = st.apply(s, "start", phase="c", now=3)
    s = st.apply(s, "fail", phase="c", now=4, error="boom")
    assert (s.status, statuses(s), s.error) == ("failed", ["done", "done", "failed"], "c: boom")
    s = st.apply(s, "rerun", phase="a", now=5)
    assert (s.status, statuses(s), s.cursor) == ("paused", ["pending", "stale", "pending"], 0)
    s = st.apply(s, "start", phase="a", now=6)
    assert s.phase("a").attempt == 2


def test_reject_reopens_an_earlier_phase_with_its_note() -> None:
    s = fresh()
    for ph in ("a", "b"):
        s = st.apply(s, "start", phase=ph, now=1)
        s = st.apply(s, "finish", phase=ph, now=2, hashes={})
    s = st.apply(s, "gate", phase="b", now=3)
    s = st.apply(s, "reject", phase="a", now=4, note="fix the regions")
    assert (s.status, s.waiting, statuses(s), s.cursor) == (
        "paused",
        None,
        ["pending", "stale", "pending"],
        0,
    )
    assert s.phase("a").note == "fix the regions"
    with pytest.raises(st.IllegalTransition):
        st.apply(s, "reject", phase="a", now=5, note="again")


def test_reject_cannot_reopen_a_phase_after_the_gate() -> None:
    s = st.apply(fresh(), "start", phase="a", now=1)
    s = st.apply(s, "finish", phase="a", now=2, hashes={})
    s = st.apply(s, "gate", phase="a", now=3)
    with pytest.raises(st.IllegalTransition):
        st.apply(s, "reject", phase="c", now=4, note="")


def test_recover_names_a_lost_approval() -> None:
    s = st.apply(fresh(), "start", phase="a", now=1)
    s = st.apply(s, "waiting", phase="a", now=2, what="approval")
    s = st.apply(s, "recover", phase="a", now=3)
    assert (s.status, s.phase("a").status, s.phase("a").error) == (
        "failed",
        "failed",
        st.APPROVAL_LOST,
    )
    s2 = st.apply(st.apply(fresh(), "start", phase="a", now=1), "recover", phase="a", now=2)
    assert s2.phase("a").error == st.STOPPED


def test_cancel_from_paused_and_running() -> None:
    s = st.apply(fresh(), "cancel", now=1)
    assert s.status == "cancelled"
    s = st.apply(st.apply(fresh(), "start", phase="a", now=1), "cancel", now=2)
    assert (s.status, s.phase("a").status, s.phase("a").error) == (
        "cancelled",
        "failed",
        st.STOPPED,
    )
    with pytest.raises(st.IllegalTransition):
        st.apply(s, "cancel", now=3)
