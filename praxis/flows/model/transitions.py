"""The transitions of a run and their one table, ``TRANSITIONS``, keyed by class (as h11
keys its table by event class); ``machine.apply`` applies them, and ``record`` names the events
of each change. Each is a frozen dataclass with keyword-only fields: what it does to the state
(``_move``, on the copy ``apply`` made, the statuses set by its row) and the events that record
it (``_record``: ``events.py``), from the states before and after and the facts the state does
not hold (seconds, kept folders, who decided). The classes are in the modules of what they
move: a phase's attempt (``phase_moves.py``), the run as a whole, its Gates and decisions
(``run_moves.py``), a fan-out's partitions (``partition_moves.py``); each is imported here,
where callers import it from. A new transition is a class there and its row in the table (a
test holds that every class has one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .moves import AT_GATE, BETWEEN_PHASES, NOT_AFTER_GATE, REACHED, RECORDED, Rule, Transition
from .partition_moves import Backfill as Backfill
from .partition_moves import Partition as Partition
from .phase_moves import Fail as Fail
from .phase_moves import Finish as Finish
from .phase_moves import Recover as Recover
from .phase_moves import Retry as Retry
from .phase_moves import Reuse as Reuse
from .phase_moves import Start as Start
from .phase_moves import Wait as Wait
from .run_moves import Accept as Accept
from .run_moves import Approve as Approve
from .run_moves import Cancel as Cancel
from .run_moves import Edit as Edit
from .run_moves import End as End
from .run_moves import Gate as Gate
from .run_moves import Manage as Manage
from .run_moves import Params as Params
from .run_moves import Pause as Pause
from .run_moves import Reject as Reject
from .run_moves import Rerun as Rerun
from .state import RUN_STATUSES, PhaseStatus, RunState, RunStatus

if TYPE_CHECKING:
    from .events import Event


def record(t: Transition, before: RunState, after: RunState, now: float) -> tuple[Event, ...]:
    """The events of ``t``, which made ``after`` of ``before``: the run's new status when it
    moved, then the transition's own. The catalogue of events is imported the first time a run
    changes: a command that only reads states (status, runs) never loads it
    (tests/test_imports.py holds it)."""
    from . import events as ev

    made: list[Event] = []
    if after.status != before.status:
        made.append(
            ev.RunStateChanged(status=after.status, revision=after.revision, reason=t.name, at=now)
        )
    return (*made, *t._record(before, after, now))


# --- the table ------------------------------------------------------------------------------

# The run's status after a transition that leaves it as it is, in any status.
_STAYS: dict[RunStatus, RunStatus] = {s: s for s in RUN_STATUSES}
_BETWEEN: dict[RunStatus, RunStatus] = {k: v for k, v in _STAYS.items() if k != "running"}
_BEGINS: dict[PhaseStatus, PhaseStatus] = {"pending": "running", "stale": "running"}
_STANDS: dict[PhaseStatus, PhaseStatus] = {"pending": "done", "stale": "done"}

TRANSITIONS: dict[type[Transition], Rule] = {
    Start: Rule({"paused": "running", "running": "running"}, _BEGINS),
    Reuse: Rule({"paused": "running", "running": "running"}, _STANDS),  # nothing it reads changed
    Finish: Rule({"running": "running"}, {"running": "done"}),
    Fail: Rule({"running": "failed"}, {"running": "failed"}),
    Recover: Rule({"running": "failed"}, {"running": "failed"}),
    Retry: Rule({"failed": "running"}, {"failed": "pending"}),
    Wait: Rule({"running": "running"}, {"running": "running"}),
    Gate: Rule({"running": "paused"}, {"done": "done"}),  # after a done (or reused) phase
    End: Rule({"paused": "done", "running": "done"}),  # paused: the last Gate was approved
    Approve: Rule({"paused": "paused"}, guards=(AT_GATE,)),
    Reject: Rule({"paused": "paused"}, guards=(AT_GATE, NOT_AFTER_GATE, REACHED)),
    Rerun: Rule({s: "paused" for s in _BETWEEN}, guards=(REACHED,)),
    Cancel: Rule({"paused": "cancelled", "running": "cancelled", "failed": "cancelled"}),
    Edit: Rule({"paused": "paused"}, guards=(AT_GATE,)),
    Accept: Rule(_STAYS, guards=(RECORDED,)),
    Params: Rule(_BETWEEN),
    Manage: Rule(_STAYS),
    Pause: Rule({"running": "paused"}, guards=(BETWEEN_PHASES,)),
    Partition: Rule(_STAYS),  # a fan-out's partition: model/partition_moves.py
    Backfill: Rule(_BETWEEN),
}
