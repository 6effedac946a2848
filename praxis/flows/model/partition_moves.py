"""The transitions of a fan-out's partitions (DESIGN.md §17), rows of ``TRANSITIONS``.

Only the phase loop applies them (the one writer of run.json and events.jsonl): a partition's
worker reports what happened and the loop records it. A partition's state is a plain mapping
in ``PhaseState.partitions`` (status, attempt, started, ended, error, hashes, node, key,
source, force). ``_record`` imports the catalogue of events when it runs, as those of
``phase_moves.py`` do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from .moves import OfPhase, Transition
from .state import RunState

if TYPE_CHECKING:
    from .events import Event

PARTITION_STATUSES = ("pending", "running", "done", "failed")


@dataclass(frozen=True, kw_only=True)
class Partition(OfPhase):
    """Partition ``partition`` of ``phase`` moves to ``status``: ``running`` begins an
    attempt (``node``: where), ``done`` (``hashes``, ``key``; ``source``: restored from
    settled work, no attempt ran), ``failed`` (``error``), ``pending`` (a person asked it to
    run again: ``force``, never restored from settled work)."""

    name: ClassVar[str] = "partition"
    partition: str
    status: str
    node: str = ""
    error: str = ""
    key: str = ""
    source: str = ""
    force: bool = False
    hashes: dict[str, str] = field(default_factory=dict)

    def _move(self, s: RunState, now: float) -> None:
        p = s.phase(self.phase)
        part: dict[str, Any] = p.partitions.setdefault(self.partition, {"attempt": 0})
        if self.status == "running" or (self.status == "done" and self.source):
            part["attempt"] = int(part.get("attempt", 0)) + 1
            part.update(started=now, ended=None, error=None, hashes={}, node=self.node)
            part.update(source=self.source or None, force=False)
        if self.status in ("done", "failed"):
            part["ended"] = now
        if self.status == "done":
            part.update(hashes=dict(self.hashes), key=self.key)
        if self.status == "failed":
            part["error"] = self.error
        if self.status == "pending":
            part["force"] = self.force
        part["status"] = self.status

    def _record(self, before: RunState, after: RunState, now: float) -> list[Event]:
        from . import events as ev

        part = after.phase(self.phase).partitions[self.partition]
        started, ended = part.get("started"), part.get("ended")
        seconds = ended - started if self.status != "running" and started and ended else 0.0
        return [
            ev.PartitionChanged(
                phase=self.phase,
                partition=self.partition,
                status=self.status,
                attempt=int(part.get("attempt", 0)),
                node=self.node,
                seconds=float(seconds),
                error=self.error,
                source=self.source,
                at=now,
            )
        ]


@dataclass(frozen=True, kw_only=True)
class Backfill(Transition):
    """This run runs only ``only`` of each fan-out's partitions (``a..b`` or ``a,b``)."""

    name: ClassVar[str] = "backfill"
    only: str | None = None

    def _move(self, s: RunState, now: float) -> None:
        s.only = self.only
