"""Run state: data, the transition tables, and atomic run.json writes. No other I/O.

Every change goes through ``apply(state, event, ...)``, which looks the move up in the
tables below, returns a NEW state with ``revision`` incremented, and raises
``IllegalTransition`` (changing nothing) for a move the tables do not list.
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import RecordCorrupt, Refused
from .atomic import write_atomic

SCHEMA = 1

RUN_STATUSES = ("paused", "running", "done", "failed", "cancelled")
PHASE_STATUSES = ("pending", "running", "done", "failed", "stale")

# (run status, event) -> new run status
RUN_MOVES: dict[tuple[str, str], str] = {
    ("paused", "start"): "running",
    ("running", "gate"): "paused",
    ("running", "finish"): "done",
    ("paused", "finish"): "done",  # the last phase's Gate was approved: nothing is left to run
    ("running", "fail"): "failed",
    ("running", "cancel"): "cancelled",
    ("paused", "cancel"): "cancelled",
    ("failed", "cancel"): "cancelled",
    ("paused", "approve"): "paused",
    ("paused", "reject"): "paused",
    ("paused", "rerun"): "paused",
    ("failed", "rerun"): "paused",
    ("done", "rerun"): "paused",
    ("cancelled", "rerun"): "paused",
    ("running", "recover"): "failed",
    ("paused", "recover"): "failed",
    ("paused", "reuse"): "running",
    ("running", "reuse"): "running",
}

# (phase status, event) -> new phase status
PHASE_MOVES: dict[tuple[str, str], str] = {
    ("pending", "start"): "running",
    ("stale", "start"): "running",
    ("running", "finish"): "done",
    ("running", "fail"): "failed",
    ("running", "recover"): "failed",
    ("done", "stale"): "stale",
    ("stale", "reuse"): "done",
    ("pending", "reset"): "pending",
    ("running", "reset"): "pending",
    ("done", "reset"): "pending",
    ("failed", "reset"): "pending",
    ("stale", "reset"): "pending",
}

STOPPED = "stopped before it finished"
APPROVAL_LOST = "approval lost in restart"


class IllegalTransition(Refused):
    """Raised when an event is not allowed in the current state; nothing was changed."""

    def __init__(self, what: str, status: str, event: str) -> None:
        super().__init__(f"cannot {event} a {what} that is {status}")
        self.what = what
        self.status = status
        self.event = event


class StateCorrupt(RecordCorrupt):
    """Raised when run.json cannot be read as a run state; it is never silently reset."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass
class PhaseState:
    id: str
    status: str = "pending"
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
    backend: str | None = None  # where the attempt ran
    isolated: bool | None = None

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
    status: str = "paused"
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


def _move(table: dict[tuple[str, str], str], what: str, status: str, event: str) -> str:
    try:
        return table[(status, event)]
    except KeyError:
        raise IllegalTransition(what, status, event) from None


def apply(
    state: RunState, event: str, *, phase: str | None = None, now: float, **kw: Any
) -> RunState:
    """The state after ``event``; ``state`` itself is never modified."""
    new = copy.deepcopy(state)
    handler = _HANDLERS.get(event)
    if handler is None:
        raise IllegalTransition("run", state.status, event)
    handler(new, phase, now, **kw)
    new.revision += 1
    new.updated = now
    return new


def _start_phase(
    s: RunState,
    phase: str | None,
    now: float,
    pid: int | None = None,
    backend: str | None = None,
    isolated: bool | None = None,
) -> None:
    p = s.phase(str(phase))
    if s.status != "running":
        s.status = _move(RUN_MOVES, "run", s.status, "start")
    p.status = _move(PHASE_MOVES, "phase", p.status, "start")
    p.attempt += 1
    p.started, p.ended, p.error, p.waiting, p.pid = now, None, None, None, pid
    p.hashes, p.digests, p.reused = {}, {}, False
    if backend is not None:
        p.backend, p.isolated = backend, isolated
        ran = [q for q in s.phases if q.backend is not None]
        s.backend = "+".join(sorted({str(q.backend) for q in ran}))
        s.isolated = all(bool(q.isolated) for q in ran)
    s.cursor = s.index(p.id)
    s.error = None


def _reuse(s: RunState, phase: str | None, now: float) -> None:
    p = s.phase(str(phase))
    s.status = _move(RUN_MOVES, "run", s.status, "reuse")
    p.status = _move(PHASE_MOVES, "phase", p.status, "reuse")
    p.reused, p.note = True, None
    s.cursor = s.index(p.id) + 1
    s.error = None


