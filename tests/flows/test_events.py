"""events.py: typed lines, a torn tail dropped and cut, corruption in the middle reported."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from praxis.flows import events as ev


def test_events_round_trip_typed(tmp_path) -> None:
    log = ev.EventLog(tmp_path / "events.jsonl")
    log.append(ev.RunBegun(run="r", flow="f", phases=["a"]))
    log.append(ev.PhaseFailed(phase="a", attempt=1, error="boom"))
    got = log.read()
    assert [type(e) for e in got] == [ev.RunBegun, ev.PhaseFailed]
    assert got[1].error == "boom" and got[1].kind == "phase_failed"


def test_torn_last_line_is_dropped_and_next_append_starts_clean(tmp_path) -> None:
    path = tmp_path / "events.jsonl"
    log = ev.EventLog(path)
    log.append(ev.RunBegun(run="r", flow="f", phases=["a"]))
    with open(path, "ab") as fh:
        fh.write(b'{"kind": "phase_star')
    assert [e.kind for e in log.read()] == ["run_begun"]
    log.append(ev.PhaseStarted(phase="a", attempt=1))
    assert [e.kind for e in log.read()] == ["run_begun", "phase_started"]
    assert path.read_bytes().count(b"\n") == 2


def test_corruption_in_the_middle_is_reported_with_its_line(tmp_path) -> None:
    path = tmp_path / "events.jsonl"
    log = ev.EventLog(path)
    log.append(ev.RunBegun(run="r", flow="f", phases=["a"]))
    with open(path, "ab") as fh:
        fh.write(b"garbage\n")
    log.append(ev.PhaseStarted(phase="a", attempt=1))
    with pytest.raises(ev.EventLogCorrupt, match="line 2"):
        log.read()


def test_unknown_kinds_are_kept(tmp_path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"kind": "from_the_future", "at": 1.0, "x": 1}\n')
    (got,) = ev.EventLog(path).read()
    assert isinstance(got, ev.Unknown) and got.data["x"] == 1


def test_an_event_line_holds_its_fields_as_json_would_have_them(tmp_path) -> None:
    @dataclasses.dataclass(frozen=True)
    class Where:
        path: str

    scratch = [f"s{n}.txt" for n in range(5000)]
    log = ev.EventLog(tmp_path / "events.jsonl")
    log.append(ev.FilesCollected(phase="p", outputs=["a.csv"], scratch=scratch, at=1.0))
    detail = {"path": Path("/x"), "where": Where("w"), "pair": (1, 2)}
    log.append(ev.SandboxOpened(backend="docker", isolated=True, detail=detail, at=2.0))
    first, second = (json.loads(line) for line in log.path.read_text().splitlines())
    assert first == {
        "kind": "files_collected",
        "at": 1.0,
        "phase": "p",
        "outputs": ["a.csv"],
        "scratch": scratch,
    }
    assert second["detail"] == {"path": "/x", "where": {"path": "w"}, "pair": [1, 2]}
