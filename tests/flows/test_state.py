"""machine.py: the table of transitions, asserted on the whole state after each one."""

from __future__ import annotations

import ast
import copy
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import pytest

from praxis.flows.model import state as st
from praxis.flows.model import transitions
from praxis.flows.model.machine import TRANSITIONS, IllegalTransition, allows, apply
from praxis.flows.model.moves import KNOCK_ONS, OfPhase, Transition
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
    Retry,
    Reuse,
    Start,
    Wait,
)


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


def refused(s: st.RunState, t: Transition) -> str:
    """The one-line message ``t`` is refused with; ``s`` is left as it was."""
    before = copy.deepcopy(s)
    with pytest.raises(IllegalTransition) as info:
        apply(s, t, now=9)
    assert s == before
    message = str(info.value)
    assert message.startswith("cannot ") and "\n" not in message
    return message


def ran(s: st.RunState, *phases: str, now: float = 1.0) -> st.RunState:
    """``s`` after each of ``phases`` started and finished at ``now``."""
    for ph in phases:
        s = apply(s, Start(phase=ph), now=now).state
        s = apply(s, Finish(phase=ph, hashes={f"{ph}.csv": ph}), now=now).state
    return s


def test_a_run_goes_through_its_phases_to_done() -> None:
    s0 = fresh()
    s1 = apply(s0, Start(phase="a", pid=42), now=1.0).state
    assert s1 == moved(
        s0, 1.0, {"a": dict(status="running", attempt=1, started=1.0, pid=42)}, status="running"
    )
    s2 = apply(s1, Finish(phase="a", hashes={"x.csv": "h"}), now=2.0).state
    assert s2 == moved(
        s1, 2.0, {"a": dict(status="done", ended=2.0, hashes={"x.csv": "h"}, pid=None)}, cursor=1
    )
    assert s2.phase("a").seconds == 1.0
    s = s2
    for ph in ("b", "c"):
        s = apply(s, Start(phase=ph), now=3.0).state
        s = apply(s, Finish(phase=ph, hashes={}), now=4.0).state
    s = apply(s, End(), now=5.0).state
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
    at_gate = apply(s, Gate(phase="a"), now=3).state
    assert at_gate == moved(s, 3, status="paused", waiting="gate", gate="a")
    approved = apply(at_gate, Approve(), now=4).state
    assert approved == moved(at_gate, 4, waiting=None, gate=None)
    assert approved.cursor == 1
    assert refused(approved, Approve()) == ("cannot approve a run that is not at a Gate")


def test_a_gate_follows_only_a_done_phase() -> None:
    s = apply(fresh(), Start(phase="a"), now=1).state
    assert refused(s, Gate(phase="a")) == ("cannot pause at a Gate after a phase that is running")


def test_illegal_move_raises_and_changes_nothing() -> None:
    assert "cannot finish a phase that is pending" in refused(fresh(), Finish(phase="a", hashes={}))


FAILED_ONCE = {"failure": {"error": "boom"}, "repeats": 1, "retries": 1}


def test_failure_then_rerun_marks_later_done_phases_stale() -> None:
    s = apply(ran(fresh(), "a", "b"), Start(phase="c"), now=3).state
    failed = apply(s, Fail(phase="c", error="boom"), now=4).state
    assert failed == moved(
        s,
        4,
        {"c": dict(status="failed", ended=4, error="boom", pid=None) | FAILED_ONCE},
        status="failed",
        error="c: boom",
    )
    rerun = apply(failed, Rerun(phase="a"), now=5).state
    assert rerun == moved(
        failed,
        5,
        {"a": dict(status="pending"), "b": dict(status="stale"), "c": dict(status="pending")},
        status="paused",
        cursor=0,
        error=None,
    )
    again = apply(rerun, Start(phase="a"), now=6).state
    assert again == moved(
        rerun,
        6,
        {"a": dict(status="running", attempt=2, started=6, ended=None, hashes={})},
        status="running",
    )


