"""The catalogue of events: what events.jsonl records, typed, one JSON object per line (the
file is read and written by ``store/event_log.py``), and the one module praxis imports events
from.

Every event is a frozen dataclass with keyword-only fields; ``kind`` names it in the file.
``CATALOGUE`` lists every kind praxis writes, so any process reads any run's events as their
classes, whatever it has imported. A kind from outside praxis comes in through ``register``
or the ``praxis.events`` entry-point group (read when a line names a kind nobody
registered); a kind nobody knows is read as ``Unknown``, kept whole (``event_base.py``: the
base of every event, and the reading of a line as one).

The classes are in the modules named for what they record, each imported here: a run and its
phases (``run_events.py``), a Gate and its decisions (``gate_events.py``), an agent phase's
turn (``agent_events.py``), what a run sends out of itself (``notice_events.py``: notifiers,
publishing) and trace.jsonl (``trace_events.py``).
"""

from __future__ import annotations

from collections.abc import Mapping

from .agent_events import ApprovalAnswered as ApprovalAnswered
from .agent_events import ApprovalAsked as ApprovalAsked
from .agent_events import ModelCalled as ModelCalled
from .agent_events import ToolCalled as ToolCalled
from .event_base import ENTRY_POINTS as ENTRY_POINTS
from .event_base import REV as REV
from .event_base import Event as Event
from .event_base import KindTaken as KindTaken
from .event_base import Unknown as Unknown
from .event_base import catalogue as _catalogue
from .event_base import kind_of as kind_of
from .event_base import plain as plain
from .event_base import register as register
from .gate_events import ArtifactEdited as ArtifactEdited
from .gate_events import DecisionRefused as DecisionRefused
from .gate_events import EditsCarried as EditsCarried
from .gate_events import FileRead as FileRead
from .gate_events import GateApproved as GateApproved
from .gate_events import GateRejected as GateRejected
from .gate_events import GateWaiting as GateWaiting
from .gate_events import RerunRequested as RerunRequested
from .notice_events import GateEscalated as GateEscalated
from .notice_events import Notified as Notified
from .notice_events import NotifyFailed as NotifyFailed
from .notice_events import Published as Published
from .notice_events import PublishFailed as PublishFailed
from .run_events import CodeRan as CodeRan
from .run_events import FilesCollected as FilesCollected
from .run_events import InputsUploaded as InputsUploaded
from .run_events import ManagedMode as ManagedMode
from .run_events import OutputAccepted as OutputAccepted
from .run_events import PartitionChanged as PartitionChanged
from .run_events import PhaseDone as PhaseDone
from .run_events import PhaseFailed as PhaseFailed
from .run_events import PhaseRetrying as PhaseRetrying
from .run_events import PhaseReused as PhaseReused
from .run_events import PhasesStale as PhasesStale
from .run_events import PhaseStarted as PhaseStarted
from .run_events import RunBegun as RunBegun
from .run_events import RunCancelled as RunCancelled
from .run_events import RunStateChanged as RunStateChanged
from .run_events import SandboxEnded as SandboxEnded
from .run_events import SandboxOpened as SandboxOpened
from .run_events import WorkspaceRecorded as WorkspaceRecorded
from .trace_events import Traced as Traced
from .trace_events import TraceFull as TraceFull
from .trace_events import TraceStarted as TraceStarted

# --- the catalogue -------------------------------------------------------------------------

# Every kind praxis writes. A line is read as the class its ``kind`` names here; each class
# is written and read as its fields (``Event.to_json``, ``Event.from_dict``). A new kind is a
# class in the module of what it records, imported and listed here (a test holds that every
# Event class of praxis is listed), never a kind registered by importing a module.
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


# The catalogue by kind: the kinds this process reads first (``Event.from_dict``).
KINDS: Mapping[str, type[Event]] = _catalogue(CATALOGUE)
