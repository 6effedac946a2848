"""The caller's route (DESIGN.md §14), from facts alone: each step says who may take it, a
step the caller would be refused is never proposed, and a caller who may not decide a Gate
is told who must. (With real accounts, grants and a clock: tests/test_route_authority.py.)"""

from __future__ import annotations

import dataclasses

from praxis.flows.report.route import Facts, route

from .test_route import APPROVE, BASE, GATE, MANAGED, READ_A, REJECT, STATUS

AT_GATE = ("approve", "reject", "edit", "rerun", "cancel")
PERSON_ONLY = ("manage", "accept", "delete")
FINANCE = dataclasses.replace(GATE, approvers=("finance",))


def verbs(facts: Facts) -> set[str]:
    return {argv[1] for argv in route(facts).commands}


def test_an_agent_without_a_live_grant_waits_and_is_told_who_must_act() -> None:
    # managed, but the grant expired: the route no longer offers the agent the Gate
    expired = dataclasses.replace(MANAGED, caller="agent:bot", refused=AT_GATE + PERSON_ONLY)
    r = route(expired)
    assert (r.step, r.reason, r.who, r.who_may) == ("wait", "waiting_for_person", "person",
                                                   "person")  # fmt: skip
    assert r.commands == [STATUS] and r.why.startswith("a person decides the Gate after a;")
    assert "agent:bot may not decide the Gate after a: a person decides it" in r.problems
    grant = "praxis manage flows/f --run r1 --agent bot --for 2h"
    assert f"or a person grants agent:bot the decision: {grant}" in r.problems
    assert r.to_dict()["caller"] == "agent:bot" and r.read == [{"path": "runs/r1/output/a.csv"}]


def test_an_agent_under_a_flow_wide_grant_reads_then_decides_an_unmanaged_gate() -> None:
    granted = dataclasses.replace(
        GATE, delegatable=True, caller="agent:bot", refused=PERSON_ONLY,
        grant_until="2026-12-05 11:00",
    )  # fmt: skip
    first = route(granted)
    assert (first.step, first.reason, first.commands) == ("read", "gate_delegated", [READ_A])
    assert first.who_may == "agent:bot under a grant until 2026-12-05 11:00"
    read = route(dataclasses.replace(granted, receipts=(("runs/r1/output/a.csv", "r0a1"),)))
    agent = ["--as", "agent", "--receipt", "r0a1"]
    assert (read.step, read.commands) == ("decide", [[*APPROVE, *agent], [*REJECT, *agent]])


def test_bob_without_the_role_waits_for_finance_alice_decides() -> None:
    bob = route(dataclasses.replace(FINANCE, caller="person:bob", refused=AT_GATE))
    assert (bob.reason, bob.who_may, bob.commands) == (
        "waiting_for_person", "person with role finance", [STATUS]
    )  # fmt: skip
    assert "person:bob may not decide the Gate after a: a person with role finance decides it" in (
        bob.problems
    )
    assert not any(p.startswith("or a person grants") for p in bob.problems)  # a person: no grant
    alice = route(dataclasses.replace(FINANCE, caller="person:alice"))
    assert (alice.step, alice.reason, alice.commands) == (
        "decide", "gate_needs_person", [APPROVE, REJECT]
    )  # fmt: skip
    assert alice.who_may == "person with role finance"


def test_an_agent_at_a_gate_it_may_not_decide_keeps_the_reason_it_had_without_the_decision() -> (
    None
):
    """An agent without a grant at a run nobody managed, or at a person's Gate: the reasons as
    before (older consumers stop at a person's step), no decision, and who must act."""
    unmanaged = dataclasses.replace(GATE, delegatable=True, caller="agent:bot", refused=AT_GATE)
    r = route(unmanaged)
    assert (r.step, r.reason, r.who, r.commands) == ("decide", "gate_not_managed", "person", [])
    assert r.problems[-1].startswith("or a person grants agent:bot the decision: ")
    persons = route(dataclasses.replace(unmanaged, delegatable=False))
    assert (persons.reason, persons.commands, persons.who_may) == (
        "gate_needs_person",
        [],
        "person",
    )
    assert persons.problems == ["agent:bot may not decide the Gate after a: a person decides it"]


def test_no_step_the_caller_would_be_refused_is_proposed() -> None:
    """A caller who may not decide the Gate is offered no re-run, reject or cancel there (each
    decides about it); an agent is offered no accept (a person's)."""
    changed = dataclasses.replace(FINANCE, changed_phases=("a",), phases=("a", "b"))
    assert "rerun" in verbs(changed)  # nobody's route: as before
    bob = dataclasses.replace(changed, caller="person:bob", refused=AT_GATE)
    assert verbs(bob) == {"status"} and "a changed since it ran" in route(bob).problems
    failing = dataclasses.replace(FINANCE, checks_failing=("bad",), caller="person:bob",
                                  refused=AT_GATE)  # fmt: skip
    assert verbs(failing) == {"status"} and "bad" in route(failing).problems
    outside = dataclasses.replace(BASE, changed_outputs=(("a.csv", "a"),))
    agent = dataclasses.replace(outside, caller="agent:bot", refused=PERSON_ONLY)
    assert verbs(outside) == {"rerun", "accept"} and verbs(agent) == {"rerun"}
    assert route(agent).who_may == "person"
    moved = dataclasses.replace(FINANCE, flow_changed=True, caller="person:bob", refused=AT_GATE)
    assert verbs(moved) == {"run"}  # a new run; the Gate's cancel is a decision about it
    paused = route(dataclasses.replace(BASE, caller="agent:bot", refused=PERSON_ONLY))
    assert (paused.reason, paused.who_may) == ("ready", "anyone")


def test_facts_without_a_caller_give_the_route_and_the_keys_as_before() -> None:
    plain = route(MANAGED)
    assert "who_may" not in plain.to_dict() and "caller" not in plain.to_dict()
    assert "caller" not in MANAGED.to_dict() and "refused" not in MANAGED.to_dict()
    mine = dataclasses.replace(MANAGED, caller="agent:bot", refused=PERSON_ONLY)
    assert Facts.from_dict(mine.to_dict()) == mine  # recorded in traces, replayed
    assert route(Facts.from_dict(mine.to_dict())).to_dict() == route(mine).to_dict()
