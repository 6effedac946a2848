"""The transitions of a run as a whole, rows of ``transitions.TRANSITIONS``: it pauses at a
Gate, and what is decided there (approve, reject, an output edited); a re-run from a phase; an
output changed outside praxis accepted; a cancel; its parameters changed; managed mode granted
or taken back; a pause between phases; its end. Each moves the state (``_move``) and names the
events that record it (``_record``), as ``transitions.py`` says; ``_record`` imports the
catalogue of events when it runs, so that a command that only reads states (status, runs)
never loads it (tests/test_imports.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from .moves import OfPhase, Transition, knock_on
from .state import STOPPED, RunState

if TYPE_CHECKING:
    from .events import Event


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

    def _record(self, before: RunState, after: RunState, now: float) -> list[Event]:
        from . import events as ev

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

    def _record(self, before: RunState, after: RunState, now: float) -> list[Event]:
        from . import events as ev

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

    def _record(self, before: RunState, after: RunState, now: float) -> list[Event]:
        return self._back(before, now, f"re-run from {self.phase}")

    def _back(self, before: RunState, now: float, because: str) -> list[Event]:
        """The re-run requested, and the phases after it that were done."""
        from . import events as ev

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

    def _record(self, before: RunState, after: RunState, now: float) -> list[Event]:
        from . import events as ev

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

    def _record(self, before: RunState, after: RunState, now: float) -> list[Event]:
        from . import events as ev

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

    def _record(self, before: RunState, after: RunState, now: float) -> list[Event]:
        from . import events as ev

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

    def _record(self, before: RunState, after: RunState, now: float) -> list[Event]:
        from . import events as ev

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

    def _record(self, before: RunState, after: RunState, now: float) -> list[Event]:
        from . import events as ev

        return [
            ev.ManagedMode(granted=after.managed, revision=after.revision, actor=self.actor, at=now)
        ]


@dataclass(frozen=True, kw_only=True)
class Pause(Transition):
    """A run left running between phases by a process that is gone: the cursor is at the
    phase that runs next."""

    name: ClassVar[str] = "pause"
