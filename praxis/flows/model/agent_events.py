"""The events of an agent phase's turn: each chat-model call, each tool call, and the code that
waits for a person's approval, and the answer. Listed in the catalogue, ``events.py``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from .event_base import Event


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
