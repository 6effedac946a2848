"""The flow chat: write and change a flow together with a model (DESIGN.md §9)."""

from .authoring import SCHEMAS, TOOL_NAMES, Authoring, ToolResult
from .chat import (
    Chat,
    ChatError,
    ChatEvent,
    TurnOutcome,
    open_chat,
    resolve_chat_model,
    system_prompt,
)
from .trial import try_phases
from .workfiles import FileRefused, WorkFiles, Write

__all__ = [
    "SCHEMAS",
    "TOOL_NAMES",
    "Authoring",
    "Chat",
    "ChatError",
    "ChatEvent",
    "FileRefused",
    "ToolResult",
    "TurnOutcome",
    "WorkFiles",
    "Write",
    "open_chat",
    "resolve_chat_model",
    "system_prompt",
    "try_phases",
]
