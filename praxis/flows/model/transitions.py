"""The transitions of a run and their one table, ``TRANSITIONS``, keyed by class (as h11
keys its table by event class); ``machine.apply`` applies them.

Each transition is a frozen dataclass with keyword-only fields: what it does to the state
(``_move``, on the copy ``apply`` made, the statuses already set by its row of the table) and
the events that record it (``_record``: the catalogue, ``events.py``), from the state before
and after and the facts the state does not hold (the seconds a phase took, the folders a
re-run kept, who decided). A new transition is a class here and its row in the table (a test
holds that every class has one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from .moves import (
    AT_GATE,
    BETWEEN_PHASES,
    NOT_AFTER_GATE,
    REACHED,
    RECORDED,
    OfPhase,
    Rule,
    Transition,
    knock_on,
    stale_after,
)
from .state import APPROVAL_LOST, RUN_STATUSES, STOPPED, PhaseStatus, RunState, RunStatus

if TYPE_CHECKING:
    from . import events as ev


def record(t: Transition, before: RunState, after: RunState, now: float) -> tuple[ev.Event, ...]:
    """The events of ``t``, which made ``after`` of ``before``: the run's new status when it
    moved, then the transition's own."""
    _catalogue()
    made: list[ev.Event] = []
    if after.status != before.status:
        made.append(
            ev.RunStateChanged(status=after.status, revision=after.revision, reason=t.name, at=now)
        )
    return (*made, *t._record(before, after, now))


def _catalogue() -> None:
    """Bind ``ev``, the catalogue of events, the first time a run changes: a command that
    only reads states (status, runs) never loads it (tests/test_imports.py holds it)."""
    global ev
    from . import events as ev


# --- the transitions ------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Start(OfPhase):
    """A phase begins an attempt (``backend``: where it runs)."""

    name: ClassVar[str] = "start"
    pid: int | None = None
    backend: str | None = None
    isolated: bool | None = None

    def _move(self, s: RunState, now: float) -> None:
        p = s.phase(self.phase)
        p.attempt += 1
        p.started, p.ended, p.error, p.waiting, p.pid = now, None, None, None, self.pid
        p.hashes, p.digests, p.reused, p.reused_from, p.no_reuse = {}, {}, False, None, False
        p.edited, p.answers = {}, {}
        p.retry = {k: v for k, v in p.retry.items() if k != "due"}  # it runs now
        if self.backend is not None:
            p.backend, p.isolated = self.backend, self.isolated
            ran = [q for q in s.phases if q.backend is not None]
            s.backend = "+".join(sorted({str(q.backend) for q in ran}))
            s.isolated = all(bool(q.isolated) for q in ran)
        s.cursor = s.index(p.id)
        s.error = None

    def _record(self, before: RunState, after: RunState, now: float) -> list[ev.Event]:
        return [ev.PhaseStarted(phase=self.phase, attempt=after.phase(self.phase).attempt, at=now)]


@dataclass(frozen=True, kw_only=True)
class Reuse(OfPhase):
    """The phase's last done attempt stands: nothing it reads changed. With ``source``
    ("<run>/<attempt>"), a new attempt holds what that done attempt of another run recorded
    (``hashes``, ``digests``), and later done phases become stale."""

    name: ClassVar[str] = "reuse"
    source: str | None = None
    hashes: dict[str, str] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)

    def _move(self, s: RunState, now: float) -> None:
        p = s.phase(self.phase)
        p.reused, p.note, p.carry = True, None, {}  # the edited outputs stay as they are
        if self.source is not None:
            p.attempt += 1
            p.started, p.ended, p.error, p.waiting, p.pid = now, now, None, None, None
            p.hashes, p.digests = dict(self.hashes), dict(self.digests)
            p.reused_from = self.source
            p.failure, p.repeats, p.retries, p.edited = {}, 0, 0, {}  # another run's outputs
            stale_after(s, s.index(p.id))
        s.cursor = s.index(p.id) + 1
        s.error = None

    def _record(self, before: RunState, after: RunState, now: float) -> list[ev.Event]:
        run, _sep, attempt = (self.source or "").rpartition("/")
        return [
            ev.PhaseReused(
                phase=self.phase,
                attempt=after.phase(self.phase).attempt,
                source_run=run,
                source_attempt=int(attempt) if run else 0,
                at=now,
            )
        ]


