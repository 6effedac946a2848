"""The catalogue of events: what events.jsonl records, typed, one JSON object per line (the
file is read and written by ``store/event_log.py``).

Every event is a frozen dataclass with keyword-only fields; ``kind`` names it in the file.
``CATALOGUE`` lists every kind praxis writes, so any process reads any run's events as their
classes, whatever it has imported. A kind from outside praxis comes in through ``register``
or the ``praxis.events`` entry-point group (read when a line names a kind nobody
registered); a kind nobody knows is read as ``Unknown``, kept whole.

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


# --- the run -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RunBegun(Event):
    """A run was made (its run.json at revision 0)."""

    kind: ClassVar[str] = "run_begun"
    run: str
    flow: str
    phases: list[str]


@dataclass(frozen=True, kw_only=True)
class RunStateChanged(Event):
    """The run's status changed; ``reason`` is the transition (``Transition.name``)."""

    kind: ClassVar[str] = "run_state"
    status: str
    revision: int
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class RunCancelled(Event):
    kind: ClassVar[str] = "run_cancelled"
    revision: int


@dataclass(frozen=True, kw_only=True)
class SandboxOpened(Event):
    kind: ClassVar[str] = "sandbox_opened"
    backend: str
    isolated: bool
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class SandboxEnded(Event):
    """The process that advanced the run died without closing its sandbox (SIGKILL, a
    crash); the sandbox's watchdog ended what it ran. Recorded by the next command that
    recovers the run."""

    kind: ClassVar[str] = "sandbox_ended"
    owner: int  # the pid of the process that died
    ended: list[str]  # what the watchdog ended: "container NAME", "process group PID"
    when: float = 0.0  # when the watchdog ended them


@dataclass(frozen=True, kw_only=True)
class ManagedMode(Event):
    """A person let an agent decide the run's delegatable Gates (or took that back)."""

    kind: ClassVar[str] = "managed_mode"
    granted: bool
    revision: int
    actor: str = "person"


# --- a phase -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PhaseStarted(Event):
    kind: ClassVar[str] = "phase_started"
    phase: str
    attempt: int


@dataclass(frozen=True, kw_only=True)
class InputsUploaded(Event):
    kind: ClassVar[str] = "inputs_uploaded"
    phase: str
    files: list[str]
    seconds: float


@dataclass(frozen=True, kw_only=True)
class CodeRan(Event):
    kind: ClassVar[str] = "code_ran"
    phase: str
    label: str  # "script", "cell 3", "run_python"
    status: str
    seconds: float


@dataclass(frozen=True, kw_only=True)
class FilesCollected(Event):
    kind: ClassVar[str] = "files_collected"
    phase: str
    outputs: list[str]
    scratch: list[str]


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


@dataclass(frozen=True, kw_only=True)
class PhaseDone(Event):
    kind: ClassVar[str] = "phase_done"
    phase: str
    attempt: int
    seconds: float
    hashes: dict[str, str]


@dataclass(frozen=True, kw_only=True)
class PhaseFailed(Event):
    kind: ClassVar[str] = "phase_failed"
    phase: str
    attempt: int
    error: str
    seconds: float = 0.0


@dataclass(frozen=True, kw_only=True)
class PhaseRetrying(Event):
    """Failed ``attempt`` (its ``cause``) tried again: retry ``number`` of ``of``, at ``due``."""

    kind: ClassVar[str] = "phase_retrying"
    phase: str
    attempt: int
    number: int
    of: int
    cause: str
    backoff: float = 0.0
    due: float = 0.0


@dataclass(frozen=True, kw_only=True)
class PhaseReused(Event):
    """A phase whose inputs and definition were those of a done attempt: that attempt stands
    (``source_run``, ``source_attempt``: the run's own last one, or another run's)."""

    kind: ClassVar[str] = "phase_reused"
    phase: str
    attempt: int
    source_run: str = ""  # empty in events written before runs reused each other's work
    source_attempt: int = 0


