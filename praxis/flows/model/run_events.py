"""The events of a run and of its phases: a run begun, its status changed, cancelled; a sandbox
opened or ended by its watchdog; managed mode granted; a phase started, its inputs uploaded,
its code run, its files collected and its workspace recorded, then done, failed, retried or
reused; a fan-out's partition moved; phases gone stale; an output changed outside praxis
accepted. Listed in the catalogue, ``events.py``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from .event_base import Event

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