@dataclass(frozen=True, kw_only=True)
class Finish(OfPhase):
    """The phase's attempt ended well: ``hashes`` of its outputs, ``digests`` of its
    pre-state and definition (reuse compares them), ``seconds`` it took."""

    name: ClassVar[str] = "finish"
    hashes: dict[str, str]
    digests: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    def _move(self, s: RunState, now: float) -> None:
        p = s.phase(self.phase)
        p.ended, p.hashes, p.waiting, p.pid, p.note = now, dict(self.hashes), None, None, None
        p.digests = dict(self.digests)
        p.failure, p.repeats, p.retries, p.retry = {}, 0, 0, {}
        s.cursor = s.index(p.id) + 1
        stale_after(s, s.index(p.id))

    def _record(self, before: RunState, after: RunState, now: float) -> list[ev.Event]:
        p = after.phase(self.phase)
        made: list[ev.Event] = [
            ev.PhaseDone(
                phase=p.id, attempt=p.attempt, seconds=self.seconds, hashes=dict(p.hashes), at=now
            )
        ]
        was = {q.id: q.status for q in before.phases}
        stale = [q.id for q in after.phases if q.status == "stale" and was[q.id] != "stale"]
        if stale:
            made.append(ev.PhasesStale(phases=stale, because=f"{p.id} ran again", at=now))
        return made


# What makes two failed attempts the same besides their error: the definition and the
# pre-state they ran from.
SAME = ("pre", "definition")


@dataclass(frozen=True, kw_only=True)
class Fail(OfPhase):
    """The attempt failed with ``error``; ``digests`` are its pre-state and definition, when
    it got as far as recording them. The same error from the same digests as the attempt
    before counts as a repeat; a stop (a cancel, a crash, a lost approval) counts as none."""

    name: ClassVar[str] = "fail"
    error: str
    digests: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    cause: str | None = None  # timeout, kernel_died, out_of_memory: what a retry may cover

    def _move(self, s: RunState, now: float) -> None:
        p = s.phase(self.phase)
        p.ended, p.error, p.waiting, p.pid = now, self.error, None, None
        if self.digests:
            p.digests = dict(self.digests)
        if self.error in (STOPPED, APPROVAL_LOST):
            p.failure, p.repeats, p.retries = {}, 0, 0
        else:
            same = {k: v for k, v in p.digests.items() if k in SAME}
            before = {k: v for k, v in p.failure.items() if k in SAME}
            failure = {"error": self.error, **same}
            if self.cause is not None:
                failure["cause"] = self.cause
            p.repeats = p.repeats + 1 if failure == p.failure else 1
            p.retries = p.retries + 1 if p.failure and same == before else 1
            p.failure = failure
        s.error = f"{p.id}: {self.error}"
        s.cursor = s.index(p.id)

    def _record(self, before: RunState, after: RunState, now: float) -> list[ev.Event]:
        p = after.phase(self.phase)
        failed = ev.PhaseFailed(
            phase=p.id, attempt=p.attempt, error=str(p.error), seconds=self.seconds, at=now
        )
        return [failed]


@dataclass(frozen=True, kw_only=True)
class Retry(OfPhase):
    """The failed phase is tried again (flow.yaml retries:): retry ``number`` of ``of``,
    for a failure of ``cause``, after ``backoff`` seconds. The run goes on running (its
    runner waits, then starts the next attempt from the phase's recorded pre-state)."""

    name: ClassVar[str] = "retry"
    number: int
    of: int
    cause: str
    backoff: float = 0.0

    def _move(self, s: RunState, now: float) -> None:
        p = s.phase(self.phase)
        p.retry = {"number": self.number, "of": self.of, "cause": self.cause}
        p.retry["due"] = now + self.backoff
        p.error = None
        s.error, s.cursor = None, s.index(p.id)

    def _record(self, before: RunState, after: RunState, now: float) -> list[ev.Event]:
        p = after.phase(self.phase)
        retrying = ev.PhaseRetrying(
            phase=p.id, attempt=p.attempt, number=self.number, of=self.of, cause=self.cause,
            backoff=self.backoff, due=float(p.retry["due"]), at=now,
        )  # fmt: skip
        return [retrying]


@dataclass(frozen=True, kw_only=True)
class Recover(OfPhase):
    """A phase left running by a process that died: it failed (its approval lost, when it
    waited for one)."""

    name: ClassVar[str] = "recover"

    def _fail(self, s: RunState) -> Fail:
        lost = s.phase(self.phase).waiting == "approval"
        return Fail(phase=self.phase, error=APPROVAL_LOST if lost else STOPPED)

    def _move(self, s: RunState, now: float) -> None:
        self._fail(s)._move(s, now)

    def _record(self, before: RunState, after: RunState, now: float) -> list[ev.Event]:
        return self._fail(before)._record(before, after, now)


@dataclass(frozen=True, kw_only=True)
class Wait(OfPhase):
    """A running phase waits (``what``: "approval") or stops waiting (None)."""

    name: ClassVar[str] = "waiting"
    verb: ClassVar[str] = "wait in"
    what: str | None = None

    def _move(self, s: RunState, now: float) -> None:
        s.phase(self.phase).waiting = self.what


