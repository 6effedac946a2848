"""A scripted chat model: replays a fixed list of replies, for examples and tests. No network.

Each reply is an ``AIMessage``, a dict ``{"text": ..., "tool_calls": [{"name", "args"}]}``,
or a callable that receives the conversation so far and returns one of those. Built with no
arguments (``PRAXIS_MODEL=praxis.agent.scripted:ScriptedChatModel``), it reads the replies
from the JSON file named by ``PRAXIS_MODEL_SCRIPT``. Running out of replies is an error.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field, model_validator

SCRIPT_ENV = "PRAXIS_MODEL_SCRIPT"
Reply = AIMessage | dict[str, Any] | Callable[[list[BaseMessage]], Any]


class ScriptedChatModel(BaseChatModel):
    replies: list[Any] = Field(default_factory=list)
    received: list[list[BaseMessage]] = Field(default_factory=list)  # each call's messages
    bound_tools: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _from_env(cls, data: Any) -> Any:
        if isinstance(data, dict) and "replies" not in data and os.environ.get(SCRIPT_ENV):
            path = Path(os.environ[SCRIPT_ENV])
            data = {**data, "replies": json.loads(path.read_text(encoding="utf-8"))}
        return data

    @property
    def _llm_type(self) -> str:
        return "praxis-scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        self.bound_tools = [_tool_name(t) for t in tools]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.received.append(list(messages))
        index = len(self.received) - 1
        if index >= len(self.replies):
            raise RuntimeError(f"scripted model has only {len(self.replies)} replies")
        reply = self.replies[index]
        if callable(reply) and not isinstance(reply, AIMessage):
            reply = reply(list(messages))
        return ChatResult(generations=[ChatGeneration(message=as_message(reply, index))])


def as_message(reply: Any, index: int = 0) -> AIMessage:
    if isinstance(reply, AIMessage):
        return reply
    if isinstance(reply, str):
        return AIMessage(reply)
    calls = [
        {"name": c["name"], "args": c.get("args", {}), "id": c.get("id", f"c{index}-{i}")}
        for i, c in enumerate(reply.get("tool_calls", []))
    ]
    return AIMessage(reply.get("text", ""), tool_calls=calls)


def _tool_name(tool: Any) -> str:
    if isinstance(tool, dict):
        return str(tool.get("function", tool).get("name", "?"))
    return str(getattr(tool, "name", getattr(tool, "__name__", "?")))
