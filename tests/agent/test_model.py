"""Resolving the chat model from flow.yaml or PRAXIS_MODEL (a model passed in is ctx.model)."""

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
        ("gpt-4", "has no ':'; use provider:model .* or module:Class"),
        ("no_such_pkg.mod:Model", "'no_such_pkg.mod' is neither a known provider nor a module"),
        ("praxis.agent.scripted:Nope", "has no Nope"),
    ],
)
def test_bad_specs_say_what_to_fix(spec: str | None, message: str) -> None:
    with pytest.raises(ModelUnavailable, match=message):
        resolve_model(spec, env={})


def test_a_top_level_module_class_is_loaded(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mymodels.py").write_text(
        "from praxis.agent.scripted import ScriptedChatModel\n"
        "class MyChat(ScriptedChatModel):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    model = resolve_model("mymodels:MyChat", env={})
    assert type(model).__name__ == "MyChat" and isinstance(model, ScriptedChatModel)


def test_an_unknown_prefix_lists_both_forms() -> None:
    with pytest.raises(ModelUnavailable) as caught:
        resolve_model("openia:gpt-4.1-mini", env={})
    message = str(caught.value)
    assert "'openia' is neither a known provider nor a module Python can import" in message
    assert "provider:model (e.g. openai:gpt-4.1-mini; providers: " in message
    assert "module:Class (e.g. mymodels:MyChat" in message


PAYLOAD = (
    "import pathlib\npathlib.Path(__file__).with_name('imported').write_text('yes')\n"
    "from praxis.agent.scripted import ScriptedChatModel as Chat\n"
)


def test_a_module_in_the_working_directory_is_never_imported(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cwdmodels.py").write_text(PAYLOAD)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # as `python -m praxis` puts the cwd first
    with pytest.raises(ModelUnavailable, match="cwdmodels is not an installed module"):
        resolve_model("cwdmodels:Chat", env={})
    assert not (tmp_path / "imported").exists()


def test_a_module_in_the_flow_folder_is_never_imported(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flow = tmp_path / "flow"
    flow.mkdir()
    (flow / "inflow.py").write_text(PAYLOAD)
    monkeypatch.syspath_prepend(str(flow))  # on the path, but not the working directory
    with pytest.raises(ModelUnavailable, match="inflow is not an installed module"):
        resolve_model("inflow:Chat", env={}, flow_root=flow)
    assert not (flow / "imported").exists()
