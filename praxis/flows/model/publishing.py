"""What a run has published and has yet to (DESIGN.md §18), from its state and events: pure.

An entry of flow.yaml's ``publish:`` is pending while the run is done and no ``published``
event records its output, at the digest the run holds now, in its table. Who decided the
run's last Gate is read from its events (``approval``): the one place that says what counts
as a person's approval.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .flow import Flow, Publish

if TYPE_CHECKING:  # events are told apart by kind: `praxis status` loads no event types
    from .events import Event, Published

DECISIONS = ("gate_waiting", "gate_approved", "gate_rejected")


def digest(flow: Flow, state: Any, entry: Publish) -> str | None:
    """The sha256 the run holds for ``entry``'s output (None: not made yet)."""
    producer = flow.producer(entry.output)
    if producer is None:
        return None
    hashes: dict[str, str] = state.phase(producer.id).hashes
    return hashes.get(entry.output)


def published(events: Sequence[Event]) -> list[Published]:
    return [e for e in events if e.kind == "published"]  # type: ignore[misc]


def done(flow: Flow, state: Any, entry: Publish, events: Sequence[Event]) -> Published | None:
    """The ``published`` event of ``entry`` at the output's digest now, if any."""
    sha = digest(flow, state, entry)
    for ev in reversed(published(events)):
        if (ev.output, ev.connection, ev.table, ev.sha256) == (
            entry.output, entry.connection, entry.table, sha,
        ):  # fmt: skip
            return ev
    return None


def pending(flow: Flow, state: Any, events: Sequence[Event]) -> list[Publish]:
    """The entries a done run has yet to publish (none before it is done)."""
    if state.status != "done":
        return []
    return [e for e in flow.publish if done(flow, state, e, events) is None]


def last_gate(flow: Flow) -> str | None:
    """The phase the flow's last Gate follows."""
    gated = [p.id for p in flow.phases if p.gated]
    return gated[-1] if gated else None


def approval(flow: Flow, events: Sequence[Event]) -> str | None:
    """Why the run may not publish yet, or None: its last Gate's last decision is a
    ``gate_approved`` by a person (an agent's approval in managed mode is not one)."""
    gate = last_gate(flow)
    if gate is None:
        return (
            "publishing needs a Gate a person approves: add `review: required` to the phase "
            "whose outputs are published (or one before it)"
        )
    decided = [e for e in events if e.kind in DECISIONS and getattr(e, "phase", None) == gate]
    last = decided[-1] if decided else None
    if last is None or last.kind != "gate_approved":
        return f"the Gate after {gate} has not been approved"
    actor = str(getattr(last, "actor", None))  # "person", or a principal: "person:alice"
    if actor.partition(":")[0] != "person":  # decisions.kind_of (not loaded by status)
        who = actor if ":" in actor else f"an {actor}"
        return f"the Gate after {gate} was approved by {who}, not a person"
    return None
