"""The events each change of a run records: from the state before and after it, and the
facts the state does not hold. Pure, as ``state.py`` (whose ``apply`` calls ``events_of``).

``RECORDS`` holds a recorder per event of ``state.EVENTS`` that records more than the run's
status (a ``RunStateChanged``, first, whenever the status moved); ``FACTS`` names the keywords
of ``apply`` that are for the events only: its handler in ``state.HANDLERS`` never sees them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Concatenate

from . import events as ev
from . import state as st

# Each takes the state before and after, the phase the event names (if any), the time, and
# the event's keywords: its handler's and its facts (``FACTS``). An event without a recorder
# records nothing beyond the run's status (``RunStateChanged``, when it moved).

Recorder = Callable[Concatenate[st.RunState, st.RunState, str | None, float, ...], list[ev.Event]]

# The keywords of an event that are facts for its events only, not for the state.
FACTS: dict[st.Event, frozenset[str]] = {
    "finish": frozenset({"seconds"}),
    "fail": frozenset({"seconds"}),
    "gate": frozenset({"writable"}),
    "approve": frozenset({"actor", "acked"}),
    "reject": frozenset({"actor", "acked", "kept", "edited"}),
    "rerun": frozenset({"kept", "edited"}),
    "edit": frozenset({"by", "diff"}),
    "accept": frozenset({"actor"}),
    "manage": frozenset({"actor"}),
}


def events_of(
    before: st.RunState,
    after: st.RunState,
    event: st.Event,
    phase: str | None,
    now: float,
    kw: Mapping[str, Any],
) -> tuple[ev.Event, ...]:
    """The events of ``event``, which made ``after`` of ``before``: the run's new status when
    it moved, then the event's own."""
    made: list[ev.Event] = []
    if after.status != before.status:
        made.append(
            ev.RunStateChanged(status=after.status, revision=after.revision, reason=event, at=now)
        )
    record = RECORDS.get(event)
    if record is not None:
        made += record(before, after, phase, now, **kw)
    return tuple(made)


def _started(
    before: st.RunState, after: st.RunState, phase: str | None, now: float, **_: Any
) -> list[ev.Event]:
    p = after.phase(str(phase))
    return [ev.PhaseStarted(phase=p.id, attempt=p.attempt, at=now)]


def _reused(
    before: st.RunState,
    after: st.RunState,
    phase: str | None,
    now: float,
    source: str | None = None,
    **_: Any,
) -> list[ev.Event]:
    """The done attempt that stands: the phase's own (no ``source``), or another run's."""
    p = after.phase(str(phase))
    run, _sep, attempt = (source or "").rpartition("/")
    return [
        ev.PhaseReused(
            phase=p.id,
            attempt=p.attempt,
            source_run=run,
            source_attempt=int(attempt) if run else 0,
            at=now,
        )
    ]


def _finished(
    before: st.RunState,
    after: st.RunState,
    phase: str | None,
    now: float,
    seconds: float = 0.0,
    **_: Any,
) -> list[ev.Event]:
    p = after.phase(str(phase))
    made: list[ev.Event] = [
        ev.PhaseDone(phase=p.id, attempt=p.attempt, seconds=seconds, hashes=dict(p.hashes), at=now)
    ]
    was = {q.id: q.status for q in before.phases}
    stale = [q.id for q in after.phases if q.status == "stale" and was[q.id] != "stale"]
    if stale:
        made.append(ev.PhasesStale(phases=stale, because=f"{p.id} ran again", at=now))
    return made


def _failed(
    before: st.RunState,
    after: st.RunState,
    phase: str | None,
    now: float,
    seconds: float = 0.0,
    **_: Any,
) -> list[ev.Event]:
    p = after.phase(str(phase))
    return [
        ev.PhaseFailed(phase=p.id, attempt=p.attempt, error=str(p.error), seconds=seconds, at=now)
    ]


def _gated(
    before: st.RunState,
    after: st.RunState,
    phase: str | None,
    now: float,
    writable: list[str] | None = None,
    **_: Any,
) -> list[ev.Event]:
    """``writable``: the outputs a reviewer may edit at this Gate (the flow names them)."""
    return [ev.GateWaiting(phase=str(phase), writable=list(writable or []), at=now)]


