"""The receipt: ok only when every phase is done and nothing changed outside praxis; a ledger
per phase with its outputs, Gate decisions (by whom) and reviewer edits."""

from __future__ import annotations

from praxis.flows.model import state as st
from praxis.flows.model.events import ArtifactEdited, GateApproved, GateRejected, PhaseStarted
from praxis.flows.model.machine import apply
from praxis.flows.model.transitions import End, Finish, Start
from praxis.flows.report.receipt import receipt


def finished() -> st.RunState:
    state = st.new_run("r1", "f", ["pick", "total"], now=1.0)
    for phase, sha in (("pick", "a" * 64), ("total", "b" * 64)):
        state = apply(state, Start(phase=phase, pid=1), now=2.0).state
        state = apply(state, Finish(phase=phase, hashes={f"{phase}.csv": sha}), now=3.5).state
    return apply(state, End(), now=4.0).state


EVENTS = [
    PhaseStarted(phase="pick", attempt=1, at=2.0),
    GateRejected(phase="pick", reopen="pick", note="cents", revision=4, actor="person", at=5.0),
    ArtifactEdited(name="pick.csv", sha256="c" * 64, by="hand", old="a" * 64, phase="pick",
                   attempt=2, revision=7, diff="1 row(s) changed, 0 added, 0 removed", at=6.0),
    GateApproved(phase="pick", revision=8, actor="agent", at=7.0),
    GateApproved(phase="gone", revision=9, at=8.0),  # a phase the run does not have
]  # fmt: skip


def test_a_done_run_with_nothing_changed_is_ok_and_keeps_its_ledger() -> None:
    got = receipt(finished(), EVENTS, [])
    assert {k: got[k] for k in ("ok", "status", "done", "total", "changed_outside")} == {
        "ok": True,
        "status": "done",
        "done": 2,
        "total": 2,
        "changed_outside": [],
    }
    pick, total = got["ledger"]
    assert (pick["phase"], pick["attempts"], pick["reused"], pick["seconds"]) == (
        "pick",
        1,
        False,
        1.5,
    )
    assert pick["outputs"] == [{"name": "pick.csv", "sha256": "a" * 64}]
    assert pick["decisions"] == [
        {"decision": "rejected", "actor": "person", "revision": 4, "at": 5.0,
         "reopen": "pick", "note": "cents"},
        {"decision": "approved", "actor": "agent", "revision": 8, "at": 7.0},
    ]  # fmt: skip
    assert pick["edits"] == [
        {"name": "pick.csv", "by": "hand", "attempt": 2, "old": "a" * 64, "new": "c" * 64,
         "revision": 7, "diff": "1 row(s) changed, 0 added, 0 removed",
         "discarded": False, "superseded": False, "carried_to": None},
    ]  # fmt: skip
    assert total["decisions"] == [] and total["edits"] == []


def test_an_output_changed_outside_or_a_run_not_done_is_not_ok() -> None:
    changed = receipt(finished(), [], ["pick.csv"])
    assert not changed["ok"] and changed["changed_outside"] == ["pick.csv"]
    begun = st.new_run("r1", "f", ["pick", "total"], now=1.0)
    waiting = receipt(begun, [], [])
    assert (waiting["ok"], waiting["done"], waiting["ledger"][0]["seconds"]) == (False, 0, None)
