"""The receipt of a run: a machine-readable account of what happened, per phase.

``ok`` (every phase done, no output changed outside praxis), phases done/total, and a
ledger per phase: status, attempts, reused, seconds, outputs with sha256, the Gate decisions
with their actor, and the reviewer edits with a one-line diff summary (the full diff is in
``edits/<phase>/<attempt>.json``). An edit of an earlier attempt than the phase's last is
``superseded`` (its file was replaced), with ``carried_to`` the attempt it was re-applied to
(``--keep-edits``) or None; ``discarded`` says a re-run or reopen chose ``--discard-edits``
for it (its output put back as its phase wrote it, or its phase run again); ``carried`` lists
each re-application, with what did not apply. ``published`` lists each output written to a
table (its rows and sha256) and each publish that failed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model.events import Event


def receipt(state: Any, events: list[Event], changed: list[str]) -> dict[str, Any]:
    ledger: dict[str, dict[str, Any]] = {}
    for p in state.phases:
        ledger[p.id] = {
            "phase": p.id,
            "status": p.status,
            "attempts": p.attempt,
            "reused": p.reused,
            "reused_from": p.reused_from,
            "seconds": None if p.seconds is None else round(p.seconds, 3),
            "outputs": [{"name": n, "sha256": h} for n, h in sorted(p.hashes.items())],
            "error": p.error,
            "decisions": [],
            "edits": [],
            "carried": [],
        }
    if events:  # the event types load only for a log that has some
        _add_events(ledger, events)
        _supersede(ledger, {p.id: p.attempt for p in state.phases})
    done = sum(1 for p in state.phases if p.status == "done")
    return {
        "ok": state.status == "done" and not changed,
        "status": state.status,
        "done": done,
        "total": len(state.phases),
        "changed_outside": list(changed),
        "ledger": list(ledger.values()),
        "published": _published(events),
    }


def _published(events: list[Event]) -> list[dict[str, Any]]:
    """Each output written to a table (``praxis publish``): where, how, its rows and digest;
    and each publish that failed, the table as it was."""
    shown = ("output", "sha256", "connection", "table", "mode", "rows", "error", "at")
    return [
        {"status": "published" if e.kind == "published" else "failed"}
        | {k: getattr(e, k) for k in shown if hasattr(e, k)}
        for e in events
        if e.kind in ("published", "publish_failed")
    ]


def _add_events(ledger: dict[str, dict[str, Any]], events: list[Event]) -> None:
    """The Gate decisions and the edits, each under its phase."""
    from ..model.events import (
        ArtifactEdited,
        EditsCarried,
        GateApproved,
        GateRejected,
        RerunRequested,
    )

    for ev in events:
        if isinstance(ev, RerunRequested) and ev.edits == "discard":
            _discard(ledger, ev.edited)
            continue
        if isinstance(ev, GateApproved | GateRejected) and ev.phase in ledger:
            item: dict[str, Any] = {
                "decision": "approved" if isinstance(ev, GateApproved) else "rejected",
                "actor": ev.actor,
                "revision": ev.revision,
                "at": ev.at,
            }
            if isinstance(ev, GateRejected):
                item.update(reopen=ev.reopen, note=ev.note)
            elif ev.values:  # a Gate form's answers, bound to the attempt they approved
                item.update(attempt=ev.attempt, values=dict(ev.values))
            ledger[ev.phase]["decisions"].append(item)
        elif isinstance(ev, ArtifactEdited) and ev.phase in ledger:
            ledger[ev.phase]["edits"].append(
                {
                    "name": ev.name,
                    "by": ev.by,
                    "attempt": ev.attempt,
                    "old": ev.old,
                    "new": ev.sha256,
                    "revision": ev.revision,
                    "diff": ev.diff,
                    "discarded": False,
                }
            )
        elif isinstance(ev, EditsCarried) and ev.phase in ledger:
            ledger[ev.phase]["carried"].append(
                {
                    "name": ev.name,
                    "attempt": ev.attempt,
                    "applied": len(ev.applied),
                    "skipped": list(ev.skipped),
                }
            )


def _supersede(ledger: dict[str, dict[str, Any]], attempts: dict[str, int]) -> None:
    """Mark the edits of an attempt before the phase's last as superseded, and where each
    was re-applied (the next attempt that carried an edit of that output), if anywhere."""
    for phase, item in ledger.items():
        for edit in item["edits"]:
            edit["superseded"] = edit["attempt"] < attempts.get(phase, 0)
            edit["carried_to"] = None
            if edit["superseded"]:
                later = [
                    c["attempt"]
                    for c in item["carried"]
                    if c["name"] == edit["name"] and c["attempt"] > edit["attempt"]
                ]
                edit["carried_to"] = min(later) if later else None


def _discard(ledger: dict[str, dict[str, Any]], names: list[str]) -> None:
    """The edits recorded so far of outputs ``names`` were discarded (``--discard-edits``)."""
    for item in ledger.values():
        for edit in item["edits"]:
            if edit["name"] in names:
                edit["discarded"] = True