def test_rerun_without_reuse_makes_later_done_phases_pending() -> None:
    s = apply(ran(fresh(), "a", "b", "c"), End(), now=2).state
    rerun = apply(s, Rerun(phase="b", reuse=False), now=5).state
    later = dict(status="pending", no_reuse=True)  # no other run's attempt stands for c either
    assert rerun == moved(
        s, 5, {"b": dict(status="pending"), "c": later}, status="paused", cursor=1
    )


def test_rerun_cannot_skip_ahead_of_the_cursor() -> None:
    s = apply(fresh(), Cancel(), now=1).state
    assert refused(s, Rerun(phase="c")) == "cannot rerun a phase that is not reached yet"


def test_reject_reopens_an_earlier_phase_with_its_note() -> None:
    s = apply(ran(fresh(), "a", "b"), Gate(phase="b"), now=3).state
    rejected = apply(s, Reject(phase="a", note="fix the regions"), now=4).state
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
    assert refused(rejected, Reject(phase="a", note="again")) == (
        "cannot reject a run that is not at a Gate"
    )


def test_reject_cannot_reopen_a_phase_after_the_gate() -> None:
    s = apply(ran(fresh(), "a"), Gate(phase="a"), now=3).state
    assert refused(s, Reject(phase="c", note="")) == (
        "cannot reject a phase that is after the Gate"
    )


def test_recover_names_a_lost_approval() -> None:
    s = apply(fresh(), Start(phase="a"), now=1).state
    s = apply(s, Wait(phase="a", what="approval"), now=2).state
    assert s.phase("a").waiting == "approval"
    lost = apply(s, Recover(phase="a"), now=3).state
    assert lost == moved(
        s,
        3,
        {"a": dict(status="failed", ended=3, error=st.APPROVAL_LOST, waiting=None, pid=None)},
        status="failed",
        error=f"a: {st.APPROVAL_LOST}",
    )
    s2 = apply(fresh(), Start(phase="a"), now=1).state
    stopped = apply(s2, Recover(phase="a"), now=2).state
    assert stopped == moved(
        s2,
        2,
        {"a": dict(status="failed", ended=2, error=st.STOPPED)},
        status="failed",
        error=f"a: {st.STOPPED}",
    )


def test_recovering_a_paused_run_is_refused() -> None:
    """No event leaves a phase running in a paused run; a hand-made one is refused."""
    s = apply(fresh(), Start(phase="a"), now=1).state
    s.status = "paused"
    assert refused(s, Recover(phase="a")) == "cannot recover a run that is paused"


def test_cancel_from_paused_and_running() -> None:
    s = fresh()
    assert apply(s, Cancel(), now=1).state == moved(s, 1, status="cancelled")
    running = apply(fresh(), Start(phase="a"), now=1).state
    cancelled = apply(running, Cancel(), now=2).state
    assert cancelled == moved(
        running,
        2,
        {"a": dict(status="failed", ended=2, error=st.STOPPED, pid=None)},
        status="cancelled",
    )
    assert refused(cancelled, Cancel()) == "cannot cancel a run that is cancelled"


def test_waiting_only_in_a_running_phase() -> None:
    s = apply(fresh(), Start(phase="a"), now=1).state
    waiting = apply(s, Wait(phase="a", what="approval"), now=2).state
    assert waiting == moved(s, 2, {"a": dict(waiting="approval")})
    assert refused(s, Wait(phase="b", what="approval")) == (
        "cannot wait in a phase that is pending"
    )


