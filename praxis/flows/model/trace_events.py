"""The events of trace.jsonl (``PRAXIS_TRACE=1``), a log of its own of the same form as
events.jsonl: a command on the run as it starts, as it ends with the route evaluated after it,
and the trace full. Listed in the catalogue, ``events.py``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .event_base import Event


@dataclass(frozen=True, kw_only=True)
class TraceStarted(Event):
    """A command on the run, as it starts (a command killed before it ends has only this)."""

    kind: ClassVar[str] = "trace_started"
    argv: list[str]  # as given, from the program's name on
    actor: str
    pid: int  # the process that ran it: its ``Traced`` line, if it ended, names the same


@dataclass(frozen=True, kw_only=True)
class Traced(Event):
    """A command on the run, and the route evaluated after it."""

    kind: ClassVar[str] = "traced"
    argv: list[str]  # as given, from the program's name on
    actor: str
    exit: int
    facts: dict[str, Any]
    route: dict[str, Any]
    pid: int = 0  # the process that ran it (0: traced before commands had a start line)


@dataclass(frozen=True, kw_only=True)
class TraceFull(Event):
    """The trace reached its bound: later commands are not traced."""

    kind: ClassVar[str] = "trace_full"
    bytes: int
