"""The run's state machine: every change of a run is a typed transition (``transitions.py``:
the classes and their one table, ``TRANSITIONS``, keyed by class as h11 keys its table).

``apply(state, Start(phase="load", pid=7), now=...)`` gives a ``Change``: the state after it
and the events that record it. The table holds, for each transition, the run's status after
it by the status the run is in, the status after it of the phase it names (for those that
move one), and what else must hold (``moves.Guard``). A move the table or a guard does not
allow, or a transition without a row, raises ``IllegalTransition``, naming the transition and
the state, before anything is changed. Then the transition fills in the rest on a copy, with
``revision`` incremented, and names the events of the change.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .moves import IllegalTransition, OfPhase, Transition
from .state import PhaseStatus, RunState, RunStatus
from .transitions import TRANSITIONS, record

if TYPE_CHECKING:
    from .events import Event

__all__ = ["TRANSITIONS", "Change", "IllegalTransition", "allows", "apply"]

# --- apply ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """What one transition makes of a run: its state after, and the events that record it,
    in order (a ``RunStateChanged`` first when the run's status moved)."""

    state: RunState
    events: tuple[Event, ...]


def apply(state: RunState, t: Transition, *, now: float) -> Change:
    """The state after ``t`` and the events of the change; ``state`` itself is never
    modified."""
    phase_to, run_to = _check(state, t)
    new = copy.deepcopy(state)
    new.status = run_to
    if phase_to is not None and isinstance(t, OfPhase):
        new.phase(t.phase).status = phase_to
    t._move(new, now)
    new.revision += 1
    new.updated = now
    return Change(new, record(t, state, new, now))


def allows(state: RunState, t: Transition) -> bool:
    """Whether ``apply`` would take ``t`` in ``state`` (the same table and guards)."""
    try:
        _check(state, t)
    except IllegalTransition:
        return False
    return True


def _check(state: RunState, t: Transition) -> tuple[PhaseStatus | None, RunStatus]:
    """The phase's and the run's status after it; IllegalTransition
    when the table or a guard refuses it."""
    verb = t.verb or t.name
    rule = TRANSITIONS.get(type(t))
    if rule is None:
        raise IllegalTransition("run", state.status, t.name, verb)
    phase_to = None
    if rule.phase is not None and isinstance(t, OfPhase):
        status = state.phase(t.phase).status
        phase_to = rule.phase.get(status)
        if phase_to is None:
            raise IllegalTransition("phase", status, t.name, verb)
    run_to = rule.run.get(state.status)
    if run_to is None:
        raise IllegalTransition("run", state.status, t.name, verb)
    for guard in rule.guards:
        if not guard.holds(state, t):
            phase = getattr(t, "phase", None)
            raise IllegalTransition(guard.what, guard.refusal.format(phase=phase), t.name, verb)
    return phase_to, run_to
