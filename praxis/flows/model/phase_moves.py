"""The transitions of a phase's attempt, rows of ``transitions.TRANSITIONS``: it starts, stands
as a done attempt (reused), finishes, fails, is retried, is recovered after the process that
ran it died, or waits for an approval. Each moves the state (``_move``) and names the events
that record it (``_record``), as ``transitions.py`` says; ``_record`` imports the catalogue of
events when it runs, so that a command that only reads states (status, runs) never loads it
(tests/test_imports.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from .moves import OfPhase, stale_after
from .state import APPROVAL_LOST, STOPPED, RunState

if TYPE_CHECKING:
    from .events import Event


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

    def _record(self, before: RunState, after: RunState, now: float) -> list[Event]:
        from . import events as ev

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

    def _record(self, before: RunState, after: RunState, now: float) -> list[Event]:
        from . import events as ev

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

    def _record(self, before: RunState, after: RunState, now: float) -> list[Event]:
        from . import events as ev

        p = after.phase(self.phase)
        made: list[Event] = [
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

    def _record(self, before: RunState, after: RunState, now: float) -> list[Event]:
        from . import events as ev

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

    def _record(self, before: RunState, after: RunState, now: float) -> list[Event]:
        from . import events as ev

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

    def _record(self, before: RunState, after: RunState, now: float) -> list[Event]:
        return self._fail(before)._record(before, after, now)


@dataclass(frozen=True, kw_only=True)
class Wait(OfPhase):
    """A running phase waits (``what``: "approval") or stops waiting (None)."""

    name: ClassVar[str] = "waiting"
    verb: ClassVar[str] = "wait in"
    what: str | None = None

    def _move(self, s: RunState, now: float) -> None:
        s.phase(self.phase).waiting = self.what
