"""One model turn: the tool loop (``praxis.llm.loop``) over the phase's tools.

The loop ends when the model answers without a tool call. The call that would go over
``limits.model_calls`` fails the phase (it is not a quiet stop), so a turn never ends with a
half-done phase looking finished.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from praxis.flows.engine.context import PhaseContext, PhaseError
from praxis.flows.model.events import ModelCalled
from praxis.llm import loop
from praxis.llm.loop import message_text

from .model import model_for
from .prompt import build_messages, limit
from .tools import SCHEMAS, Toolbox

__all__ = ["TurnResult", "message_text", "run", "run_turn"]


@dataclass
class TurnResult:
    answer: str  # the model's last text
    calls: int  # model calls made
    written: set[str]  # workspace files written by code or an extract


def run(ctx: PhaseContext) -> None:
    """The agent kind's attempt (``praxis.agent.kind``): the phase's model turn. Its answer is
    in the record; files that code or an extract wrote are refused to ``write_output`` during
    the turn, and beat staged ones at collection."""
    run_turn(ctx)


def run_turn(ctx: PhaseContext) -> TurnResult:
    """Run the agent turn of ``ctx.phase`` and return what it did."""
    try:
        model = loop.bind(model_for(ctx), SCHEMAS)
    except loop.NoToolCalling as exc:
        raise PhaseError(f"{ctx.phase.id}: {exc}") from exc
    tools = Toolbox(ctx)
    messages = build_messages(ctx)
    ctx.record.markdown(f"## Prompt\n\n{messages[-1].content}", role="prompt")

    def call(number: int) -> AIMessage:
        return _call(ctx, model, messages, number)

    def answer(request: Mapping[str, Any], call_id: str) -> ToolMessage:
        result = tools.call(request["name"], dict(request.get("args") or {}))
        return ToolMessage(result, tool_call_id=call_id, name=request["name"])

    def said(text: str, number: int) -> None:
        ctx.record.markdown(text, role="assistant", call=number)

    max_calls = limit(ctx, "model_calls")
    ended = loop.run(call=call, add=messages.append, answer=answer, max_calls=max_calls, said=said)
    if ended.limited:
        raise PhaseError(
            f"{ctx.phase.id}: the model needed more than {max_calls} calls "
            f"(limits.model_calls); raise the limit in flow.yaml or narrow the prompt"
        )
    return TurnResult(ended.answer, ended.calls, set(tools.written))


def _call(ctx: PhaseContext, model: Any, messages: list[BaseMessage], number: int) -> AIMessage:
    try:
        reply, seconds = loop.invoke(model, messages, number)
    except loop.CallFailed as exc:
        raise PhaseError(f"{ctx.phase.id}: {exc}") from exc.__cause__
    ctx.emit(
        ModelCalled(
            phase=ctx.phase.id,
            call=number,
            tool_calls=[t["name"] for t in reply.tool_calls],
            text_chars=len(message_text(reply)),
            seconds=seconds,
        )
    )
    return reply