@dataclass(frozen=True, kw_only=True)
class PartitionChanged(Event):
    """A partition of a fan-out (DESIGN.md §17) started, ended, or was reused or reset."""

    kind: ClassVar[str] = "partition_changed"
    phase: str
    partition: str
    status: str  # running | done | failed | pending
    attempt: int
    node: str = ""  # where it ran: the Ray node's id, else empty
    seconds: float = 0.0
    error: str = ""
    source: str = ""  # reused: "<run>/<phase>/<partition>/<attempt>" it was restored from


@dataclass(frozen=True, kw_only=True)
class PhasesStale(Event):
    kind: ClassVar[str] = "phases_stale"
    phases: list[str]
    because: str


@dataclass(frozen=True, kw_only=True)
class OutputAccepted(Event):
    """A person accepted an output changed outside praxis as its phase's."""

    kind: ClassVar[str] = "output_accepted"
    name: str
    phase: str
    old: str
    sha256: str
    revision: int
    actor: str = "person"


# --- a Gate --------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class GateWaiting(Event):
    kind: ClassVar[str] = "gate_waiting"
    phase: str
    writable: list[str]


@dataclass(frozen=True, kw_only=True)
class ArtifactEdited(Event):
    kind: ClassVar[str] = "artifact_edited"
    name: str
    sha256: str
    by: str = "reviewer"  # reviewer (web UI, API), hand (found changed on disk), carried
    old: str = ""  # the sha256 before the edit
    phase: str = ""
    attempt: int = 0
    revision: int = 0
    diff: str = ""  # a one-line summary; the diff is in edits/<phase>/<attempt>.json


@dataclass(frozen=True, kw_only=True)
class GateApproved(Event):
    kind: ClassVar[str] = "gate_approved"
    phase: str
    revision: int
    actor: str = "person"
    acked: list[dict[str, str]] = field(default_factory=list)  # {name, sha256, receipt} read
    attempt: int = 0  # the Gate's attempt the values belong to (0: events before forms)
    values: dict[str, Any] = field(default_factory=dict)  # its form's answers


@dataclass(frozen=True, kw_only=True)
class GateRejected(Event):
    kind: ClassVar[str] = "gate_rejected"
    phase: str
    reopen: str
    note: str
    revision: int
    actor: str = "person"
    acked: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class DecisionRefused(Event):
    """A Gate decision that was not allowed (an agent's, or one while checks fail)."""

    kind: ClassVar[str] = "decision_refused"
    phase: str
    decision: str
    actor: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class FileRead(Event):
    """A file of a run read through praxis (``praxis read``, MCP ``read_file``, the page):
    the receipt a Gate decision passes to show it was read, as it was then (``sha256``)."""

    kind: ClassVar[str] = "file_read"
    receipt: str  # the receipt's id
    path: str  # relative to the run's folder
    sha256: str  # of the bytes read
    reader: str  # person | agent
    name: str = ""  # the output's name, when the file is one


@dataclass(frozen=True, kw_only=True)
class RerunRequested(Event):
    kind: ClassVar[str] = "rerun_requested"
    phase: str
    kept: list[str]  # attempt folders the earlier outputs were moved to
    edits: str = ""  # keep | discard: the choice for the Gate edits it may replace
    edited: list[str] = field(default_factory=list)  # those outputs


@dataclass(frozen=True, kw_only=True)
class EditsCarried(Event):
    """A Gate edit kept across a re-run (``--keep-edits``), re-applied to the new output."""

    kind: ClassVar[str] = "edits_carried"
    phase: str
    attempt: int
    name: str
    applied: list[str]  # each edit applied, by row key
    skipped: list[str]  # each edit that no longer applies, and why


# --- an agent phase's turn -----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ModelCalled(Event):
    """One chat-model call of an agent turn (``call`` counts from 1)."""

    kind: ClassVar[str] = "model_called"
    phase: str
    call: int
    tool_calls: list[str] = field(default_factory=list)  # tool names the model asked for
    text_chars: int = 0  # length of the model's text answer
    seconds: float = 0.0


