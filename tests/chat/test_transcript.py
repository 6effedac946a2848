"""A chat's transcript: one message per line, appended as it goes; a line cut short by a
crash is dropped, anything else corrupt is refused; sessions sort by time."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from praxis.chat.transcript import (
    Transcript,
    TranscriptError,
    latest,
    new_session,
    sessions,
)

NOON = 1_796_040_000.0  # 2026-11-30 12:00:00 UTC


def test_messages_round_trip_in_order(tmp_path: Path) -> None:
    t = Transcript(tmp_path, "20261130-120000")
    assert t.load() == []
    t.append(HumanMessage("make a flow"))
    t.append(AIMessage("done: café"))
    assert [(m.type, m.content) for m in t.load()] == [
        ("human", "make a flow"),
        ("ai", "done: café"),
    ]
    assert oct(os.stat(t.path).st_mode & 0o777) == "0o600"


def test_a_line_cut_short_at_the_end_is_dropped_and_one_in_the_middle_refused(
    tmp_path: Path,
) -> None:
    t = Transcript(tmp_path, "20261130-120000")
    t.append(HumanMessage("first"))
    with open(t.path, "a") as fh:
        fh.write('{"type": "ai", "data": {"cont')
    assert [m.content for m in t.load()] == ["first"]
    with open(t.path, "a") as fh:
        fh.write("\n")
    t.append(HumanMessage("after"))
    with pytest.raises(TranscriptError, match=r"\.jsonl:2: not JSON"):
        t.load()
    assert TranscriptError("x").next("flows/f") == "praxis chat flows/f"


def test_a_line_that_is_not_a_message_or_a_link_is_refused(tmp_path: Path) -> None:
    t = Transcript(tmp_path, "20261130-120000")
    t.path.write_text('{"colour": "red"}\n')
    with pytest.raises(TranscriptError, match="not a chat transcript"):
        t.load()
    t.path.unlink()
    (tmp_path / "elsewhere.jsonl").write_text("")
    os.symlink(tmp_path / "elsewhere.jsonl", t.path)
    with pytest.raises(TranscriptError, match="not a regular file"):
        t.load()
    with pytest.raises(TranscriptError, match="cannot be written"):
        t.append(HumanMessage("through a link"))
    assert (tmp_path / "elsewhere.jsonl").read_text() == ""


@pytest.mark.parametrize("name", ["../x", "latest", "20261130-1200", "20261130-120000-a"])
def test_a_session_name_that_is_not_one_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(TranscriptError, match="is not a chat session name"):
        Transcript(tmp_path, name)


def test_sessions_sort_by_time_and_number(tmp_path: Path) -> None:
    assert sessions(tmp_path / "none") == [] and latest(tmp_path) is None
    names = [new_session(tmp_path, NOON) for _ in range(1)]
    for _ in range(10):  # the same second: numbered, and 10 sorts after 9
        (tmp_path / f"{names[-1]}.jsonl").write_text("")
        names.append(new_session(tmp_path, NOON))
    (tmp_path / f"{names[-1]}.jsonl").write_text("")
    (tmp_path / "notes.jsonl").write_text("")
    assert names[0] == "20261130-120000" and names[1] == "20261130-120000-2"
    assert sessions(tmp_path) == names and latest(tmp_path) == "20261130-120000-11"
