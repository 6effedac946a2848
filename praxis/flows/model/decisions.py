"""Who decides a Gate, and on what.

A decision (approve, reject) is bound to what the decider saw: the run's revision
(``--expect-revision N``) or the Gate (``--gate PHASE``); a bare one is refused with the bound
command, so a repeated command never passes the next Gate. Every decision records its actor:
``person`` (the default) or ``agent`` (``--as agent``, ``PRAXIS_ACTOR=agent``, the API's
``actor="agent"``). An agent decides only a delegatable Gate (``review: {required: true,
delegatable: true}``) of a run a person put in managed mode, and never while a check fails.
"""

from __future__ import annotations

import os

from ...command_line import typed
from ...errors import UsageError
from .flow import Phase

ACTORS = ("person", "agent")


class BadActor(UsageError, ValueError):
    """Raised for an actor that is neither ``person`` nor ``agent``."""

    def next(self, flow: str) -> str:
        return "use --as person or --as agent"


def actor_of(explicit: str | None = None) -> str:
    """The actor of a change: ``explicit``, else ``PRAXIS_ACTOR``, else ``person``; a kind
    (``person``, ``agent``) or a principal the service established (``person:alice``,
    ``agent:ci-bot``)."""
    actor = (explicit or os.environ.get("PRAXIS_ACTOR") or "person").strip()
    kind, _, name = actor.partition(":")
    if kind.lower() not in ACTORS or len(actor) > 80 or (":" in actor and not name):
        raise BadActor(f"actor {actor[:40]!r} is neither person nor agent")
    return f"{kind.lower()}:{name}" if name else kind.lower()


def kind_of(actor: str) -> str:
    """``person`` or ``agent``: the kind of an actor (``agent:ci-bot`` is an agent)."""
    return actor.partition(":")[0]


def refusal(
    actor: str, decision: str, gate: Phase, *, managed: bool, failing: int, run: str, flow: str
) -> str | None:
    """Why ``actor`` may not ``decision`` (approve | reject) the Gate after ``gate``; None
    when it may. Checks failing refuse any approval; an agent needs a delegatable Gate and
    managed mode, and no failing check for either decision."""
    if failing and (decision == "approve" or kind_of(actor) == "agent"):
        return (
            f"{failing} check(s) fail on the outputs of {gate.id}: fix the files, or reject "
            f"and reopen a phase (see: {typed('status')})"
        )
    if kind_of(actor) != "agent":
        return None
    if not gate.delegatable:
        return (
            f"the Gate after {gate.id} is not delegatable: a person decides it "
            "(review: {required: true, delegatable: true} in flow.yaml lets an agent)"
        )
    if not managed:
        return (
            f"run {run} is not in managed mode: a person grants it with "
            f"{typed('manage', flow, run=run)}"
        )
    return None
