"""Run state: the data and its transition tables. Pure: no I/O (run.json is state_file.py).

Every change is ``apply(state, event, phase=..., now=..., **kw)``. It reads, in order,

1. ``PHASE_MOVES``: the status of the phase the event names, for the events that move one;
2. ``RUN_MOVES``: the run's status after the event, by the status the run is in;
3. ``GUARDS``: what else must hold (at a Gate, a phase already reached, ...);

and refuses a move that any of them does not allow with ``IllegalTransition``, naming the
event and the state, before anything is changed. Then the event's handler in ``HANDLERS``
fills in the rest on a copy, with ``revision`` incremented, and its recorder in ``RECORDS``
names the events of the change (``state_events.py``: what events.jsonl says of it), from the
state before and after and the facts the state does not hold (the seconds a phase took, the
folders a re-run kept, who decided). ``apply`` returns both: a ``Change``.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Concatenate, Literal, TypeGuard, get_args

from ...errors import Refused

if TYPE_CHECKING:
    from .events import Event as Recorded

SCHEMA = 1

RunStatus = Literal["paused", "running", "done", "failed", "cancelled"]
PhaseStatus = Literal["pending", "running", "done", "failed", "stale"]
Event = Literal[
    "start",  # a phase begins an attempt
    "reuse",  # a phase's done attempt stands (its own, or another run's): nothing it reads changed
    "finish",  # the phase's attempt ended well
    "fail",  # the phase's attempt ended in an error
    "recover",  # a phase left running by a process that died
    "waiting",  # a running phase waits (for an approval) or stops waiting
    "gate",  # the run pauses at the Gate after a phase
    "end",  # no phase is left to run
    "approve",  # the Gate is approved
    "reject",  # the Gate reopens an earlier phase, with a note
    "rerun",  # go back to a phase
    "cancel",
    "edit",  # a writable output changed at the Gate
    "accept",  # a person accepts an output changed outside a Gate
    "params",  # the run's parameters change (between advances)
    "manage",  # managed mode granted or taken back
    "pause",  # a run left running between phases by a process that is gone
]
# Moves that events make to phases other than the one they name: never events themselves.
KnockOn = Literal["stale", "reset"]

RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)
PHASE_STATUSES: tuple[PhaseStatus, ...] = get_args(PhaseStatus)
EVENTS: tuple[Event, ...] = get_args(Event)

# run status -> {event: the run's status after it}. An event not listed is illegal there.
RUN_MOVES: dict[RunStatus, dict[Event, RunStatus]] = {
    "paused": {
        "start": "running",
        "reuse": "running",
        "end": "done",  # the last phase's Gate was approved: nothing is left to run
        "approve": "paused",
        "reject": "paused",
        "edit": "paused",
        "rerun": "paused",
        "cancel": "cancelled",
        "params": "paused",
        "accept": "paused",
        "manage": "paused",
    },
    "running": {
        "start": "running",  # the next phase of the same advance
        "reuse": "running",
        "finish": "running",
        "waiting": "running",
        "fail": "failed",
        "recover": "failed",
        "gate": "paused",
        "end": "done",
        "cancel": "cancelled",
        "accept": "running",
        "manage": "running",
        "pause": "paused",
    },
    "failed": {
        "rerun": "paused",
        "cancel": "cancelled",
        "params": "failed",
        "accept": "failed",
        "manage": "failed",
    },
    "done": {
        "rerun": "paused",
        "params": "done",
        "accept": "done",
        "manage": "done",
    },
    "cancelled": {
        "rerun": "paused",
        "params": "cancelled",
        "accept": "cancelled",
        "manage": "cancelled",
    },
}

# phase status -> {event or knock-on: the phase's status after it}. The events listed here
# move the phase they name (``phase=``); "stale" and "reset" are made to other phases by
# finish, rerun, reject and cancel (which fails a running phase).
PHASE_MOVES: dict[PhaseStatus, dict[Event | KnockOn, PhaseStatus]] = {
    "pending": {
        "start": "running",
        "reuse": "done",  # a done attempt of another run had the same definition and pre-state
        "reset": "pending",
    },
    "stale": {
        "start": "running",
        "reuse": "done",
        "reset": "pending",
    },
    "running": {
        "waiting": "running",
        "finish": "done",
        "fail": "failed",
        "recover": "failed",
        "reset": "pending",
    },
    "done": {
        "gate": "done",  # a Gate follows a phase that finished (or was reused)
        "stale": "stale",
        "reset": "pending",
    },
    "failed": {
        "reset": "pending",
    },
}
# The events that move the phase they name: the events PHASE_MOVES lists.
PHASE_EVENTS: frozenset[Event] = frozenset(
    {"start", "reuse", "waiting", "finish", "fail", "recover", "gate"}
)

# How an IllegalTransition says an event whose name is not a verb.
VERBS: dict[str, str] = {
    "waiting": "wait in",
    "gate": "pause at a Gate after",
    "params": "change the parameters of",
}

STOPPED = "stopped before it finished"
APPROVAL_LOST = "approval lost in restart"


class IllegalTransition(Refused):
    """Raised when an event is not allowed in the current state; nothing was changed."""

    def __init__(self, what: str, status: str, event: str) -> None:
        article = "an" if what[:1] in "aeiou" else "a"
        super().__init__(f"cannot {VERBS.get(event, event)} {article} {what} that is {status}")
        self.what = what
        self.status = status
        self.event = event


@dataclass
class PhaseState:
    id: str
    status: PhaseStatus = "pending"
    attempt: int = 0
    started: float | None = None
    ended: float | None = None
    error: str | None = None
    hashes: dict[str, str] = field(default_factory=dict)
    waiting: str | None = None  # "approval" while an in-memory approval is pending
    note: str | None = None  # a reviewer's reopen note for the next attempt
    pid: int | None = None
    digests: dict[str, str] = field(default_factory=dict)  # "pre", "definition" of the attempt
    reused: bool = False  # the last done attempt stands for a re-run that changed nothing
    reused_from: str | None = None  # "<run>/<attempt>": the done attempt it was restored from
    no_reuse: bool = False  # `rerun --no-reuse`: the phase runs, whatever another run did
    backend: str | None = None  # where the attempt ran
    isolated: bool | None = None
    # The last failed attempt's error and digests (pre, definition); how many attempts in a
    # row failed so (the same error, nothing changed), and how many in a row failed from the
    # same digests whatever the error: kept across attempts, cleared when one is done.
    failure: dict[str, str] = field(default_factory=dict)
    repeats: int = 0
    retries: int = 0
    # Outputs edited at the attempt's Gate: name -> the sha256 the phase wrote (cleared when
    # an attempt starts). A re-run that would replace them needs a choice (keep or discard).
    edited: dict[str, str] = field(default_factory=dict)
    # Edits kept across a re-run: name -> [sha256 the phase wrote, sha256 as edited], to
    # re-apply by row key when the phase next reaches its Gate.
    carry: dict[str, list[str]] = field(default_factory=dict)

    @property
    def seconds(self) -> float | None:
        if self.started is None or self.ended is None:
            return None
        return self.ended - self.started


@dataclass
class RunState:
    run: str
    flow: str
    phases: list[PhaseState]
    status: RunStatus = "paused"
    revision: int = 0
    cursor: int = 0  # index of the next phase to run
    waiting: str | None = None  # "gate" while paused at a Gate
    gate: str | None = None  # the phase the Gate follows
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    backend: str | None = None
    isolated: bool | None = None
    error: str | None = None
    schema: int = SCHEMA
    params: dict[str, Any] = field(default_factory=dict)  # run parameters, fixed at begin
    definition: dict[str, Any] = field(default_factory=dict)  # flow.yaml's digest and phases
    seq: int = 0  # creation order among the flow's runs
    managed: bool = False  # a person let an agent decide this run's delegatable Gates

    def phase(self, phase_id: str) -> PhaseState:
        for p in self.phases:
            if p.id == phase_id:
                return p
        raise KeyError(phase_id)

    def index(self, phase_id: str) -> int:
        return [p.id for p in self.phases].index(phase_id)

    @property
    def next_phase(self) -> PhaseState | None:
        return self.phases[self.cursor] if self.cursor < len(self.phases) else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunState:
        data = dict(data)
        phases = [PhaseState(**p) for p in data.pop("phases")]
        return cls(phases=phases, **data)


def new_run(
    run_id: str,
    flow: str,
    phase_ids: list[str],
    *,
    now: float,
    params: dict[str, Any] | None = None,
    definition: dict[str, Any] | None = None,
    seq: int = 0,
) -> RunState:
    return RunState(
        run=run_id,
        flow=flow,
        phases=[PhaseState(id=p) for p in phase_ids],
        created=now,
        updated=now,
        params=dict(params or {}),
        definition=dict(definition or {}),
        seq=seq,
    )


# --- guards: what must hold beyond the status tables ----------------------------------------


@dataclass(frozen=True)
class Guard:
    """A precondition of an event. When ``holds`` is false the event is refused as
    ``cannot <event> a <what> that is <refusal>`` (``{phase}`` is the phase it names)."""

    what: str
    refusal: str
    holds: Callable[[RunState, str, Mapping[str, Any]], bool]


def _at_gate(s: RunState, phase: str, kw: Mapping[str, Any]) -> bool:
    return s.waiting == "gate" and s.gate is not None


def _not_after_gate(s: RunState, phase: str, kw: Mapping[str, Any]) -> bool:
    return s.gate is not None and s.index(phase) <= s.index(s.gate)


def _reached(s: RunState, phase: str, kw: Mapping[str, Any]) -> bool:
    """At or before the cursor, or any phase once the one at the cursor is done."""
    return s.index(phase) <= s.cursor or s.phases[s.cursor].status == "done"


def _recorded(s: RunState, phase: str, kw: Mapping[str, Any]) -> bool:
    return kw.get("name") in s.phase(phase).hashes


def _between_phases(s: RunState, phase: str, kw: Mapping[str, Any]) -> bool:
    return not any(p.status == "running" for p in s.phases)


AT_GATE = Guard("run", "not at a Gate", _at_gate)
NOT_AFTER_GATE = Guard("phase", "after the Gate", _not_after_gate)
REACHED = Guard("phase", "not reached yet", _reached)
RECORDED = Guard("output", "not recorded for {phase}", _recorded)
BETWEEN_PHASES = Guard("run", "running a phase", _between_phases)

GUARDS: dict[Event, tuple[Guard, ...]] = {
    "approve": (AT_GATE,),
    "edit": (AT_GATE,),
    "reject": (AT_GATE, NOT_AFTER_GATE, REACHED),
    "rerun": (REACHED,),
    "accept": (RECORDED,),
    "pause": (BETWEEN_PHASES,),
}


# --- apply ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """What one event makes of a run: its state after, and the events that record it, in
    order (a ``RunStateChanged`` first when the run's status moved)."""

    state: RunState
    events: tuple[Recorded, ...]


def apply(
    state: RunState, event: str, *, phase: str | None = None, now: float, **kw: Any
) -> Change:
    """The state after ``event`` and the events of the change; ``state`` itself is never
    modified. ``kw`` are the event's own keywords and the facts its events need that the
    state does not hold (``FACTS``)."""
    from .state_events import FACTS, events_of  # the catalogue loads once a run changes

    move, phase_to, run_to = _moves(state, event, phase, kw)
    facts = FACTS.get(move, frozenset())
    new = copy.deepcopy(state)
    new.status = run_to
    if phase_to is not None:
        new.phase(str(phase)).status = phase_to
    HANDLERS[move](new, phase, now, **{k: v for k, v in kw.items() if k not in facts})
    new.revision += 1
    new.updated = now
    return Change(new, events_of(state, new, move, phase, now, kw))


def allows(state: RunState, event: str, *, phase: str | None = None, **kw: Any) -> bool:
    """Whether ``apply`` would take ``event`` in ``state`` (the same tables and guards)."""
    try:
        _moves(state, event, phase, kw)
    except IllegalTransition:
        return False
    return True


def _moves(
    state: RunState, event: str, phase: str | None, kw: Mapping[str, Any]
) -> tuple[Event, PhaseStatus | None, RunStatus]:
    """The event, and the phase's and the run's status after it; IllegalTransition when the
    tables or a guard refuse it."""
    if not _is_event(event):
        raise IllegalTransition("run", state.status, event)
    phase_to = _phase_move(state.phase(str(phase)).status, event) if event in PHASE_EVENTS else None
    run_to = _run_move(state.status, event)
    for guard in GUARDS.get(event, ()):
        if not guard.holds(state, str(phase), kw):
            raise IllegalTransition(guard.what, guard.refusal.format(phase=phase), event)
    return event, phase_to, run_to


def _is_event(event: str) -> TypeGuard[Event]:
    return event in EVENTS


def _run_move(status: RunStatus, event: Event) -> RunStatus:
    try:
        return RUN_MOVES[status][event]
    except KeyError:
        raise IllegalTransition("run", status, event) from None


def _phase_move(status: PhaseStatus, move: Event | KnockOn) -> PhaseStatus:
    try:
        return PHASE_MOVES[status][move]
    except KeyError:
        raise IllegalTransition("phase", status, move) from None


def _knock_on(p: PhaseState, move: Event | KnockOn) -> None:
    p.status = _phase_move(p.status, move)


# --- handlers: the rest of each event, on the copy apply made ------------------------------
# Each takes the copy, the phase the event names (if any), the time, and the event's own
# keywords; the statuses the tables give are already set.

Handler = Callable[Concatenate[RunState, str | None, float, ...], None]


def _start(
    s: RunState,
    phase: str | None,
    now: float,
    pid: int | None = None,
    backend: str | None = None,
    isolated: bool | None = None,
) -> None:
    p = s.phase(str(phase))
    p.attempt += 1
    p.started, p.ended, p.error, p.waiting, p.pid = now, None, None, None, pid
    p.hashes, p.digests, p.reused, p.reused_from, p.no_reuse = {}, {}, False, None, False
    p.edited = {}
    if backend is not None:
        p.backend, p.isolated = backend, isolated
        ran = [q for q in s.phases if q.backend is not None]
        s.backend = "+".join(sorted({str(q.backend) for q in ran}))
        s.isolated = all(bool(q.isolated) for q in ran)
    s.cursor = s.index(p.id)
    s.error = None


def _reuse(
    s: RunState,
    phase: str | None,
    now: float,
    source: str | None = None,
    hashes: dict[str, str] | None = None,
    digests: dict[str, str] | None = None,
) -> None:
    """The phase's last done attempt stands; with ``source`` ("<run>/<attempt>"), a new
    attempt holds what that done attempt of another run recorded (later done phases stale)."""
    p = s.phase(str(phase))
    p.reused, p.note, p.carry = True, None, {}  # the edited outputs stay as they are
    if source is not None:
        p.attempt += 1
        p.started, p.ended, p.error, p.waiting, p.pid = now, now, None, None, None
        p.hashes, p.digests, p.reused_from = dict(hashes or {}), dict(digests or {}), source
        p.failure, p.repeats, p.retries, p.edited = {}, 0, 0, {}  # another run's outputs
        for later in s.phases[s.index(p.id) + 1 :]:
            if later.status == "done":
                _knock_on(later, "stale")
    s.cursor = s.index(p.id) + 1
    s.error = None


def _finish(
    s: RunState,
    phase: str | None,
    now: float,
    hashes: dict[str, str],
    digests: dict[str, str] | None = None,
) -> None:
    p = s.phase(str(phase))
    p.ended, p.hashes, p.waiting, p.pid, p.note = now, dict(hashes), None, None, None
    p.digests = dict(digests or {})  # the attempt's pre-state and definition: reuse compares
    p.failure, p.repeats, p.retries = {}, 0, 0
    s.cursor = s.index(p.id) + 1
    for later in s.phases[s.cursor :]:
        if later.status == "done":
            _knock_on(later, "stale")


def _fail(
    s: RunState,
    phase: str | None,
    now: float,
    error: str,
    digests: dict[str, str] | None = None,
) -> None:
    """The attempt failed with ``error``; ``digests`` are its pre-state and definition, when
    it got as far as recording them. The same error from the same digests as the attempt
    before counts as a repeat; a stop (a cancel, a crash, a lost approval) counts as none."""
    p = s.phase(str(phase))
    p.ended, p.error, p.waiting, p.pid = now, error, None, None
    if digests:
        p.digests = dict(digests)
    if error in (STOPPED, APPROVAL_LOST):
        p.failure, p.repeats, p.retries = {}, 0, 0
    else:
        same = {k: v for k, v in p.digests.items() if k in SAME}
        before = {k: v for k, v in p.failure.items() if k in SAME}
        failure = {"error": error, **same}
        p.repeats = p.repeats + 1 if failure == p.failure else 1
        p.retries = p.retries + 1 if p.failure and same == before else 1
        p.failure = failure
    s.error = f"{p.id}: {error}"
    s.cursor = s.index(p.id)


# What makes two failed attempts the same besides their error: the definition and the
# pre-state they ran from.
SAME = ("pre", "definition")


def _recover(s: RunState, phase: str | None, now: float) -> None:
    lost = s.phase(str(phase)).waiting == "approval"
    _fail(s, phase, now, APPROVAL_LOST if lost else STOPPED)


def _waiting(s: RunState, phase: str | None, now: float, what: str | None = None) -> None:
    s.phase(str(phase)).waiting = what


def _gate(s: RunState, phase: str | None, now: float) -> None:
    """At the Gate: the edits carried across a re-run were re-applied (the runner does so
    before this move), so none is left to carry."""
    s.waiting, s.gate = "gate", phase
    s.phase(str(phase)).carry = {}


def _end(s: RunState, phase: str | None, now: float) -> None:
    """Nothing beyond the run's status."""


def _approve(s: RunState, phase: str | None, now: float) -> None:
    s.waiting, s.gate = None, None


def _rerun(
    s: RunState,
    phase: str | None,
    now: float,
    note: str | None = None,
    reuse: bool = True,
    edits: str | None = None,
    put_back: list[str] | None = None,
) -> None:
    """Go back to ``phase``: it becomes pending (with the note), later done phases stale
    (pending without ``reuse``: a pending phase is never reused). ``edits`` ("keep" or
    "discard"): what becomes of the Gate edits of the phases that may run again;
    ``put_back``, the edited outputs of later phases the runner put back as their phase
    wrote them (discarded): those hold their phase's hashes again, no longer edited; a
    later phase with an edit discarded but not put back runs again (never reused)."""
    index = s.index(str(phase))
    for p in s.phases[index:]:
        if edits == "keep" and p.edited:
            p.carry = {n: [orig, p.hashes.get(n, "")] for n, orig in sorted(p.edited.items())}
        elif edits == "discard":
            p.carry = {}
    discarded = set(put_back or ()) if edits == "discard" else set()
    for p in s.phases[index + 1 :]:
        for name in sorted(discarded & set(p.edited)):
            p.hashes[name] = p.edited.pop(name)
    target = s.phases[index]
    _knock_on(target, "reset")
    target.note, target.error, target.waiting, target.pid = note, None, None, None
    for later in s.phases[index + 1 :]:
        kept = reuse and not (edits == "discard" and later.edited)
        later.no_reuse = later.no_reuse or not kept
        if later.status == "done":
            _knock_on(later, "stale" if kept else "reset")
        elif later.status == "stale" and not kept:
            _knock_on(later, "reset")
        elif later.status in ("failed", "running"):
            _knock_on(later, "reset")
    s.cursor, s.waiting, s.gate, s.error = index, None, None, None


def _reject(
    s: RunState,
    phase: str | None,
    now: float,
    note: str = "",
    edits: str | None = None,
    put_back: list[str] | None = None,
) -> None:
    _rerun(s, phase, now, note=note, edits=edits, put_back=put_back)


def _cancel(s: RunState, phase: str | None, now: float) -> None:
    s.waiting, s.gate = None, None
    for p in s.phases:
        if p.status == "running":
            _knock_on(p, "fail")
            p.ended, p.error, p.pid = now, STOPPED, None
            p.failure, p.repeats, p.retries = {}, 0, 0


def _edit(s: RunState, phase: str | None, now: float, name: str = "", sha256: str = "") -> None:
    p = s.phase(str(s.gate))
    wrote = p.edited.get(name, p.hashes.get(name, ""))
    p.hashes[name] = sha256
    if sha256 == wrote:
        p.edited.pop(name, None)  # edited back to what the phase wrote
    else:
        p.edited[name] = wrote


def _accept(s: RunState, phase: str | None, now: float, name: str = "", sha256: str = "") -> None:
    """A person accepts output ``name`` of ``phase`` as it is now (changed outside a Gate)."""
    s.phase(str(phase)).hashes[name] = sha256


def _params(s: RunState, phase: str | None, now: float, params: dict[str, Any]) -> None:
    s.params = dict(params)


def _manage(s: RunState, phase: str | None, now: float, managed: bool = True) -> None:
    s.managed = bool(managed)


def _pause(s: RunState, phase: str | None, now: float) -> None:
    """Nothing beyond the run's status: the cursor is at the phase that runs next."""


HANDLERS: dict[Event, Handler] = {
    "start": _start,
    "reuse": _reuse,
    "finish": _finish,
    "fail": _fail,
    "recover": _recover,
    "waiting": _waiting,
    "gate": _gate,
    "end": _end,
    "approve": _approve,
    "reject": _reject,
    "rerun": _rerun,
    "cancel": _cancel,
    "edit": _edit,
    "accept": _accept,
    "params": _params,
    "manage": _manage,
    "pause": _pause,
}
