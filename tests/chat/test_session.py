"""A scripted chat turns a CSV into a flow that passes `praxis check` and runs to its Gate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from praxis import api
from praxis.agent.scripted import ScriptedChatModel
from praxis.chat import TOOL_NAMES, open_chat
from praxis.flows.definition import contract

from .scenario import ASK, FLOW_OK, replies, start


def tool_results(messages: list[Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for m in messages:
        if isinstance(m, ToolMessage):
            found.setdefault(str(m.name), []).append(str(m.content))
    return found


def author_and_run(folder: Path, sandbox: dict[str, str]) -> None:
    start(folder)
    model = ScriptedChatModel(replies=replies())
    chat = open_chat(folder, model=model, sandbox=sandbox)
    try:
        outcome = chat.send(ASK)
    finally:
        chat.close()

    assert not outcome.limited and outcome.calls == 5
    assert "Gate after flag" in outcome.answer
    assert model.bound_tools == TOOL_NAMES
    results = tool_results(chat.messages)
    assert "4 rows, 3 columns" in results["profile"][0]
    first_check, second_check = results["check"]
    assert "'flaged.csv' is neither a file of the flow nor an output" in first_check
    assert second_check.startswith("ok: flow orders, 3 phase(s)")
    assert "flag (script, Gate after it)" in second_check
    tried = results["try_phase"][0]
    assert "- phase clean: done" in tried and "output clean.csv" in tried
    assert "1,North,10.5" in tried
    assert (folder / "flow.yaml").read_text() == FLOW_OK
    assert not (folder / "runs").exists(), "the chat must not write a run folder"

    flow, report = contract.load(folder)
    assert flow is not None and report.ok, report.lines()
    run = api.begin(folder)
    state = api.advance(folder, run.id, sandbox=sandbox)
    assert state.waiting == "gate" and state.gate == "flag", state.error
    flagged = api.read_table(folder, "flagged.csv", run.id)
    assert sorted(flagged.order_id) == [2, 4]


def test_a_scripted_session_writes_a_flow_that_checks_and_runs_to_its_gate(tmp_path: Path) -> None:
    author_and_run(tmp_path / "orders", {"backend": "local"})


@pytest.mark.docker
def test_the_scripted_session_on_docker(tmp_path: Path, docker_image: str) -> None:
    author_and_run(tmp_path / "orders", {"backend": "docker"})


def test_try_phase_runs_earlier_phases_and_passes_gates_only_in_its_throwaway_run(
    tmp_path: Path,
) -> None:
    folder = start(tmp_path / "orders")
    model = ScriptedChatModel(
        replies=[
            *replies()[:3],
            {"tool_calls": [{"name": "try_phase", "args": {"phase": "summarise"}}]},
            {"text": "done"},
        ]
    )
    chat = open_chat(folder, model=model, sandbox={"backend": "local"})
    try:
        chat.send(ASK)
    finally:
        chat.close()
    tried = tool_results(chat.messages)["try_phase"][0]
    assert "passed without review in this throwaway run" in tried
    assert "- phase summarise: done" in tried and "North,130.5" in tried
    assert not (folder / "runs").exists()