def _finish_phase(
    s: RunState,
    phase: str | None,
    now: float,
    hashes: dict[str, str],
    digests: dict[str, str] | None = None,
) -> None:
    p = s.phase(str(phase))
    p.status = _move(PHASE_MOVES, "phase", p.status, "finish")
    p.ended, p.hashes, p.waiting, p.pid, p.note = now, dict(hashes), None, None, None
    p.digests = dict(digests or {})  # the attempt's pre-state and definition: reuse compares
    s.cursor = s.index(p.id) + 1
    for later in s.phases[s.cursor :]:
        if later.status == "done":
            later.status = _move(PHASE_MOVES, "phase", later.status, "stale")


def _fail_phase(
    s: RunState, phase: str | None, now: float, error: str, event: str = "fail"
) -> None:
    p = s.phase(str(phase))
    p.status = _move(PHASE_MOVES, "phase", p.status, event)
    p.ended, p.error, p.waiting, p.pid = now, error, None, None
    s.status = _move(RUN_MOVES, "run", s.status, event)
    s.error = f"{p.id}: {error}"
    s.cursor = s.index(p.id)


def _recover(s: RunState, phase: str | None, now: float) -> None:
    p = s.phase(str(phase))
    error = APPROVAL_LOST if p.waiting == "approval" else STOPPED
    if s.status == "running":
        _fail_phase(s, phase, now, error, event="recover")
    else:  # paused with a phase left running cannot happen through apply; be safe
        p.status = _move(PHASE_MOVES, "phase", p.status, "recover")
        p.ended, p.error, p.waiting, p.pid = now, error, None, None
        s.status = _move(RUN_MOVES, "run", s.status, "recover")
        s.error = f"{p.id}: {error}"


def _gate(s: RunState, phase: str | None, now: float) -> None:
    s.status = _move(RUN_MOVES, "run", s.status, "gate")
    s.waiting, s.gate = "gate", phase


def _finish_run(s: RunState, phase: str | None, now: float) -> None:
    s.status = _move(RUN_MOVES, "run", s.status, "finish")


def _approve(s: RunState, phase: str | None, now: float) -> None:
    if s.waiting != "gate":
        raise IllegalTransition("run", f"{s.status} and not at a Gate", "approve")
    s.status = _move(RUN_MOVES, "run", s.status, "approve")
    s.waiting, s.gate = None, None


def _reopen(
    s: RunState,
    phase: str | None,
    now: float,
    note: str | None = None,
    event: str = "rerun",
    reuse: bool = True,
) -> None:
    """Go back to ``phase``: it becomes pending (with the note), later done phases stale
    (pending without ``reuse``: a pending phase is never reused)."""
    s.status = _move(RUN_MOVES, "run", s.status, event)
    target = s.phase(str(phase))
    index = s.index(target.id)
    if index > s.cursor and s.phases[s.cursor].status != "done":
        raise IllegalTransition("phase", "not reached yet", event)
    target.status = _move(PHASE_MOVES, "phase", target.status, "reset")
    target.note, target.error, target.waiting, target.pid = note, None, None, None
    for later in s.phases[index + 1 :]:
        if later.status == "done":
            later.status = _move(PHASE_MOVES, "phase", later.status, "stale" if reuse else "reset")
        elif later.status == "stale" and not reuse:
            later.status = _move(PHASE_MOVES, "phase", later.status, "reset")
        elif later.status in ("failed", "running"):
            later.status = _move(PHASE_MOVES, "phase", later.status, "reset")
    s.cursor, s.waiting, s.gate, s.error = index, None, None, None


def _reject(s: RunState, phase: str | None, now: float, note: str = "") -> None:
    if s.waiting != "gate":
        raise IllegalTransition("run", f"{s.status} and not at a Gate", "reject")
    if s.index(str(phase)) > s.index(str(s.gate)):
        raise IllegalTransition("phase", "after the Gate", "reopen")
    _reopen(s, phase, now, note=note, event="reject")


def _cancel(s: RunState, phase: str | None, now: float) -> None:
    s.status = _move(RUN_MOVES, "run", s.status, "cancel")
    s.waiting, s.gate = None, None
    for p in s.phases:
        if p.status == "running":
            p.status = _move(PHASE_MOVES, "phase", p.status, "fail")
            p.ended, p.error, p.pid = now, STOPPED, None


def _set_waiting(s: RunState, phase: str | None, now: float, what: str | None = None) -> None:
    p = s.phase(str(phase))
    if p.status != "running":
        raise IllegalTransition("phase", p.status, "wait")
    p.waiting = what


def _edit(s: RunState, phase: str | None, now: float, name: str = "", sha256: str = "") -> None:
    if s.waiting != "gate" or s.gate is None:
        raise IllegalTransition("run", f"{s.status} and not at a Gate", "edit")
    s.phase(s.gate).hashes[name] = sha256


def _manage(s: RunState, phase: str | None, now: float, managed: bool = True) -> None:
    s.managed = bool(managed)