def test_edit_at_the_gate_records_the_new_hash() -> None:
    s = apply(ran(fresh(), "a"), Gate(phase="a"), now=3).state
    edited = apply(s, Edit(output="a.csv", sha256="new"), now=4).state
    assert edited == moved(s, 4, {"a": dict(hashes={"a.csv": "new"}, edited={"a.csv": "a"})})
    again = apply(edited, Edit(output="a.csv", sha256="newer"), now=5).state
    assert again.phase("a").edited == {"a.csv": "a"}  # what the phase wrote, still
    back = apply(again, Edit(output="a.csv", sha256="a"), now=6).state
    assert back.phase("a").edited == {}  # edited back to the phase's version
    approved = apply(s, Approve(), now=4).state
    assert refused(approved, Edit(output="a.csv", sha256="x")) == (
        "cannot edit a run that is not at a Gate"
    )


def test_accept_takes_only_a_recorded_output() -> None:
    s = ran(fresh(), "a")
    accepted = apply(s, Accept(phase="a", output="a.csv", sha256="new"), now=2).state
    assert accepted == moved(s, 2, {"a": dict(hashes={"a.csv": "new"})})
    assert refused(s, Accept(phase="a", output="z.csv", sha256="x")) == (
        "cannot accept an output that is not recorded for a"
    )


def test_params_change_between_advances_only() -> None:
    s = fresh()
    assert apply(s, Params(params={"week": "W1"}), now=1).state == moved(
        s, 1, params={"week": "W1"}
    )
    running = apply(s, Start(phase="a"), now=1).state
    assert refused(running, Params(params={})) == (
        "cannot change the parameters of a run that is running"
    )


def test_manage_in_any_status() -> None:
    s = apply(fresh(), Cancel(), now=1).state
    assert apply(s, Manage(managed=True), now=2).state == moved(s, 2, managed=True)


@dataclass(frozen=True, kw_only=True)
class Explode(Transition):
    """A transition the table does not hold."""

    name: ClassVar[str] = "explode"


def test_an_unknown_transition_is_refused() -> None:
    assert refused(fresh(), Explode()) == "cannot explode a run that is paused"


def one_in_each_status() -> dict[str, st.RunState]:
    running = apply(fresh(), Start(phase="a"), now=1).state
    return {
        "paused": fresh(),
        "running": running,
        "failed": apply(running, Fail(phase="a", error="boom"), now=2).state,
        "done": apply(ran(fresh(), "a", "b", "c"), End(), now=2).state,
        "cancelled": apply(fresh(), Cancel(), now=1).state,
    }


# One of each transition, naming phase "a".
EXAMPLES: tuple[Transition, ...] = (
    Start(phase="a"),
    Reuse(phase="a"),
    Finish(phase="a", hashes={}),
    Fail(phase="a", error="boom"),
    Recover(phase="a"),
    Retry(phase="a", number=1, of=3, cause="kernel_died", backoff=10.0),
    Wait(phase="a"),
    Gate(phase="a"),
    End(),
    Approve(),
    Reject(phase="a"),
    Rerun(phase="a"),
    Cancel(),
    Edit(output="a.csv", sha256="x"),
    Accept(phase="a", output="a.csv", sha256="x"),
    Params(params={}),
    Manage(),
    Pause(),
)


@pytest.mark.parametrize("status", st.RUN_STATUSES)
def test_every_transition_the_run_column_does_not_list_is_refused(status: str) -> None:
    s = one_in_each_status()[status]
    assert s.status == status
    illegal = [t for t in EXAMPLES if s.status not in TRANSITIONS[type(t)].run]
    assert illegal
    for t in illegal:
        refused(s, t)


def test_the_table_holds_every_transition_once_and_only_known_statuses() -> None:
    """A transition class without its row in the table (or a row naming a status nobody
    has) fails here, not on a run."""
    classes = {
        cls
        for cls in vars(transitions).values()
        if isinstance(cls, type)
        and issubclass(cls, Transition)
        and cls not in (Transition, OfPhase)
    }
    assert set(TRANSITIONS) == classes == {type(t) for t in EXAMPLES}
    names = [cls.name for cls in TRANSITIONS]
    assert len(set(names)) == len(names)
    for cls, rule in TRANSITIONS.items():
        assert rule.run and set(rule.run) | set(rule.run.values()) <= set(st.RUN_STATUSES), cls
        if rule.phase is not None:
            assert issubclass(cls, OfPhase), cls
            assert set(rule.phase) | set(rule.phase.values()) <= set(st.PHASE_STATUSES), cls
    for moves in KNOCK_ONS.values():
        assert set(moves) | set(moves.values()) <= set(st.PHASE_STATUSES)