@dataclass(frozen=True, kw_only=True)
class Gate(OfPhase):
    """The run pauses at the Gate after the phase; ``writable``, the outputs a reviewer may
    edit there (the flow names them). The edits carried across a re-run were re-applied
    (the runner does so before this move), so none is left to carry."""

    name: ClassVar[str] = "gate"
    verb: ClassVar[str] = "pause at a Gate after"
    writable: list[str] = field(default_factory=list)

    def _move(self, s: RunState, now: float) -> None:
        s.waiting, s.gate = "gate", self.phase
        s.phase(self.phase).carry = {}

    def _record(self, before: RunState, after: RunState, now: float) -> list[ev.Event]:
        return [ev.GateWaiting(phase=self.phase, writable=list(self.writable), at=now)]


@dataclass(frozen=True, kw_only=True)
class End(Transition):
    """No phase is left to run."""

    name: ClassVar[str] = "end"


@dataclass(frozen=True, kw_only=True)
class Approve(Transition):
    """The Gate is approved; ``acked``, the files the decider acknowledged ({name, sha256,
    receipt} each)."""

    name: ClassVar[str] = "approve"
    actor: str = "person"
    acked: list[dict[str, str]] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)  # the Gate's form, answered

    def _move(self, s: RunState, now: float) -> None:
        if s.gate is not None:  # the answers belong to this attempt of the Gate's phase
            s.phase(s.gate).answers = dict(self.values)
        s.waiting, s.gate = None, None

    def _record(self, before: RunState, after: RunState, now: float) -> list[ev.Event]:
        approved = ev.GateApproved(
            phase=str(before.gate),
            revision=after.revision,
            actor=self.actor,
            acked=list(self.acked),
            attempt=before.phase(str(before.gate)).attempt if before.gate else 0,
            values=dict(self.values),
            at=now,
        )
        return [approved]


@dataclass(frozen=True, kw_only=True)
class Rerun(OfPhase):
    """Go back to ``phase``: it becomes pending (with the note), later done phases stale
    (pending without ``reuse``: a pending phase is never reused). ``edits``: what becomes of
    the Gate edits of the phases that may run again; ``put_back``, the edited outputs of
    later phases the runner put back as their phase wrote them (discarded): those hold
    their phase's hashes again, no longer edited; a later phase with an edit discarded but
    not put back runs again (never reused). ``kept``: the folders its attempt's files are
    kept in; ``edited``: the Gate edits it may replace."""

    name: ClassVar[str] = "rerun"
    note: str | None = None
    reuse: bool = True
    edits: str | None = None  # keep | discard
    put_back: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)

    def _move(self, s: RunState, now: float) -> None:
        index = s.index(self.phase)
        for p in s.phases[index:]:
            if self.edits == "keep" and p.edited:
                p.carry = {n: [orig, p.hashes.get(n, "")] for n, orig in sorted(p.edited.items())}
            elif self.edits == "discard":
                p.carry = {}
        discarded = set(self.put_back) if self.edits == "discard" else set()
        for p in s.phases[index + 1 :]:
            for name in sorted(discarded & set(p.edited)):
                p.hashes[name] = p.edited.pop(name)
        target = s.phases[index]
        knock_on(target, "reset")
        target.note, target.error, target.waiting, target.pid = self.note, None, None, None
        target.retry = {}
        for later in s.phases[index + 1 :]:
            kept = self.reuse and not (self.edits == "discard" and later.edited)
            later.no_reuse = later.no_reuse or not kept
            if later.status == "done":
                knock_on(later, "stale" if kept else "reset")
            elif later.status == "stale" and not kept:
                knock_on(later, "reset")
            elif later.status in ("failed", "running"):
                knock_on(later, "reset")
        s.cursor, s.waiting, s.gate, s.error = index, None, None, None

    def _record(self, before: RunState, after: RunState, now: float) -> list[ev.Event]:
        return self._back(before, now, f"re-run from {self.phase}")

    def _back(self, before: RunState, now: float, because: str) -> list[ev.Event]:
        """The re-run requested, and the phases after it that were done."""
        requested = ev.RerunRequested(
            phase=self.phase,
            kept=list(self.kept),
            edits=self.edits or "",
            edited=list(self.edited),
            at=now,
        )
        index = before.index(self.phase)
        stale = [p.id for p in before.phases[index + 1 :] if p.status == "done"]
        if not stale:
            return [requested]
        return [requested, ev.PhasesStale(phases=stale, because=because, at=now)]