def _approved(
    before: st.RunState,
    after: st.RunState,
    phase: str | None,
    now: float,
    actor: str = "person",
    acked: list[dict[str, str]] | None = None,
    **_: Any,
) -> list[ev.Event]:
    """``acked``: the files the decider acknowledged, {name, sha256} each."""
    return [
        ev.GateApproved(
            phase=str(before.gate),
            revision=after.revision,
            actor=actor,
            acked=list(acked or []),
            at=now,
        )
    ]


def _rejected(
    before: st.RunState,
    after: st.RunState,
    phase: str | None,
    now: float,
    note: str = "",
    actor: str = "person",
    acked: list[dict[str, str]] | None = None,
    **kw: Any,
) -> list[ev.Event]:
    rejected = ev.GateRejected(
        phase=str(before.gate),
        reopen=str(phase),
        note=note,
        revision=after.revision,
        actor=actor,
        acked=list(acked or []),
        at=now,
    )
    return [rejected, *_back(before, phase, now, f"{phase} was reopened at the Gate", **kw)]


def _reran(
    before: st.RunState, after: st.RunState, phase: str | None, now: float, **kw: Any
) -> list[ev.Event]:
    return _back(before, phase, now, f"re-run from {phase}", **kw)


def _back(
    before: st.RunState,
    phase: str | None,
    now: float,
    because: str,
    kept: list[str] | None = None,
    edited: list[str] | None = None,
    edits: str | None = None,
    **_: Any,
) -> list[ev.Event]:
    """Going back to ``phase``: ``kept``, the folders its attempt's files are kept in;
    ``edited``, the Gate edits it may replace (and ``edits``, the choice for them); the
    phases after it that were done."""
    requested = ev.RerunRequested(
        phase=str(phase),
        kept=list(kept or []),
        edits=edits or "",
        edited=list(edited or []),
        at=now,
    )
    index = before.index(str(phase))
    stale = [p.id for p in before.phases[index + 1 :] if p.status == "done"]
    if not stale:
        return [requested]
    return [requested, ev.PhasesStale(phases=stale, because=because, at=now)]


def _cancelled(
    before: st.RunState, after: st.RunState, phase: str | None, now: float, **_: Any
) -> list[ev.Event]:
    return [ev.RunCancelled(revision=after.revision, at=now)]


def _edited(
    before: st.RunState,
    after: st.RunState,
    phase: str | None,
    now: float,
    name: str = "",
    sha256: str = "",
    by: str = "reviewer",
    diff: str = "",
    **_: Any,
) -> list[ev.Event]:
    """``by``: reviewer, hand or carried; ``diff``: the edit's one-line summary."""
    gate = before.phase(str(before.gate))
    return [
        ev.ArtifactEdited(
            name=name,
            sha256=sha256,
            by=by,
            old=gate.hashes.get(name, ""),
            phase=gate.id,
            attempt=gate.attempt,
            revision=after.revision,
            diff=diff,
            at=now,
        )
    ]


def _accepted(
    before: st.RunState,
    after: st.RunState,
    phase: str | None,
    now: float,
    name: str = "",
    sha256: str = "",
    actor: str = "person",
    **_: Any,
) -> list[ev.Event]:
    return [
        ev.OutputAccepted(
            name=name,
            phase=str(phase),
            old=before.phase(str(phase)).hashes.get(name, ""),
            sha256=sha256,
            revision=after.revision,
            actor=actor,
            at=now,
        )
    ]


def _managed(
    before: st.RunState,
    after: st.RunState,
    phase: str | None,
    now: float,
    actor: str = "person",
    **_: Any,
) -> list[ev.Event]:
    return [ev.ManagedMode(granted=after.managed, revision=after.revision, actor=actor, at=now)]


RECORDS: dict[st.Event, Recorder] = {
    "start": _started,
    "reuse": _reused,
    "finish": _finished,
    "fail": _failed,
    "recover": _failed,
    "gate": _gated,
    "approve": _approved,
    "reject": _rejected,
    "rerun": _reran,
    "cancel": _cancelled,
    "edit": _edited,
    "accept": _accepted,
    "manage": _managed,
}