@dataclass(frozen=True, kw_only=True)
class ToolCalled(Event):
    """One tool call; ``status`` is ok, error (the code or query failed) or refused."""

    kind: ClassVar[str] = "tool_called"
    phase: str
    tool: str
    args: dict[str, Any] = field(default_factory=dict)  # clipped for the log
    status: str = "ok"
    detail: str = ""
    files: list[str] = field(default_factory=list)  # workspace files the call wrote
    seconds: float = 0.0


@dataclass(frozen=True, kw_only=True)
class ApprovalAsked(Event):
    """Code (or an ad-hoc query) that is not prepared waits for a person."""

    kind: ClassVar[str] = "approval_asked"
    phase: str
    tool: str
    code: str
    sha256: str


@dataclass(frozen=True, kw_only=True)
class ApprovalAnswered(Event):
    """The answer; ``by`` is "approver", or "nobody" when no one could be asked."""

    kind: ClassVar[str] = "approval_answered"
    phase: str
    tool: str
    sha256: str
    approved: bool
    by: str = "approver"


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


# --- trace.jsonl (``PRAXIS_TRACE=1``): a log of its own, of the same form ------------------


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


# --- the catalogue -------------------------------------------------------------------------

# Every kind praxis writes. A line is read as the class its ``kind`` names here; each class
# is written and read as its fields (``Event.to_json``, ``Event.from_dict``). Add a kind here
# (a test holds that every Event class of praxis is listed), never by importing a module.
CATALOGUE: tuple[type[Event], ...] = (
    # the run
    RunBegun,
    RunStateChanged,
    RunCancelled,
    SandboxOpened,
    SandboxEnded,
    ManagedMode,
    # a phase
    PhaseStarted,
    InputsUploaded,
    CodeRan,
    FilesCollected,
    WorkspaceRecorded,
    PhaseDone,
    PhaseFailed,
    PhaseRetrying,
    PhaseReused,
    PartitionChanged,
    PhasesStale,
    OutputAccepted,
    # a Gate
    GateWaiting,
    ArtifactEdited,
    GateApproved,
    GateRejected,
    DecisionRefused,
    FileRead,
    RerunRequested,
    EditsCarried,
    # an agent phase's turn
    ModelCalled,
    ToolCalled,
    ApprovalAsked,
    ApprovalAnswered,
    # publishing
    Published,
    PublishFailed,
    # notifiers
    Notified,
    GateEscalated,
    NotifyFailed,
    # trace.jsonl
    TraceStarted,
    Traced,
    TraceFull,
    # a line of a kind nobody knows
    Unknown,
)


def _by_kind(classes: Sequence[type[Event]]) -> Mapping[str, type[Event]]:
    table: dict[str, type[Event]] = {}
    for cls in classes:
        if cls.kind in table:
            raise KindTaken(cls.kind, table[cls.kind])
        table[cls.kind] = cls
    return MappingProxyType(table)


KINDS: Mapping[str, type[Event]] = _by_kind(CATALOGUE)

# Kinds from outside praxis, registered in this process (``register``, entry points).
_ADDED: dict[str, type[Event]] = {}
_entry_points_read = False


def register(cls: E) -> E:
    """Read and write events of ``cls.kind``, a kind from outside praxis, in this process
    (also a class decorator). An add-on that must be read in any process names the class
    in the ``praxis.events`` entry-point group as well. A kind that the catalogue or another
    registered class has is refused (KindTaken); registering a class again does nothing."""
    if not (isinstance(cls, type) and issubclass(cls, Event) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"{cls!r} is not an Event dataclass")
    if REV in _names(cls):
        raise TypeError(f"{cls.__qualname__} has a field {REV!r}: the log stamps lines with it")
    holder = KINDS.get(cls.kind) or _ADDED.get(cls.kind)
    if holder is not None and holder is not cls:
        raise KindTaken(cls.kind, holder)
    _ADDED[cls.kind] = cls
    return cls


def kind_of(kind: str) -> type[Event] | None:
    """The class of events of ``kind``: the catalogue's, a registered one's, else one the
    ``praxis.events`` entry points name (read once, when a kind is first not found)."""
    cls = KINDS.get(kind) or _ADDED.get(kind)
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
