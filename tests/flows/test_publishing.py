"""Who may publish: the run's last Gate's last decision must be a person's approval (an
agent's in managed mode is not one); and which entries a done run has yet to publish."""

from __future__ import annotations

from pathlib import Path

from praxis.flows.model import publishing
from praxis.flows.model.events import GateApproved, GateRejected, GateWaiting, Published
from praxis.flows.model.flow import Flow, Phase, Publish
from praxis.flows.model.state import new_run

ENTRY = Publish("s.csv", "w", "t", "upsert", ("region",))
FLOW = Flow(
    "f",
    Path("/f"),
    (
        Phase("a", "script", outputs=("a.csv",), review="required"),
        Phase("b", "script", outputs=("s.csv",), review="required"),
        Phase("c", "script", outputs=("c.csv",)),
    ),
    publish=(ENTRY,),
)


def test_only_a_persons_approval_of_the_last_gate_allows_publishing() -> None:
    waiting = GateWaiting(phase="b", writable=["s.csv"])
    by_person = GateApproved(phase="b", revision=3, actor="person")
    by_agent = GateApproved(phase="b", revision=3, actor="agent")
    first_gate = GateApproved(phase="a", revision=1, actor="person")
    assert publishing.approval(FLOW, [first_gate, waiting, by_person]) is None
    assert "approved by an agent" in str(publishing.approval(FLOW, [waiting, by_agent]))
    assert "not been approved" in str(publishing.approval(FLOW, [first_gate]))  # only a's
    reopened = GateRejected(phase="b", reopen="b", note="n", revision=4)
    assert "not been approved" in str(
        publishing.approval(FLOW, [waiting, by_person, reopened, waiting])
    )
    ungated = Flow("g", Path("/g"), (Phase("b", "script", outputs=("s.csv",)),), publish=(ENTRY,))
    assert "needs a Gate" in str(publishing.approval(ungated, []))


def test_an_entry_is_pending_until_published_at_the_digest_the_run_holds() -> None:
    state = new_run("r", "f", ["a", "b", "c"], now=0)
    state.phase("b").hashes = {"s.csv": "1" * 64}
    assert publishing.pending(FLOW, state, []) == []  # not done: nothing is due
    state.status = "done"
    assert publishing.pending(FLOW, state, []) == [ENTRY]
    old = Published(output="s.csv", sha256="0" * 64, connection="w", table="t", mode="upsert",
                    rows=2)  # fmt: skip
    assert publishing.pending(FLOW, state, [old]) == [ENTRY]  # another digest
    now = Published(output="s.csv", sha256="1" * 64, connection="w", table="t", mode="upsert",
                    rows=2)  # fmt: skip
    assert publishing.pending(FLOW, state, [old, now]) == []
