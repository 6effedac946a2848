"""Route selection from facts alone: every run state, every kind of Gate, with and without
managed mode. No run folder, no kernel."""

from __future__ import annotations

import dataclasses

import pytest

from praxis.flows.route import REASONS, Facts, route

BASE = Facts(flow="flows/f", run="r1", status="paused", revision=7, cursor_phase="b")
GATE = dataclasses.replace(BASE, gate="a", read=(("runs/r1/output/a.csv", "ab" * 32),))
APPROVE = ["praxis", "approve", "flows/f", "--run", "r1", "--gate", "a", "--expect-revision", "7"]
REJECT = [
    *("praxis", "reject", "flows/f", "--run", "r1", "--gate", "a"),
    *("--reopen", "a", "--note", "...", "--expect-revision", "7"),
]
ADVANCE = ["praxis", "advance", "flows/f", "--run", "r1"]
FOLLOW = ["praxis", "log", "flows/f", "--run", "r1", "--follow"]


def rerun(phase: str) -> list[str]:
    return ["praxis", "rerun", "flows/f", "--run", "r1", "--from", phase, "--expect-revision", "7"]


CASES = [
    # (name, facts, step, reason, who, first command)
    ("paused", BASE, "advance", "ready", "anyone", ADVANCE),
    ("running, held", dataclasses.replace(BASE, status="running", left_running=True, held=True),
     "wait", "running", "anyone", FOLLOW),
    ("running, nobody holds it", dataclasses.replace(BASE, status="running", left_running=True),
     "advance", "stopped", "anyone", ADVANCE),
    ("failed", dataclasses.replace(BASE, status="failed"), "rerun", "failed", "anyone", rerun("b")),
    ("cancelled", dataclasses.replace(BASE, status="cancelled"),
     "rerun", "cancelled", "anyone", rerun("b")),
    ("done", dataclasses.replace(BASE, status="done", cursor_phase=None),
     "none", "done", "anyone", None),
    ("definition changed", dataclasses.replace(BASE, status="done", changed_phases=("b", "c")),
     "rerun", "definition_changed", "anyone", rerun("b")),
    ("output changed outside", dataclasses.replace(BASE, changed_outputs=(("a.csv", "a"),)),
     "accept", "output_changed", "person", rerun("a")),
    ("gate, not delegatable", GATE, "decide", "gate_needs_person", "person", APPROVE),
    ("gate, not delegatable, managed", dataclasses.replace(GATE, managed=True),
     "decide", "gate_needs_person", "person", APPROVE),
    ("gate, delegatable, not managed", dataclasses.replace(GATE, delegatable=True),
     "decide", "gate_not_managed", "person", APPROVE),
    ("gate, delegatable, managed", dataclasses.replace(GATE, delegatable=True, managed=True),
     "decide", "gate_delegated", "agent", APPROVE),
    ("gate, delegatable, managed, checks fail",
     dataclasses.replace(GATE, delegatable=True, managed=True, checks_failing=("bad",)),
     "fix", "gate_checks_fail", "person", REJECT),
    ("gate, not delegatable, checks fail", dataclasses.replace(GATE, checks_failing=("bad",)),
     "fix", "gate_checks_fail", "person", REJECT),
    ("gate, held by a process", dataclasses.replace(GATE, held=True),
     "decide", "gate_needs_person", "person", APPROVE),
]  # fmt: skip


@pytest.mark.parametrize(
    "facts, step, reason, who, first", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_route_from_facts(facts: Facts, step: str, reason: str, who: str, first) -> None:
    r = route(facts)
    assert (r.step, r.reason, r.who) == (step, reason, who)
    assert r.why == REASONS[reason]
    assert (r.commands[0] if r.commands else None) == first
    assert route(facts) == r  # the same facts, the same route


def test_every_reason_is_reachable() -> None:
    assert {route(c[1]).reason for c in CASES} == set(REASONS)


def test_a_gate_route_names_the_gate_and_the_files_to_read() -> None:
    r = route(dataclasses.replace(GATE, delegatable=True, managed=True))
    assert r.gate == {"phase": "a", "delegatable": True, "managed": True}
    assert r.read == [{"path": "runs/r1/output/a.csv", "sha256": "ab" * 32}]
    assert r.commands == [APPROVE, REJECT]
    failing = route(dataclasses.replace(GATE, checks_failing=("a.csv: check values failed",)))
    assert failing.problems == ["a.csv: check values failed"]
    assert APPROVE not in failing.commands  # approving is refused while a check fails


def test_an_output_changed_outside_offers_rerun_and_accept() -> None:
    r = route(dataclasses.replace(BASE, changed_outputs=(("a.csv", "a"),)))
    accept = ["praxis", "accept", "flows/f", "--run", "r1", "--output", "a.csv"]
    assert r.commands == [rerun("a"), [*accept, "--expect-revision", "7"]]