@dataclass(frozen=True, kw_only=True)
class Reject(Rerun):
    """The Gate reopens ``phase``, an earlier one (or its own), with a note: a re-run from
    there, decided at the Gate."""

    name: ClassVar[str] = "reject"
    note: str | None = ""
    actor: str = "person"
    acked: list[dict[str, str]] = field(default_factory=list)

    def _record(self, before: RunState, after: RunState, now: float) -> list[ev.Event]:
        rejected = ev.GateRejected(
            phase=str(before.gate),
            reopen=self.phase,
            note=self.note or "",
            revision=after.revision,
            actor=self.actor,
            acked=list(self.acked),
            at=now,
        )
        return [rejected, *self._back(before, now, f"{self.phase} was reopened at the Gate")]


@dataclass(frozen=True, kw_only=True)
class Cancel(Transition):
    """The run is cancelled; a phase running is stopped."""

    name: ClassVar[str] = "cancel"

    def _move(self, s: RunState, now: float) -> None:
        s.waiting, s.gate = None, None
        for p in s.phases:
            if p.status == "running":
                knock_on(p, "stop")
                p.ended, p.error, p.pid = now, STOPPED, None
                p.failure, p.repeats, p.retries = {}, 0, 0

    def _record(self, before: RunState, after: RunState, now: float) -> list[ev.Event]:
        return [ev.RunCancelled(revision=after.revision, at=now)]


@dataclass(frozen=True, kw_only=True)
class Edit(Transition):
    """A writable output of the Gate's phase changed at the Gate (``by``: reviewer, hand or
    carried; ``diff``: the edit's one-line summary)."""

    name: ClassVar[str] = "edit"
    output: str
    sha256: str
    by: str = "reviewer"
    diff: str = ""

    def _move(self, s: RunState, now: float) -> None:
        p = s.phase(str(s.gate))
        wrote = p.edited.get(self.output, p.hashes.get(self.output, ""))
        p.hashes[self.output] = self.sha256
        if self.sha256 == wrote:
            p.edited.pop(self.output, None)  # edited back to what the phase wrote
        else:
            p.edited[self.output] = wrote

    def _record(self, before: RunState, after: RunState, now: float) -> list[ev.Event]:
        gate = before.phase(str(before.gate))
        edited = ev.ArtifactEdited(
            name=self.output,
            sha256=self.sha256,
            by=self.by,
            old=gate.hashes.get(self.output, ""),
            phase=gate.id,
            attempt=gate.attempt,
            revision=after.revision,
            diff=self.diff,
            at=now,
        )
        return [edited]


@dataclass(frozen=True, kw_only=True)
class Accept(OfPhase):
    """A person accepts ``output`` of ``phase`` as it is now (changed outside a Gate)."""

    name: ClassVar[str] = "accept"
    output: str
    sha256: str
    actor: str = "person"

    def _move(self, s: RunState, now: float) -> None:
        s.phase(self.phase).hashes[self.output] = self.sha256

    def _record(self, before: RunState, after: RunState, now: float) -> list[ev.Event]:
        accepted = ev.OutputAccepted(
            name=self.output,
            phase=self.phase,
            old=before.phase(self.phase).hashes.get(self.output, ""),
            sha256=self.sha256,
            revision=after.revision,
            actor=self.actor,
            at=now,
        )
        return [accepted]


@dataclass(frozen=True, kw_only=True)
class Params(Transition):
    """The run's parameters change (between advances)."""

    name: ClassVar[str] = "params"
    verb: ClassVar[str] = "change the parameters of"
    params: dict[str, Any]

    def _move(self, s: RunState, now: float) -> None:
        s.params = dict(self.params)


@dataclass(frozen=True, kw_only=True)
class Manage(Transition):
    """Managed mode granted (an agent decides the run's delegatable Gates) or taken back."""

    name: ClassVar[str] = "manage"
    managed: bool = True
    actor: str = "person"

    def _move(self, s: RunState, now: float) -> None:
        s.managed = bool(self.managed)

    def _record(self, before: RunState, after: RunState, now: float) -> list[ev.Event]:
        return [
            ev.ManagedMode(granted=after.managed, revision=after.revision, actor=self.actor, at=now)
        ]


@dataclass(frozen=True, kw_only=True)
class Pause(Transition):
    """A run left running between phases by a process that is gone: the cursor is at the
    phase that runs next."""

    name: ClassVar[str] = "pause"


# --- the table ------------------------------------------------------------------------------

# The run's status after a transition that leaves it as it is, in any status.
_STAYS: dict[RunStatus, RunStatus] = {s: s for s in RUN_STATUSES}
_BETWEEN: dict[RunStatus, RunStatus] = {k: v for k, v in _STAYS.items() if k != "running"}
_BEGINS: dict[PhaseStatus, PhaseStatus] = {"pending": "running", "stale": "running"}
_STANDS: dict[PhaseStatus, PhaseStatus] = {"pending": "done", "stale": "done"}

TRANSITIONS: dict[type[Transition], Rule] = {
    # transition: Rule(run status -> after, phase status -> after, guards)
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
}
