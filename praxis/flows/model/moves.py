"""What a transition of a run is: its base classes, the row of the table that allows it
(``Rule``: statuses and guards), the moves it makes to other phases (knock-ons), and the error
that refuses it. The transitions and their table are in ``transitions.py``; ``machine.py``
applies them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from ...errors import Refused
from .state import PhaseState, PhaseStatus, RunState, RunStatus

if TYPE_CHECKING:
    from .events import Event

# Moves that transitions make to phases other than the one they name.
KnockOn = Literal["stale", "reset", "stop"]
KNOCK_ONS: dict[KnockOn, dict[PhaseStatus, PhaseStatus]] = {
    "stale": {"done": "stale"},  # a later phase: what it read may have changed
    "reset": {s: "pending" for s in ("pending", "running", "done", "failed", "stale")},
    "stop": {"running": "failed"},  # a cancel stops the phase running
}


class IllegalTransition(Refused):
    """Raised when a transition is not allowed in the current state; nothing was changed."""

    def __init__(self, what: str, status: str, event: str, verb: str | None = None) -> None:
        article = "an" if what[:1] in "aeiou" else "a"
        super().__init__(f"cannot {verb or event} {article} {what} that is {status}")
        self.what = what
        self.status = status
        self.event = event


@dataclass(frozen=True, kw_only=True)
class Transition:
    """A change of a run. ``name`` is how the log names it (``run_state``'s ``reason``)."""

    name: ClassVar[str]
    verb: ClassVar[str] = ""  # how IllegalTransition says it, when ``name`` is not a verb

    def _move(self, s: RunState, now: float) -> None:
        """The rest of the change, on the copy ``apply`` made (the statuses are set)."""

    def _record(self, before: RunState, after: RunState, now: float) -> list[Event]:
        """The events of the change besides the run's status (``run_state``)."""
        return []


@dataclass(frozen=True, kw_only=True)
class OfPhase(Transition):
    """A transition that names a phase."""

    phase: str


# --- guards: what must hold beyond the status columns ---------------------------------------


@dataclass(frozen=True)
class Guard:
    """A precondition of a transition. When ``holds`` is false it is refused as
    ``cannot <verb> a <what> that is <refusal>`` (``{phase}`` is the phase it names)."""

    what: str
    refusal: str
    holds: Callable[[RunState, Any], bool]


def _at_gate(s: RunState, t: Transition) -> bool:
    return s.waiting == "gate" and s.gate is not None


def _not_after_gate(s: RunState, t: OfPhase) -> bool:
    return s.gate is not None and s.index(t.phase) <= s.index(s.gate)


def _reached(s: RunState, t: OfPhase) -> bool:
    """At or before the cursor, or any phase once the one at the cursor is done."""
    return s.index(t.phase) <= s.cursor or s.phases[s.cursor].status == "done"


def _recorded(s: RunState, t: Any) -> bool:  # an Accept
    return t.output in s.phase(t.phase).hashes


def _between_phases(s: RunState, t: Transition) -> bool:
    return not any(p.status == "running" for p in s.phases)


AT_GATE = Guard("run", "not at a Gate", _at_gate)
NOT_AFTER_GATE = Guard("phase", "after the Gate", _not_after_gate)
REACHED = Guard("phase", "not reached yet", _reached)
RECORDED = Guard("output", "not recorded for {phase}", _recorded)
BETWEEN_PHASES = Guard("run", "running a phase", _between_phases)


@dataclass(frozen=True)
class Rule:
    """A row of ``transitions.TRANSITIONS``: the run's status after the transition by the
    status it is in (a status not listed refuses it); the same of the phase it names, for a
    transition that moves that phase; and its guards."""

    run: Mapping[RunStatus, RunStatus]
    phase: Mapping[PhaseStatus, PhaseStatus] | None = None
    guards: tuple[Guard, ...] = ()


def knock_on(p: PhaseState, move: KnockOn) -> None:
    to = KNOCK_ONS[move].get(p.status)
    if to is None:
        raise IllegalTransition("phase", p.status, move)
    p.status = to


def stale_after(s: RunState, index: int) -> None:
    for later in s.phases[index + 1 :]:
        if later.status == "done":
            knock_on(later, "stale")
