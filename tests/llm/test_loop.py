"""praxis/llm/loop.py: the one tool loop of agent phases and the chat."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from praxis.llm import loop


def replies(*messages: AIMessage) -> Any:
    queue = list(messages)
    return lambda number: queue.pop(0)


def asks(*names: str) -> AIMessage:
    return AIMessage(
        "", tool_calls=[{"name": n, "args": {"n": i}, "id": f"c{i}"} for i, n in enumerate(names)]
    )


def test_tools_run_until_the_model_answers_without_one() -> None:
    history: list[BaseMessage] = []
    ran: list[tuple[str, str]] = []

    def answer(request: Mapping[str, Any], call_id: str) -> ToolMessage:
        ran.append((request["name"], call_id))
        return ToolMessage("ok", tool_call_id=call_id)

    said: list[tuple[str, int]] = []
    ended = loop.run(
        call=replies(asks("read", "write"), AIMessage("done")),
        add=history.append,
        answer=answer,
        max_calls=5,
        said=lambda text, number: said.append((text, number)),
    )
    assert ended == loop.Ended("done", 2) and ran == [("read", "c0"), ("write", "c1")]
    assert [type(m).__name__ for m in history] == [
        "AIMessage",
        "ToolMessage",
        "ToolMessage",
        "AIMessage",
    ]
    assert said == [("done", 2)]


def test_the_limit_ends_the_loop_and_says_so() -> None:
    answer = lambda request, call_id: ToolMessage("ok", tool_call_id=call_id)  # noqa: E731
    ended = loop.run(call=lambda n: asks("read"), add=lambda m: None, answer=answer, max_calls=3)
    assert ended.limited and ended.calls == 3


def test_a_call_with_arguments_that_are_not_json_is_answered_with_a_refusal() -> None:
    bad = AIMessage(
        "", invalid_tool_calls=[{"name": "read", "args": "{", "id": "x", "error": "bad JSON"}]
    )
    history: list[BaseMessage] = []
    loop.run(call=replies(bad, AIMessage("ok")), add=history.append, answer=None, max_calls=5)  # type: ignore[arg-type]
    refusal = history[1]
    assert (
        isinstance(refusal, ToolMessage)
        and refusal.tool_call_id == "x"
        and refusal.status == "error"
    )
    assert "could not read this tool call (bad JSON)" in str(refusal.content)


def test_a_model_call_that_fails_or_returns_no_message_is_named() -> None:
    class Broken:
        def invoke(self, messages: list[BaseMessage]) -> Any:
            raise TimeoutError("no answer")

    class Odd:
        def invoke(self, messages: list[BaseMessage]) -> Any:
            return "text"

    with pytest.raises(loop.CallFailed, match="model call 2 failed: TimeoutError: no answer"):
        loop.invoke(Broken(), [], 2)
    with pytest.raises(loop.CallFailed, match="model call 1 returned str, not a message"):
        loop.invoke(Odd(), [], 1)
    with pytest.raises(loop.NoToolCalling, match="does not support tool calling"):
        loop.bind(object(), [])