def test_a_failure_repeated_from_the_same_digests_counts_and_a_change_resets_it() -> None:
    digests = {"pre": "p", "definition": "d", "code": "c"}

    def attempt(s: st.RunState, error: str, **kw: object) -> st.RunState:
        s = apply(s, Start(phase="a"), now=1).state
        return apply(s, Fail(phase="a", error=error, **kw), now=2).state

    def again(s: st.RunState) -> st.RunState:
        return apply(s, Rerun(phase="a"), now=3).state

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
    s = apply(again(attempt(again(s), "boom", digests=digests)), Start(phase="a"), now=4).state
    done = apply(s, Finish(phase="a", hashes={}, digests=digests), now=5).state
    assert (done.phase("a").repeats, done.phase("a").failure) == (0, {})


def test_a_run_left_running_between_phases_pauses_and_never_while_a_phase_runs() -> None:
    s = ran(fresh(), "a")
    assert s.status == "running"
    paused = apply(s, Pause(), now=3).state
    assert paused == moved(s, 3, status="paused")
    running = apply(paused, Start(phase="b"), now=4).state
    assert refused(running, Pause()) == "cannot pause a run that is running a phase"
    assert not allows(running, Pause()) and allows(s, Pause())


def test_a_rerun_keeps_or_discards_the_edits_it_would_replace() -> None:
    s = apply(ran(fresh(), "a"), Gate(phase="a"), now=3).state
    edited = apply(s, Edit(output="a.csv", sha256="fixed"), now=4).state
    kept = apply(edited, Reject(phase="a", note="n", edits="keep"), now=5).state
    assert kept.phase("a").carry == {"a.csv": ["a", "fixed"]}
    assert kept.phase("a").edited == {"a.csv": "a"}  # until the phase runs again
    dropped = apply(kept, Rerun(phase="a", edits="discard"), now=6).state
    assert dropped.phase("a").carry == {}
    started = apply(kept, Start(phase="a"), now=7).state
    assert started.phase("a").edited == {} and started.phase("a").carry == {"a.csv": ["a", "fixed"]}
    finished = apply(started, Finish(phase="a", hashes={"a.csv": "b"}), now=8).state
    at_gate = apply(finished, Gate(phase="a"), now=9).state
    assert at_gate.phase("a").carry == {}  # re-applied on the way to the Gate


# What reads or writes a file: a call of ``open``, of a path's reading or writing method, of
# any function of ``os`` (``os.environ`` is no call), or an import of a module of files.
FILE_IO = {"open", "read_bytes", "read_text", "write_bytes", "write_text", "touch", "unlink"}
FILE_MODULES = {"shutil", "tempfile", "io", "mmap", "fcntl"}


def _file_io(node: ast.AST) -> str | None:
    """What ``node`` does with files, if anything."""
    if isinstance(node, ast.Call):
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        of_os = isinstance(f, ast.Attribute) and getattr(f.value, "id", "") == "os"
        return f"{name}()" if name in FILE_IO or of_os else None
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        names = [str(node.module)]
    else:
        return None
    return next((f"import {n}" for n in names if n in FILE_MODULES), None)


def test_the_model_floor_reads_and_writes_no_file() -> None:
    """run.json is store/state_file.py's, events.jsonl store/event_log.py's: the model (the
    state, its machine, the catalogue of events) is data and rules only."""
    model = Path(transitions.__file__).parent
    found = [
        f"{path.name}:{getattr(node, 'lineno', 0)} {what}"
        for path in sorted(model.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if (what := _file_io(node)) is not None
    ]
    assert found == []
