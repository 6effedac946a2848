"""The route never proposes a command praxis would refuse: every state a run of a three-phase
flow can reach (by the runner's own moves through the state tables), crossed with what the
files may say (a held lock, failing checks, changed definitions, parameters and outputs, a
changed flow.yaml, an agent's receipts of the files to read), gives a route whose every
command the same tables and decision rules accept: a Gate's attempt (a reopen runs the gated
phase again), the receipts an agent passes, no approval of what a changed definition made.
Pure: states from ``state.apply``, facts from ``facts.state_facts``."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from praxis.flows.engine import carry
from praxis.flows.model import decisions
from praxis.flows.model import state as st
from praxis.flows.model.flow import Flow, Phase
from praxis.flows.model.machine import allows, apply
from praxis.flows.model.moves import Transition
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
    Pause,
    Recover,
    Reject,
    Rerun,
    Reuse,
    Start,
)
from praxis.flows.report.facts import state_facts
from praxis.flows.report.route import Facts, route
from praxis.phases.kinds import ScriptSpec

IDS = ("a", "b", "c")
SHA = "ab" * 32


def flow(delegatable: bool, keyed: bool = True) -> Flow:
    phases = tuple(
        Phase(
            id=p,
            kind="script",
            spec=ScriptSpec(f"{p}.py"),
            outputs=(f"{p}.csv",),
            review="required" if p == "b" else "none",
            delegatable=delegatable and p == "b",
            checks={"b.csv": {"key": ["id"]}} if keyed and p == "b" else {},
        )
        for p in IDS
    )
    return Flow(name="f", root=Path("/nowhere"), phases=phases)


def moves(s: st.RunState) -> Iterator[Transition]:
    """What the runner and the commands may do next (the runner starts the cursor's phase of
    a run not at a Gate, pauses at a Gate only after the gated phase b, ends a run with no
    phase left)."""
    nxt = s.next_phase
    digests = {"pre": "p", "definition": "d", "code": "c"}
    if nxt is not None and s.waiting is None:
        yield Start(phase=nxt.id)
        yield Reuse(phase=nxt.id)
    for p in s.phases:
        if p.status == "running":
            yield Finish(phase=p.id, hashes={f"{p.id}.csv": "h"}, digests=digests)
            yield Fail(phase=p.id, error="boom", digests=digests)
            yield Fail(phase=p.id, error="other")
            yield Recover(phase=p.id)
    if s.phases[1].status == "done" and s.cursor == 2:
        yield Gate(phase="b")
    if nxt is None:
        yield End()
    yield Approve()
    yield Edit(output="b.csv", sha256="edited")  # a reviewer's edit at the Gate
    for p in IDS:
        for edits in (None, "keep"):  # discard: as None, for the route
            yield Reject(phase=p, note="n", edits=edits)
            yield Rerun(phase=p, edits=edits)
    yield Cancel()
    yield Pause()
    yield Manage(managed=not s.managed)


def key(s: st.RunState) -> tuple[Any, ...]:
    phases = tuple(
        (p.status, min(p.repeats, 2), bool(p.hashes), bool(p.edited), min(p.attempt, 2))
        for p in s.phases
    )
    return (s.status, s.cursor, s.waiting, s.gate, s.managed, phases)


def reachable(limit: int = 5000) -> list[st.RunState]:
    first = st.new_run("r", "f", list(IDS), now=0.0, definition={"phases": list(IDS)})
    seen = {key(first): first}
    todo = [first]
    while todo and len(seen) < limit:
        s = todo.pop()
        for t in moves(s):
            if not allows(s, t):
                continue
            new = apply(s, t, now=1.0).state
            if key(new) not in seen:
                seen[key(new)] = new
                todo.append(new)
    return list(seen.values())


STATES = reachable()


def variations(s: st.RunState, delegatable: bool, keyed: bool = True) -> Iterator[Facts]:
    """The state's facts, crossed with what the run's files and processes may add."""
    base = state_facts(s, flow(delegatable, keyed), flow_arg="f", program=("praxis",))
    done = [p.id for p in s.phases if p.status == "done"]
    before = [p.id for p in s.phases[: s.cursor] if p.status == "done" and p.hashes]
    gate = base.gate is not None
    read = (("runs/r/output/b.csv", SHA),) if gate else ()
    for held, failing, changed, params, outside, moved, missing, receipts in itertools.product(
        (False, True),
        ((), ("b.csv: check values failed",)) if gate else ((),),
        ((), tuple(done[:1])) if done else ((),),
        ((), tuple(done[-1:])) if done else ((),),
        ((), ((f"{before[0]}.csv", before[0]),)) if before else ((),),
        (False, True),
        (False, True) if before else (False,),
        ((), (("runs/r/output/b.csv", "r1"),)) if gate else ((),),
    ):
        yield dataclasses.replace(
            base,
            held=held,
            checks_failing=failing,
            read=read,
            receipts=receipts,
            changed_phases=changed,
            params_changed=params,
            changed_outputs=outside,
            missing_outputs=tuple(n for n, _ in outside) if missing else (),
            flow_changed=moved,
        )


def options(argv: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for i, word in enumerate(argv):
        if word.startswith("--") and i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            found.setdefault(word, []).append(argv[i + 1])
        elif word.startswith("--"):
            found.setdefault(word, [])
    return found


def edits_refusal(
    s: st.RunState, keyed: bool, phase: str, opts: dict[str, list[str]]
) -> str | None:
    """Why a re-run or reopen of ``phase`` is refused for the Gate edits it would replace."""
    risk = carry.at_risk(s, phase)
    if not risk:
        return None
    if "--keep-edits" not in opts and "--discard-edits" not in opts:
        return "edits at risk: no choice"
    if "--keep-edits" in opts and carry.keyless(flow(False, keyed), risk):
        return "--keep-edits without a row key"
    return None


def refusal(
    s: st.RunState, f: Facts, delegatable: bool, who: str, argv: list[str], keyed: bool = True
) -> str | None:
    """Why praxis would refuse ``argv`` in state ``s`` (exit 4), or not make progress with
    it; None when it takes it. The runner's own rules: the state tables (``allows``), who may
    decide (``decisions.refusal``), the revision, acknowledgements, flow.yaml's phases."""
    verb, opts = argv[1], options(argv)
    if verb in ("status", "log", "run"):
        return None
    if verb == "read":  # a file of the route's read, at a Gate (praxis read records a receipt)
        ok = s.waiting == "gate" and argv[3] in [p for p, _ in f.read]
        return None if ok else "read of a file the route does not name"
    if opts.get("--expect-revision", [str(s.revision)]) != [str(s.revision)]:
        return "stale revision"
    if f.flow_changed and verb != "cancel":
        return "flow.yaml changed: advance and rerun refuse"
    actor = opts.get("--as", ["person"])[0]
    if verb == "advance":  # a held lock is Busy (exit 3: try again), not a refusal
        if f.left_running or s.status == "running":
            return None  # recovers, then runs
        if s.status != "paused" or s.waiting is not None:
            return "advance does nothing here: no progress"
        return "a changed input blocks the next phase" if f.changed_outputs else None
    if verb == "rerun":
        ok = allows(s, Rerun(phase=opts["--from"][0])) and not f.left_running
        return edits_refusal(s, keyed, opts["--from"][0], opts) if ok else "rerun not allowed"
    if verb == "cancel":
        return None if allows(s, Cancel()) else "cancel not allowed"
    if verb == "accept":
        producer = dict(f.changed_outputs)[opts["--output"][0]]
        ok = allows(s, Accept(phase=producer, output=opts["--output"][0], sha256="x"))
        return None if ok and opts["--output"][0] not in f.missing_outputs else "accept refused"
    if verb in ("approve", "reject"):
        decision = Approve() if verb == "approve" else Reject(phase=opts.get("--reopen", [""])[0])
        if not allows(s, decision) or opts["--gate"] != [s.gate]:
            return f"{verb} not allowed"
        attempt = s.phase(str(s.gate)).attempt
        if opts.get("--attempt", [str(attempt)]) != [str(attempt)]:
            return "a decision for another attempt of the Gate"
        if "--attempt" not in opts and "--expect-revision" not in opts and attempt > 1:
            return "--gate alone after the Gate's phase ran again: ambiguous"
        upto = IDS[: IDS.index(str(s.gate)) + 1]
        if verb == "approve" and any(p in upto for p in f.changed_phases):
            return "approving what an old definition made"
        gate = flow(delegatable).phase(str(s.gate))
        why = decisions.refusal(
            actor, verb, gate, managed=s.managed, failing=len(f.checks_failing), run="r", flow="f"
        )
        if why:
            return why
        have = dict(f.receipts)
        if actor == "agent" and opts.get("--receipt", []) != [have.get(p) for p, _ in f.read]:
            return "no receipt of a file to read"
        return edits_refusal(s, keyed, opts["--reopen"][0], opts) if verb == "reject" else None
    return f"unknown verb {verb}"


