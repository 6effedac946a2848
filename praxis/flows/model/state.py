"""Run state: the data run.json holds. Pure: no I/O (run.json is store/state_file.py).

A run changes only by a transition (``transitions.apply``), which gives the state after it
and the events that record it.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

SCHEMA = 1

RunStatus = Literal["paused", "running", "done", "failed", "cancelled"]
PhaseStatus = Literal["pending", "running", "done", "failed", "stale"]
RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)
PHASE_STATUSES: tuple[PhaseStatus, ...] = get_args(PhaseStatus)

# The error of an attempt stopped by a cancel or a crash, and of one whose approval was lost.
STOPPED = "stopped before it finished"
APPROVAL_LOST = "approval lost in restart"


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
    # The retry under way (flow.yaml retries:): {"number", "of", "cause"}, and "due" (when
    # the next attempt starts) while it waits; kept through the retry's attempt, cleared
    # when one is done or the phase is re-run.
    retry: dict[str, Any] = field(default_factory=dict)
    # The values of the form approved at this attempt's Gate (cleared when an attempt starts).
    answers: dict[str, Any] = field(default_factory=dict)

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
