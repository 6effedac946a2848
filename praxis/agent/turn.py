"""One model turn: a loop of chat-model calls with tool calling.

The loop ends when the model answers without a tool call. The call that would go over
``limits.model_calls`` fails the phase (it is not a quiet stop), so a turn never ends with a
half-done phase looking finished.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from praxis.flows.engine.context import PhaseContext, PhaseError
from praxis.flows.model.events import ModelCalled

from .model import model_for
from .prompt import build_messages, limit
from .tools import SCHEMAS, Toolbox


@dataclass
class TurnResult:
    answer: str  # the model's last text
    calls: int  # model calls made
    written: set[str]  # workspace files written by code or an extract


def run_turn(ctx: PhaseContext) -> TurnResult:
    """Run the agent turn of ``ctx.phase`` and return what it did."""
    model = _bind(ctx, model_for(ctx))
    tools = Toolbox(ctx)
    messages = build_messages(ctx)
    ctx.record.markdown(f"## Prompt\n\n{messages[-1].content}", role="prompt")
    max_calls = limit(ctx, "model_calls")
    calls = 0
    while True:
        if calls >= max_calls:
            raise PhaseError(
                f"{ctx.phase.id}: the model needed more than {max_calls} calls "
                f"(limits.model_calls); raise the limit in flow.yaml or narrow the prompt"
            )
        calls += 1
        reply = _call(ctx, model, messages, calls)
        messages.append(reply)
        text = message_text(reply)
        if text.strip():
            ctx.record.markdown(text, role="assistant", call=calls)
        requests = list(reply.tool_calls)
        if not requests and not reply.invalid_tool_calls:
            return TurnResult(text, calls, set(tools.written))
        for request in requests:
            call_id = request.get("id") or f"call-{uuid.uuid4().hex[:8]}"
            result = tools.call(request["name"], dict(request.get("args") or {}))
            messages.append(ToolMessage(result, tool_call_id=call_id, name=request["name"]))
        for bad in reply.invalid_tool_calls:
            error = bad.get("error") or "arguments are not valid JSON"
            messages.append(
                ToolMessage(
                    f"refused: could not read this tool call ({error}); send valid arguments",
                    tool_call_id=bad.get("id") or f"call-{uuid.uuid4().hex[:8]}",
                    status="error",
                )
            )


def _bind(ctx: PhaseContext, model: Any) -> Any:
    try:
        return model.bind_tools(SCHEMAS)
    except (NotImplementedError, AttributeError) as exc:
        raise PhaseError(
            f"{ctx.phase.id}: chat model {type(model).__name__} does not support tool calling; "
            "choose a model that does"
        ) from exc


def _call(ctx: PhaseContext, model: Any, messages: list[BaseMessage], number: int) -> AIMessage:
    start = time.monotonic()
    try:
        reply = model.invoke(messages)
    except Exception as exc:
        raise PhaseError(
            f"{ctx.phase.id}: model call {number} failed: {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(reply, AIMessage):
        raise PhaseError(f"{ctx.phase.id}: model call {number} returned {type(reply).__name__}")
    ctx.emit(
        ModelCalled(
            phase=ctx.phase.id,
            call=number,
            tool_calls=[t["name"] for t in reply.tool_calls],
            text_chars=len(message_text(reply)),
            seconds=round(time.monotonic() - start, 3),
        )
    )
    return reply


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
