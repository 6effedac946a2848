"""The events of a Gate and its decisions: the run waits at a Gate; an output edited there; the
Gate approved or rejected, or a decision refused; a file read through praxis (the receipt a
decision passes); a re-run requested, and the Gate edits carried across it. Listed in the
catalogue, ``events.py``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from .event_base import Event


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
