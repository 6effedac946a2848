"""One tool loop: a chat model is called, the tools it asks for run, their results go back,
until it answers without asking for a tool, or the calls reach their limit.

The agent phase (``praxis.agent.turn``) and the flow chat (``praxis.chat.chat``) both run it;
each brings how a call is made and recorded (``call``), where messages go (``add``), how one
tool call is answered (``answer``) and what its words are for the limit. A tool call whose
arguments are not valid JSON is answered with a refusal the model can act on; every call the
model asked for is answered, so the history stays one a model accepts.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage


@dataclass(frozen=True)
class Ended:
    """How a loop ended: the model's last text, the calls made, and whether the limit ended
    it (the model still wanted to go on)."""

    answer: str
    calls: int
    limited: bool = False


class CallFailed(Exception):
    """A model call raised or returned something other than a message; the text says which."""


class NoToolCalling(Exception):
    """The chat model cannot be given tools."""


def bind(model: Any, schemas: Sequence[Mapping[str, Any]]) -> Any:
    """``model`` with the tools ``schemas`` describe; NoToolCalling when it cannot take them."""
    try:
        return model.bind_tools(list(schemas))
    except (NotImplementedError, AttributeError) as exc:
        raise NoToolCalling(
            f"chat model {type(model).__name__} does not support tool calling; choose a model "
            "that does"
        ) from exc


def invoke(bound: Any, messages: Sequence[BaseMessage], number: int) -> tuple[AIMessage, float]:
    """Call number ``number`` of the bound model on ``messages``: the reply and its seconds."""
    start = time.monotonic()
    try:
        reply = bound.invoke(list(messages))
    except Exception as exc:
        raise CallFailed(f"model call {number} failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(reply, AIMessage):
        raise CallFailed(f"model call {number} returned {type(reply).__name__}, not a message")
    return reply, round(time.monotonic() - start, 3)


def run(
    *,
    call: Callable[[int], AIMessage],
    add: Callable[[BaseMessage], None],
    answer: Callable[[Mapping[str, Any], str], ToolMessage],
    max_calls: int,
    said: Callable[[str, int], None] = lambda text, number: None,
) -> Ended:
    """Call the model (``call(number)``, the reply ``add``-ed) and answer each tool call
    (``answer(request, call_id)``, added) until it answers without one, or ``max_calls``
    calls were made (``Ended.limited``). ``said`` gets each reply's text that says something."""
    calls, text = 0, ""
    while True:
        if calls >= max_calls:
            return Ended(text, calls, limited=True)
        calls += 1
        reply = call(calls)
        add(reply)
        text = message_text(reply)
        if text.strip():
            said(text, calls)
        if not reply.tool_calls and not reply.invalid_tool_calls:
            return Ended(text, calls)
        for request in reply.tool_calls:
            add(answer(request, request.get("id") or _new_id()))
        for bad in reply.invalid_tool_calls:
            error = bad.get("error") or "arguments are not valid JSON"
            add(
                ToolMessage(
                    f"refused: could not read this tool call ({error}); send valid arguments",
                    tool_call_id=bad.get("id") or _new_id(),
                    status="error",
                )
            )


def message_text(message: BaseMessage) -> str:
    """The text of a message whose content is a string or a list of content blocks."""
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def _new_id() -> str:
    return f"call-{uuid.uuid4().hex[:8]}"