def test_the_states_cover_every_run_status_and_a_repeated_failure() -> None:
    assert {s.status for s in STATES} == set(st.RUN_STATUSES)
    assert any(p.repeats >= 2 for s in STATES for p in s.phases)
    assert any(s.waiting == "gate" and s.managed for s in STATES)
    assert any(s.waiting == "gate" and s.phase("b").attempt > 1 for s in STATES)  # reopened
    assert len(STATES) > 100


@pytest.mark.parametrize("delegatable, keyed", [(False, True), (True, True), (True, False)])
def test_no_route_proposes_a_command_praxis_refuses(delegatable: bool, keyed: bool) -> None:
    checked = kept = 0
    reasons: set[str] = set()
    steps: set[str] = set()
    for s in STATES:
        for f in variations(s, delegatable, keyed):
            r = route(f)
            reasons.add(r.reason)
            steps.add(r.step)
            assert r == route(f)  # the same facts, the same route
            for argv in r.commands:
                who = r.who
                why = refusal(s, f, delegatable, who, argv, keyed)
                kept += "--keep-edits" in argv
                assert why is None, (why, argv, r.reason, key(s), f)
                if who != "agent":
                    assert "--as" not in argv
                checked += 1
            if r.who == "agent":
                assert all(
                    "--as" in argv for argv in r.commands if argv[1] in ("approve", "reject")
                )
            if r.who != "person" and r.step != "none":
                assert r.commands, (r, key(s))  # an agent always has something to run
    assert checked > 1000
    assert bool(kept) == keyed  # an edited output's re-run keeps the edit, when it can
    assert "failed_repeatedly" in reasons and "params_changed" in reasons
    assert "gate_changed" in reasons
    assert ("read" in steps) == delegatable  # an agent reads before it decides
