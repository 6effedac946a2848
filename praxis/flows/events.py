"""events.jsonl: typed, append-only, one JSON object per line.

Every event is a frozen dataclass with keyword-only fields; ``kind`` names it in the file.
Modules that add kinds (agent phases, approvals) subclass ``Event`` and decorate with
``@event``. Reading tolerates a torn last line (a crash mid-append) and reports corruption
anywhere else.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from ..errors import RecordCorrupt

KINDS: dict[str, type[Event]] = {}
E = TypeVar("E", bound="type[Event]")


class EventLogCorrupt(RecordCorrupt):
    """Raised when a line other than the last of events.jsonl is not a valid event."""

    def __init__(self, path: Path, line: int, reason: str) -> None:
        super().__init__(f"{path}: line {line}: {reason}")
        self.path = path
        self.line = line


def event(cls: E) -> E:
    """Register an Event subclass under its ``kind``."""
    KINDS[cls.kind] = cls
    return cls


@dataclass(frozen=True, kw_only=True)
class Event:
    kind: ClassVar[str] = "event"
    at: float = field(default_factory=time.time)

    def to_json(self) -> str:
        """One line of JSON. Fields are encoded as they are (no deep copy first, as
        ``dataclasses.asdict`` makes: a phase's list of thousands of scratch files)."""
        data = {"kind": self.kind}
        data.update((name, getattr(self, name)) for name in _names(type(self)))
        return json.dumps(data, ensure_ascii=False, default=_plain)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Event:
        data = dict(data)
        kind = data.pop("kind", None)
        cls = KINDS.get(str(kind))
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


def _plain(value: Any) -> Any:
    """What json cannot encode itself: a dataclass as its fields, anything else as text."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)


@event
@dataclass(frozen=True, kw_only=True)
class Unknown(Event):
    """A line whose kind this version does not know (kept, not dropped)."""

    kind: ClassVar[str] = "unknown"
    data: dict[str, Any] = field(default_factory=dict)


@event
@dataclass(frozen=True, kw_only=True)
class RunBegun(Event):
    kind: ClassVar[str] = "run_begun"
    run: str
    flow: str
    phases: list[str]


@event
@dataclass(frozen=True, kw_only=True)
class SandboxOpened(Event):
    kind: ClassVar[str] = "sandbox_opened"
    backend: str
    isolated: bool
    detail: dict[str, Any] = field(default_factory=dict)


@event
@dataclass(frozen=True, kw_only=True)
class PhaseStarted(Event):
    kind: ClassVar[str] = "phase_started"
    phase: str
    attempt: int


@event
@dataclass(frozen=True, kw_only=True)
class InputsUploaded(Event):
    kind: ClassVar[str] = "inputs_uploaded"
    phase: str
    files: list[str]
    seconds: float


@event
@dataclass(frozen=True, kw_only=True)
class CodeRan(Event):
    kind: ClassVar[str] = "code_ran"
    phase: str
    label: str  # "script", "cell 3", "run_python"
    status: str
    seconds: float


@event
@dataclass(frozen=True, kw_only=True)
class FilesCollected(Event):
    kind: ClassVar[str] = "files_collected"
    phase: str
    outputs: list[str]
    scratch: list[str]


@event
@dataclass(frozen=True, kw_only=True)
class PhaseDone(Event):
    kind: ClassVar[str] = "phase_done"
    phase: str
    attempt: int
    seconds: float
    hashes: dict[str, str]


@event
@dataclass(frozen=True, kw_only=True)
class PhaseFailed(Event):
    kind: ClassVar[str] = "phase_failed"
    phase: str
    attempt: int
    error: str
    seconds: float = 0.0


@event
@dataclass(frozen=True, kw_only=True)
class WorkspaceRecorded(Event):
    """The workspace recorded before (``pre``) or after (``post``) a phase attempt."""

    kind: ClassVar[str] = "workspace_recorded"
    phase: str
    attempt: int
    which: str  # "pre" | "post"
    files: int
    stored: int  # files read into the store this time (new or changed)
    stored_bytes: int
    seconds: float


@event
@dataclass(frozen=True, kw_only=True)
class PhaseReused(Event):
    """A phase whose inputs and definition were those of a done attempt: that attempt stands
    (``source_run``, ``source_attempt``: the run's own last one, or another run's)."""

    kind: ClassVar[str] = "phase_reused"
    phase: str
    attempt: int
    source_run: str = ""  # empty in events written before runs reused each other's work
    source_attempt: int = 0


@event
@dataclass(frozen=True, kw_only=True)
class PhasesStale(Event):
    kind: ClassVar[str] = "phases_stale"
    phases: list[str]
    because: str


@event
@dataclass(frozen=True, kw_only=True)
class GateWaiting(Event):
    kind: ClassVar[str] = "gate_waiting"
    phase: str
    writable: list[str]


@event
@dataclass(frozen=True, kw_only=True)
class ArtifactEdited(Event):
    kind: ClassVar[str] = "artifact_edited"
    name: str
    sha256: str
    by: str = "reviewer"  # reviewer (web UI, API), hand (found changed on disk)
    old: str = ""  # the sha256 before the edit
    phase: str = ""
    attempt: int = 0
    revision: int = 0
    diff: str = ""  # a one-line summary; the diff is in edits/<phase>/<attempt>.json


@event
@dataclass(frozen=True, kw_only=True)
class GateApproved(Event):
    kind: ClassVar[str] = "gate_approved"
    phase: str
    revision: int
    actor: str = "person"
    acked: list[dict[str, str]] = field(default_factory=list)  # {name, sha256} acknowledged


@event
@dataclass(frozen=True, kw_only=True)
class GateRejected(Event):
    kind: ClassVar[str] = "gate_rejected"
    phase: str
    reopen: str
    note: str
    revision: int
    actor: str = "person"
    acked: list[dict[str, str]] = field(default_factory=list)


@event
@dataclass(frozen=True, kw_only=True)
class RerunRequested(Event):
    kind: ClassVar[str] = "rerun_requested"
    phase: str
    kept: list[str]  # attempt folders the earlier outputs were moved to


@event
@dataclass(frozen=True, kw_only=True)
class RunStateChanged(Event):
    kind: ClassVar[str] = "run_state"
    status: str
    revision: int
    reason: str = ""


@event
@dataclass(frozen=True, kw_only=True)
class RunCancelled(Event):
    kind: ClassVar[str] = "run_cancelled"
    revision: int


class EventLog:
    """Append-only writer and tolerant reader of one run's events.jsonl."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, ev: Event) -> None:
        line = (ev.to_json() + "\n").encode("utf-8")
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            self._drop_torn_tail(fd)
            os.write(fd, line)
        finally:
            os.close(fd)

    @staticmethod
    def _drop_torn_tail(fd: int) -> None:
        """Cut a last line that a crash left without its newline, so appends start clean."""
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return
        pos = size
        while pos > 0:
            start = max(0, pos - 65536)
            chunk = os.pread(fd, pos - start, start)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                os.ftruncate(fd, start + nl + 1)
                return
            pos = start
        os.ftruncate(fd, 0)

    def read(self) -> list[Event]:
        return list(self.iter())

    def iter(self) -> Iterator[Event]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return
        complete = raw.endswith(b"\n")
        lines = raw.split(b"\n")
        if complete:
            lines.pop()
        for number, line in enumerate(lines, start=1):
            if not complete and number == len(lines):
                return  # a crash mid-append left this line torn: dropped
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if not isinstance(data, dict):
                    raise ValueError("not a JSON object")
                yield Event.from_dict(data)
            except (ValueError, TypeError) as exc:
                raise EventLogCorrupt(self.path, number, str(exc)) from exc
