"""What a Gate decision is bound to: the Gate, its attempt and the revision seen.

A decision (approve, reject) names what its decider saw: ``--gate PHASE`` (the phase the Gate
follows), ``--attempt N`` (that phase's attempt at the Gate) and ``--expect-revision N``. One
made for another Gate or another attempt is refused, naming both, and changes nothing, so an
approval meant for attempt 1 never lands on attempt 2 after a reopen. ``--gate`` alone is
enough until the Gate is reopened (a reject at it, ``gate_rejected``): from then on it is
ambiguous and refused, asking for the attempt or the revision. (A re-run of a finished run
reaches the Gate again without a reopen: ``approve FLOW --gate P`` decides it, as the README's
first flow does.) Bound to nothing at all is ``Unbound``.
Definitions changed since the gated phase (or one before it) ran are refused too: their
output is not what flow.yaml now makes (re-run first).
"""

from __future__ import annotations

from ...argv import flow_text
from ...command_line import NOTE, typed
from ...errors import EXIT, Refused
from ..definition import digests as definition
from ..model.forms import params_for
from ..store.handle import RunHandle


class Unbound(Refused):
    """Raised for an approve or reject bound to neither a revision nor a Gate; ``command``
    is the bound one for the run's current state."""

    exit_code = EXIT["usage"]

    def __init__(self, message: str, command: str) -> None:
        super().__init__(message)
        self.command = command

    def next(self, flow: str) -> str:
        return self.command


def bound_command(run: RunHandle, decision: str) -> str:
    """The ``decision`` (approve | reject) bound to the run's Gate, attempt and revision."""
    state = run.state
    gate = str(state.gate)
    reopen = {"reopen": gate, "note": NOTE} if decision == "reject" else {}
    return typed(
        decision, flow_text(run.flow), run=run.id, gate=gate,
        attempt=state.phase(gate).attempt, **reopen, expect_revision=state.revision,
    )  # fmt: skip


def unbound(run: RunHandle, decision: str) -> None:
    """Unbound: ``decision`` named neither the revision, the Gate nor its attempt."""
    state = run.state
    if state.waiting != "gate" or state.gate is None:
        raise Unbound(
            f"{decision} needs --expect-revision N or --gate PHASE; run {run.id} is "
            f"{state.status} and not waiting at a Gate",
            typed("status", flow_text(run.flow), run=run.id),
        )
    raise Unbound(
        f"{decision} needs --expect-revision N or --gate PHASE, so that a repeated command "
        f"never decides the next Gate; run {run.id} waits at the Gate after {state.gate}",
        bound_command(run, decision),
    )


def at_gate(
    run: RunHandle,
    decision: str,
    *,
    gate: str | None,
    attempt: int | None,
    expect_revision: int | None,
) -> str:
    """The phase the run's Gate follows, when the decision is bound to this Gate and this
    attempt of it; Refused (nothing changed) when the run is not at a Gate, is at another,
    at another attempt, or when ``gate`` alone cannot tell which attempt was seen."""
    state = run.state
    at = state.gate
    if state.waiting != "gate" or at is None:
        raise Refused(
            f"run {run.id} is {state.status} and not waiting at a Gate", revision=state.revision
        )
    verb = f"{decision}d" if decision.endswith("e") else f"{decision}ed"
    if gate is not None and gate != at:
        raise Refused(
            f"run {run.id} waits at the Gate after {at}, not {gate}: nothing was {verb}",
            revision=state.revision,
        )
    now = state.phase(at).attempt
    if attempt is not None and attempt != now:
        raise Refused(
            f"run {run.id}: this {decision} is for attempt {attempt} of the Gate after {at}, "
            f"which is now at attempt {now}: nothing was {verb}; review attempt {now}, then "
            f"{bound_command(run, decision)}",
            revision=state.revision,
        )
    if attempt is None and expect_revision is None and now > 1 and reopened(run, at):
        raise Refused(
            f"run {run.id}: --gate {at} alone is ambiguous: the Gate after {at} was reopened "
            f"and is now at attempt {now}; nothing was {verb}. Name the attempt you reviewed: "
            f"{bound_command(run, decision)}",
            revision=state.revision,
        )
    return at


def reopened(run: RunHandle, gate: str) -> bool:
    """Whether a reject at the Gate after ``gate`` reopened a phase (its log says so)."""
    from ..model.events import GateRejected  # the log is read only for a Gate run again

    return any(isinstance(ev, GateRejected) and ev.phase == gate for ev in run.log.iter())


def changed_before(run: RunHandle, gate: str) -> list[str]:
    """The done phases up to ``gate`` whose flow.yaml entry or files changed since they ran
    (parameters apart): the Gate's outputs are not what flow.yaml makes now."""
    changed = []
    for p in run.state.phases:
        recorded = p.digests.get("code") or p.digests.get("definition")
        if p.status == "done" and recorded:
            now = definition.digests_of(run.flow, run.flow.phase(p.id), params_for(run.state, p.id))
            key = "code" if p.digests.get("code") else "definition"
            if now[key] != recorded:
                changed.append(p.id)
        if p.id == gate:
            break
    return changed


def refuse_changed(run: RunHandle, decision: str, gate: str) -> None:
    """Refused when a phase up to the Gate changed since it ran (approving output of an
    old definition); a reject may still reopen (it runs the phase again)."""
    if decision != "approve":
        return
    changed = changed_before(run, gate)
    if not changed:
        return
    raise Refused(
        f"run {run.id}: {', '.join(changed)} changed in flow.yaml or its files since it ran: "
        f"the outputs at the Gate after {gate} are not what the flow makes now; nothing was "
        "approved. Re-run: "
        + typed(
            "rerun",
            flow_text(run.flow),
            run=run.id,
            from_phase=changed[0],
            expect_revision=run.state.revision,
        ),  # fmt: skip
        revision=run.state.revision,
    )
