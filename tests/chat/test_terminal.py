"""`praxis chat`: one message, the conversation's commands, the call limit, resuming."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from praxis.chat.terminal import main as chat_main
from praxis.cli import main

from .scenario import ASK, FLOW_OK, call, replies, script_file, start

FIRST = b"flow: orders\r\n# written by hand, no newline at the end"


@pytest.fixture
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PRAXIS_MODEL", "praxis.agent.scripted:ScriptedChatModel")
    monkeypatch.setenv("PRAXIS_SANDBOX", "local")

    def use(items: list) -> None:  # type: ignore[type-arg]
        monkeypatch.setenv("PRAXIS_MODEL_SCRIPT", str(script_file(tmp_path / "s.json", items)))

    return use


def test_one_message_from_a_new_folder(scripted, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    folder = start(tmp_path / "orders")
    scripted(replies())
    assert main(["chat", str(folder), "--message", ASK]) == 0
    out = capsys.readouterr().out
    assert "+++ b/flow.yaml" in out and "+    inputs: {working: [clean.csv, flaged.csv]}" in out
    assert "'flaged.csv' is neither a file of the flow" in out
    assert "- phase clean: done" in out
    assert "go on with: praxis chat" in out and "--resume" in out
    assert (folder / "flow.yaml").read_text() == FLOW_OK
    assert main(["check", str(folder)]) == 0


def test_a_brand_new_folder_is_created(scripted, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    scripted([{"text": "An empty folder: tell me about your data."}])
    assert main(["chat", str(tmp_path / "new-flow"), "--message", "hello"]) == 0
    assert (tmp_path / "new-flow" / ".chat").is_dir()


def test_undo_restores_flow_yaml_byte_for_byte(scripted, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = start(tmp_path / "orders")
    (folder / "flow.yaml").write_bytes(FIRST)
    scripted([{"tool_calls": [call("write_file", path="flow.yaml", text=FLOW_OK)]}, {"text": "ok"}])
    out = io.StringIO()
    stdin = io.StringIO(f"{ASK}\n/diff\n/undo\n/undo\n/quit\n")
    assert chat_main(str(folder), stdin=stdin, stdout=out) == 0
    text = out.getvalue()
    assert "praxis: undid the last write of flow.yaml" in text
    assert "praxis: nothing to undo in this session" in text
    assert (folder / "flow.yaml").read_bytes() == FIRST
    transcript = next((folder / ".chat").glob("*.jsonl")).read_text()
    assert "The person undid your last write of flow.yaml" in transcript


def test_check_and_run_commands(scripted, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = start(tmp_path / "orders")
    scripted(replies())
    out = io.StringIO()
    stdin = io.StringIO(f"{ASK}\n/check\n/run\n/nonsense\n")  # ends without /quit (EOF)
    assert chat_main(str(folder), stdin=stdin, stdout=out) == 0
    text = out.getvalue()
    assert "orders: ok, 3 phase(s)" in text
    assert "throwaway run on the local backend: paused, at the Gate after flag" in text
    assert "for a real run: praxis run" in text
    assert "unknown command /nonsense" in text
    assert not (folder / "runs").exists()


def test_the_call_limit_ends_the_turn_politely_and_the_transcript_resumes(
    scripted, tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    folder = start(tmp_path / "orders")
    scripted([{"tool_calls": [call("list_files")]}] * 3)
    assert main(["chat", str(folder), "--message", "look around", "--max-calls", "2"]) == 0
    out = capsys.readouterr().out
    assert "praxis: The chat stopped after 2 model calls, its limit for one message." in out

    scripted([{"text": "I listed the files twice; the data is data/orders.csv."}])
    assert main(["chat", str(folder), "--resume", "--message", "what did you find?"]) == 0
    assert "the data is data/orders.csv" in capsys.readouterr().out
    sessions = list((folder / ".chat").glob("*.jsonl"))
    assert len(sessions) == 1
    lines = [json.loads(line) for line in sessions[0].read_text().splitlines()]
    humans = [rec["data"]["content"] for rec in lines if rec["type"] == "human"]
    assert humans[0].startswith("look around") and humans[-1] == "what did you find?"
    assert any("stopped after 2 model calls" in h for h in humans)


def test_no_model_is_a_usage_error_naming_the_fix(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("PRAXIS_MODEL", raising=False)
    assert main(["chat", str(tmp_path / "x"), "--message", "hi"]) == 2
    err = capsys.readouterr().err
    assert "PRAXIS_MODEL=openai:gpt-4.1-mini" in err


def test_the_cli_imports_the_chat_only_when_it_runs() -> None:
    import subprocess
    import sys

    code = (
        "import sys, praxis.cli, praxis.cli_parser; praxis.cli_parser.parser(); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'langchain_core', 'pandas'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_ctrl_c_in_a_turn_stops_it_and_the_chat_goes_on(tmp_path: Path) -> None:
    folder = start(tmp_path / "orders")

    from praxis.agent.scripted import ScriptedChatModel
    from praxis.chat import open_chat

    def interrupt(messages):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt

    model = ScriptedChatModel(replies=[{"tool_calls": [call("list_files")]}, interrupt])
    chat = open_chat(folder, model=model)
    with pytest.raises(KeyboardInterrupt):
        chat.send("look")
    chat.interrupted()
    chat.model = ScriptedChatModel(replies=[{"text": "Stopped; go on?"}])
    assert chat.send("go on").answer == "Stopped; go on?"
    chat.close()
    resumed = open_chat(folder, model=model, resume=True)
    assert len(resumed.messages) == len(chat.messages)
