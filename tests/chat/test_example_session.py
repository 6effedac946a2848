"""The chat without a model: the scripted example session shipped with praxis writes a flow
that passes `praxis check`, and the "no model" message says how to try it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from praxis.agent.scripted import SCRIPT_ENV
from praxis.chat.chat import EXAMPLE_SESSION, SCRIPTED
from praxis.cli import main

from .scenario import FLOW_OK, SCRIPTS, replies


def test_the_example_session_is_the_tests_session_on_an_empty_folder() -> None:
    shipped = json.loads(EXAMPLE_SESSION.read_text(encoding="utf-8"))
    first = [c["name"] for c in shipped[0]["tool_calls"]]
    assert first == ["write_file", "list_files", "profile"]  # it brings its own data
    assert shipped[1:] == replies()[1:]  # the rest is the session the chat tests drive


def test_no_model_says_how_to_try_the_chat_without_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PRAXIS_MODEL", raising=False)
    assert main(["chat", str(tmp_path / "new"), "--message", "hello"]) == 2
    err = capsys.readouterr().err
    assert f"PRAXIS_MODEL={SCRIPTED} and {SCRIPT_ENV}={EXAMPLE_SESSION}" in err
    assert EXAMPLE_SESSION.is_file()


@pytest.mark.docker
def test_the_example_session_writes_a_flow_that_checks_and_runs(
    tmp_path: Path, docker_image: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("PRAXIS_MODEL", SCRIPTED)
    monkeypatch.setenv(SCRIPT_ENV, str(EXAMPLE_SESSION))
    folder = tmp_path / "chatty"
    assert main(["chat", str(folder), "--message", "make me a flow of my orders"]) == 0
    out = capsys.readouterr().out
    assert "- phase clean: done" in out
    assert (folder / "flow.yaml").read_text() == FLOW_OK
    for name, text in SCRIPTS.items():
        assert (folder / name).read_text() == text
    assert main(["check", str(folder)]) == 0
