"""Resolving the chat model from flow.yaml, PRAXIS_MODEL, or ctx.extra."""

from __future__ import annotations

import sys

import pytest

from praxis.agent import ModelUnavailable, resolve_model
from praxis.agent.scripted import ScriptedChatModel

SCRIPTED = "praxis.agent.scripted:ScriptedChatModel"


def test_a_class_path_is_instantiated() -> None:
    assert isinstance(resolve_model(SCRIPTED, env={}), ScriptedChatModel)


def test_the_environment_wins_over_flow_yaml() -> None:
    model = resolve_model("openai:gpt-4.1-mini", env={"PRAXIS_MODEL": SCRIPTED})
    assert isinstance(model, ScriptedChatModel)


def test_provider_without_langchain_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain", None)  # makes `import langchain` fail
    with pytest.raises(ModelUnavailable, match="pip install langchain langchain-openai"):
        resolve_model("openai:gpt-4.1-mini", env={})


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (None, "no chat model for the agent phase"),
        ("gpt-4", "is not 'provider:model'"),
        ("no_such_pkg.mod:Model", "cannot import no_such_pkg.mod"),
        ("praxis.agent.scripted:Nope", "has no Nope"),
    ],
)
def test_bad_specs_say_what_to_fix(spec: str | None, message: str) -> None:
    with pytest.raises(ModelUnavailable, match=message):
        resolve_model(spec, env={})
