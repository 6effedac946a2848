"""The base of every event, and the reading of a line as one: ``Event`` (written as one JSON
object per line, read back as the class its ``kind`` names, ``Event.from_dict``), ``Unknown``
(a line of a kind nobody knows, kept whole), and the kinds this process reads: those of the
catalogue, which ``events.py`` lays in as it is imported (the one module that lists them, and
the one the rest of praxis imports events from), then those from outside praxis (``register``,
the ``praxis.events`` entry points).

The catalogue's classes are in the modules named for what they record (``run_events.py``,
``gate_events.py``, ``agent_events.py``, ``notice_events.py``, ``trace_events.py``); each
imports this base, and ``events.py`` imports them all.

The events of one change of a run (``machine.apply``) are stamped in the file with the
revision of run.json the change made (``"rev"``, ``Event.stamped``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

from sandbox import plugins

log = logging.getLogger("praxis")
E = TypeVar("E", bound="type[Event]")

# The entry-point group of event kinds from outside praxis: each entry names an Event class.
ENTRY_POINTS = "praxis.events"
# The key of a line that stamps it as an event of the change that made this revision.
REV = "rev"


class KindTaken(ValueError):
    """Raised by ``register`` for a kind the catalogue, or another registered class, has."""

    def __init__(self, kind: str, holder: type[Event]) -> None:
        super().__init__(
            f"event kind {kind!r} is taken by {holder.__module__}.{holder.__qualname__}: "
            "name the add-on's kind differently"
        )
        self.kind = kind
        self.holder = holder


@dataclass(frozen=True, kw_only=True)
class Event:
    kind: ClassVar[str] = "event"
    at: float = field(default_factory=time.time)

    def to_json(self) -> str:
        """One line of JSON. Fields are encoded as they are (no deep copy first, as
        ``dataclasses.asdict`` makes: a phase's list of thousands of scratch files)."""
        return json.dumps(self._data(), ensure_ascii=False, default=plain)

    def stamped(self, revision: int) -> dict[str, Any]:
        """The event as the JSON object of its line, stamped as an event of the change that
        made ``revision`` (as run.json holds it, and then events.jsonl)."""
        data: dict[str, Any] = {"kind": self.kind, REV: revision}
        data.update(json.loads(self.to_json()))
        return data

    def _data(self) -> dict[str, Any]:
        data = {"kind": self.kind}
        data.update((name, getattr(self, name)) for name in _names(type(self)))
        return data

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Event:
        data = dict(data)
        kind = data.pop("kind", None)
        cls = kind_of(str(kind))
        if cls is None:
            return Unknown(at=float(data.get("at", 0.0)), data={"kind": kind, **data})
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


_NAMES: dict[type[Event], tuple[str, ...]] = {}


def _names(cls: type[Event]) -> tuple[str, ...]:
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def plain(value: Any) -> Any:
    """What json cannot encode itself (``json.dumps(default=plain)``): a dataclass as its
    fields, anything else as text."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)


@dataclass(frozen=True, kw_only=True)
class Unknown(Event):
    """A line whose kind this process does not know (kept, not dropped)."""

    kind: ClassVar[str] = "unknown"
    data: dict[str, Any] = field(default_factory=dict)


# --- the kinds this process reads ----------------------------------------------------------

# The catalogue's kinds (``events.KINDS``), laid in by ``catalogue`` as events.py is imported.
_catalogued: Mapping[str, type[Event]] = MappingProxyType({})
# Kinds from outside praxis, registered in this process (``register``, entry points).
_ADDED: dict[str, type[Event]] = {}
_entry_points_read = False


def catalogue(classes: Sequence[type[Event]]) -> Mapping[str, type[Event]]:
    """The kinds of ``classes``, praxis's every kind (``events.CATALOGUE``), as the first ones
    this process reads lines as: called once, by events.py. Two classes of one kind are
    refused (KindTaken)."""
    global _catalogued
    table: dict[str, type[Event]] = {}
    for cls in classes:
        if cls.kind in table:
            raise KindTaken(cls.kind, table[cls.kind])
        table[cls.kind] = cls
    _catalogued = MappingProxyType(table)
    return _catalogued


def register(cls: E) -> E:
    """Read and write events of ``cls.kind``, a kind from outside praxis, in this process
    (also a class decorator). An add-on that must be read in any process names the class
    in the ``praxis.events`` entry-point group as well. A kind that the catalogue or another
    registered class has is refused (KindTaken); registering a class again does nothing."""
    if not (isinstance(cls, type) and issubclass(cls, Event) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"{cls!r} is not an Event dataclass")
    if REV in _names(cls):
        raise TypeError(f"{cls.__qualname__} has a field {REV!r}: the log stamps lines with it")
    holder = _catalogued.get(cls.kind) or _ADDED.get(cls.kind)
    if holder is not None and holder is not cls:
        raise KindTaken(cls.kind, holder)
    _ADDED[cls.kind] = cls
    return cls


def kind_of(kind: str) -> type[Event] | None:
    """The class of events of ``kind``: the catalogue's, a registered one's, else one the
    ``praxis.events`` entry points name (read once, when a kind is first not found)."""
    cls = _catalogued.get(kind) or _ADDED.get(kind)
    if cls is None and not _entry_points_read:
        _read_entry_points()
        cls = _ADDED.get(kind)
    return cls


def _read_entry_points() -> None:
    """Register the classes the ``praxis.events`` entry points name. One that does not load,
    or is no Event, is logged and left out: its lines read as ``Unknown``."""
    global _entry_points_read
    _entry_points_read = True
    for target in plugins.declared(ENTRY_POINTS).values():
        try:
            register(plugins.load(target))  # type: ignore[type-var]  # register checks what it is
        except Exception as exc:  # a broken add-on never makes a run's log unreadable
            log.warning("event kinds of entry point %s left out: %s", target, exc)