def _accept(s: RunState, phase: str | None, now: float, name: str = "", sha256: str = "") -> None:
    """A person accepts output ``name`` of ``phase`` as it is now (changed outside a Gate)."""
    p = s.phase(str(phase))
    if name not in p.hashes:
        raise IllegalTransition("output", f"not recorded for {p.id}", "accept")
    p.hashes[name] = sha256


def _sandbox(s: RunState, phase: str | None, now: float, backend: str, isolated: bool) -> None:
    s.backend, s.isolated = backend, isolated


def _params(s: RunState, phase: str | None, now: float, params: dict[str, Any]) -> None:
    if s.status == "running":
        raise IllegalTransition("run", s.status, "change the parameters of")
    s.params = dict(params)


_HANDLERS: dict[str, Any] = {
    "start": _start_phase,
    "finish": _finish_phase,
    "fail": _fail_phase,
    "recover": _recover,
    "gate": _gate,
    "end": _finish_run,
    "approve": _approve,
    "reject": _reject,
    "rerun": _reopen,
    "cancel": _cancel,
    "waiting": _set_waiting,
    "edit": _edit,
    "sandbox": _sandbox,
    "reuse": _reuse,
    "params": _params,
    "manage": _manage,
    "accept": _accept,
}


# --- run.json ------------------------------------------------------------------------------


def save(state: RunState, path: Path) -> None:
    """Write run.json atomically: tmp file, fsync, os.replace, fsync of the folder."""
    data = json.dumps(state.to_dict(), indent=1, sort_keys=True).encode("utf-8") + b"\n"
    write_atomic(path, data)


def load(path: Path) -> RunState:
    """Read run.json; a missing, truncated, non-JSON, wrong or future file raises StateCorrupt."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise StateCorrupt(path, "missing") from None
    if not raw.strip():
        raise StateCorrupt(path, "empty")
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise StateCorrupt(path, f"not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise StateCorrupt(path, "not a JSON object")
    schema = data.get("schema")
    if not isinstance(schema, int):
        raise StateCorrupt(path, "no schema version")
    if schema > SCHEMA:
        raise StateCorrupt(path, f"schema {schema} is newer than this praxis ({SCHEMA}): upgrade")
    if not isinstance(data.get("phases"), list) or not all(
        isinstance(p, dict) for p in data["phases"]
    ):
        raise StateCorrupt(path, "wrong schema (phases must be a list of objects)")
    try:
        state = RunState.from_dict(data)
    except (TypeError, KeyError) as exc:
        raise StateCorrupt(path, f"wrong schema ({exc})") from None
    _validate(state, path)
    return state


# The JSON types each field of run.json may hold (None where the field is optional).
_RUN_TYPES: dict[str, tuple[type, ...]] = {
    "run": (str,),
    "flow": (str,),
    "status": (str,),
    "revision": (int,),
    "cursor": (int,),
    "waiting": (str, type(None)),
    "gate": (str, type(None)),
    "created": (int, float),
    "updated": (int, float),
    "backend": (str, type(None)),
    "isolated": (bool, type(None)),
    "error": (str, type(None)),
    "schema": (int,),
    "params": (dict,),
    "definition": (dict,),
    "seq": (int,),
    "managed": (bool,),
}
_PHASE_TYPES: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "status": (str,),
    "attempt": (int,),
    "started": (int, float, type(None)),
    "ended": (int, float, type(None)),
    "error": (str, type(None)),
    "hashes": (dict,),
    "waiting": (str, type(None)),
    "note": (str, type(None)),
    "pid": (int, type(None)),
    "digests": (dict,),
    "reused": (bool,),
    "backend": (str, type(None)),
    "isolated": (bool, type(None)),
}


def _check_types(obj: object, types: dict[str, tuple[type, ...]], where: str, path: Path) -> None:
    for name, allowed in types.items():
        value = getattr(obj, name)
        if isinstance(value, bool) and bool not in allowed:
            allowed = ()  # JSON true/false is not a number here
        if not isinstance(value, allowed):
            raise StateCorrupt(path, f"{where}{name} is {type(value).__name__} {value!r:.40}")


def _validate(state: RunState, path: Path) -> None:
    _check_types(state, _RUN_TYPES, "", path)
    for i, p in enumerate(state.phases):
        _check_types(p, _PHASE_TYPES, f"phases[{i}].", path)
    if state.status not in RUN_STATUSES:
        raise StateCorrupt(path, f"unknown run status {state.status!r}")
    for p in state.phases:
        if p.status not in PHASE_STATUSES:
            raise StateCorrupt(path, f"phase {p.id!r} has unknown status {p.status!r}")
    if not 0 <= state.cursor <= len(state.phases):
        raise StateCorrupt(path, f"cursor {state.cursor} out of range")
    if not isinstance(state.revision, int) or state.revision < 0:
        raise StateCorrupt(path, "bad revision")
