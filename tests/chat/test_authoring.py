"""The chat's tools: refusals the model is told about, approval of code, try_phase errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage

from praxis.agent.scripted import ScriptedChatModel
from praxis.chat import Authoring, open_chat
from praxis.chat.authoring import DENIED, NOBODY, RESULT_CHARS

from .scenario import SCRIPTS, start

LOCAL = {"backend": "local"}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return start(tmp_path / "orders")


@pytest.fixture
def tools(folder: Path) -> Iterator[Authoring]:
    t = Authoring(folder, "20261130-120000", sandbox=LOCAL)
    yield t
    t.close()


def test_a_write_outside_the_folder_or_into_runs_is_refused_and_the_model_told_why(
    folder: Path,
) -> None:
    calls = [
        {"name": "write_file", "args": {"path": "../escape.py", "text": "x"}},
        {"name": "write_file", "args": {"path": "runs/r1/output/clean.csv", "text": "x"}},
        {"name": "write_file", "args": {"path": "flow.yaml"}},
    ]
    model = ScriptedChatModel(replies=[{"tool_calls": calls}, {"text": "understood"}])
    chat = open_chat(folder, model=model, sandbox=LOCAL)
    chat.send("write somewhere odd")
    chat.close()

    told = [str(m.content) for m in model.received[1] if isinstance(m, ToolMessage)]
    assert told[0].startswith("refused: '../escape.py' has a '..' component")
    assert told[1].startswith("refused: 'runs/r1/output/clean.csv' is inside runs")
    assert "missing ['text']" in told[2]
    assert not (folder.parent / "escape.py").exists() and not (folder / "runs").exists()


def test_results_are_clipped_for_the_model(tools: Authoring, folder: Path) -> None:
    (folder / "long.txt").write_text("x" * 20_000)
    text = tools.call("read_file", {"path": "long.txt"}).text
    assert len(text) < RESULT_CHARS + 200 and "clipped" in text


def test_run_python_asks_the_person_and_refuses_when_nobody_can_be_asked(folder: Path) -> None:
    code = "import pandas as pd\nprint(len(pd.read_csv('data/orders.csv')))"
    nobody = Authoring(folder, "20261130-120001", sandbox=LOCAL)
    assert nobody.call("run_python", {"code": code}).text == NOBODY

    asked: list[str] = []
    no = Authoring(folder, "20261130-120002", approver=lambda p, c: asked.append(c) or False)
    assert no.call("run_python", {"code": code}).text == DENIED
    assert asked == [code]

    yes = Authoring(folder, "20261130-120003", approver=lambda p, c: True, sandbox=LOCAL)
    try:
        result = yes.call("run_python", {"code": code})
    finally:
        yes.close()
    assert result.status == "ok" and "stdout:\n4" in result.text
    assert not (folder / "runs").exists()


def test_try_phase_reports_the_error_and_the_failing_line(tools: Authoring, folder: Path) -> None:
    tools.call("write_file", {"path": "scripts/clean.py", "text": "x = 1\ny = x / 0\n"})
    tools.call("write_file", {"path": "flow.yaml", "text": FLOW_ONE})
    result = tools.call("try_phase", {"phase": "clean"})
    assert result.status == "error"
    assert "- phase clean: failed" in result.text
    assert "ZeroDivisionError" in result.text
    assert "y = x / 0" in result.text


def test_try_phase_on_a_flow_with_errors_says_to_fix_them(tools: Authoring) -> None:
    tools.call("write_file", {"path": "flow.yaml", "text": "phases: []\n"})
    result = tools.call("try_phase", {"phase": "clean"})
    assert result.text.startswith("cannot run: flow.yaml has errors")


def test_profile_and_list_files(tools: Authoring) -> None:
    tools.call("write_file", {"path": "scripts/clean.py", "text": SCRIPTS["scripts/clean.py"]})
    listed = tools.call("list_files", {}).text
    assert "data/orders.csv  (71 bytes)" in listed and "scripts/clean.py" in listed
    assert ".chat" not in listed
    assert "| amount | float64 | 0 |" in tools.call("profile", {"path": "data/orders.csv"}).text
    assert tools.call("profile", {"path": "scripts/clean.py"}).status == "refused"


FLOW_ONE = """\
flow: orders
phases:
  - id: clean
    kind: script
    script: scripts/clean.py
    inputs: {working: [data/orders.csv]}
    outputs: [clean.csv]
"""


def test_the_chat_cannot_touch_a_real_run_waiting_at_its_gate(
    tools: Authoring, folder: Path
) -> None:
    from praxis import api

    from .scenario import FLOW_OK

    for path, text in SCRIPTS.items():
        tools.call("write_file", {"path": path, "text": text})
    tools.call("write_file", {"path": "flow.yaml", "text": FLOW_OK})
    run = api.begin(folder)
    waiting = api.advance(folder, run.id, sandbox=LOCAL)
    assert waiting.waiting == "gate"

    assert not any("approve" in name or "gate" in name for name in tools.handlers)
    tried = tools.call("try_phase", {"phase": "summarise"})
    assert "- phase summarise: done" in tried.text
    refused = tools.call("write_file", {"path": f"runs/{run.id}/output/flagged.csv", "text": "x"})
    assert refused.status == "refused"

    after = api.status(folder, run.id)
    assert (after.revision, after.status) == (waiting.revision, "paused")
    assert [p.name for p in (folder / "runs").iterdir()] == [run.id]
