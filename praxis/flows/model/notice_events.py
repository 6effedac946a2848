"""The events of what a run sends out of itself: a notifier told (that the run waits at a Gate,
failed or is done), a Gate past its deadline escalated, a notifier failed; an approved output
published to a table (DESIGN.md §18), or its publish failed. Listed in the catalogue,
``events.py``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .event_base import Event

# --- notifiers -----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Notified(Event):
    """A notifier was told that the run waits at a Gate, failed or is done."""

    kind: ClassVar[str] = "notified"
    target: str  # the profile target and how it was told: "team (webhook HOST)", "me (command)"
    about: str  # gate | failed | done


@dataclass(frozen=True, kw_only=True)
class GateEscalated(Event):
    """A Gate waited past its deadline: its ``escalate`` targets are told (once; recorded
    before they are, so a keeper that restarts never tells them twice)."""

    kind: ClassVar[str] = "gate_escalated"
    phase: str
    since: float  # when the Gate began waiting (its gate_waiting event)
    targets: list[str]


@dataclass(frozen=True, kw_only=True)
class NotifyFailed(Event):
    """A notifier failed; the run goes on as it was."""

    kind: ClassVar[str] = "notify_failed"
    target: str
    about: str
    error: str


# --- publishing (DESIGN.md §18) ------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Published(Event):
    """An approved output written to a table in one transaction (``praxis publish``)."""

    kind: ClassVar[str] = "published"
    output: str
    sha256: str  # of the output as written: the same digest again is a no-op
    connection: str  # the profile connection, by name
    table: str
    mode: str  # replace | upsert
    rows: int  # rows written
    approved_by: str = "person"  # who approved the run's last Gate


@dataclass(frozen=True, kw_only=True)
class PublishFailed(Event):
    """A publish refused or failed; the table is as it was (its transaction rolled back)."""

    kind: ClassVar[str] = "publish_failed"
    output: str
    connection: str
    table: str
    error: str
