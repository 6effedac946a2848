"""state_file.py: run.json written atomically, read back only when it is a run state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from praxis.flows.model import state as st
from praxis.flows.model.machine import apply
from praxis.flows.model.transitions import Finish, Gate, Start
from praxis.flows.store import state_file

# A run.json as this schema has always written it: paused at the Gate after phase a.
SCHEMA1 = Path(__file__).resolve().parent.parent / "data" / "run_schema1.json"


def fresh() -> st.RunState:
    return st.new_run("r1", "f", ["a", "b", "c"], now=0.0)


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    s = apply(fresh(), Start(phase="a"), now=1).state
    path = tmp_path / "run.json"
    state_file.save(s, path)
    assert state_file.load(path) == s
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_a_run_json_written_before_loads_and_saves_back_byte_for_byte(tmp_path: Path) -> None:
    s = st.new_run("r1", "f", ["a", "b"], now=0.0, params={"week": "W48"})
    s.definition, s.seq = {"digest": "d"}, 3
    s = apply(s, Start(phase="a", pid=42, backend="docker", isolated=True), now=1.0).state
    s = apply(s, Finish(phase="a", hashes={"x.csv": "h"}, digests={"pre": "p"}), now=2.5).state
    s = apply(s, Gate(phase="a"), now=3.0).state
    assert state_file.load(SCHEMA1) == s
    state_file.save(s, tmp_path / "run.json")
    assert (tmp_path / "run.json").read_bytes() == SCHEMA1.read_bytes()


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "empty"),
        (b'{"schema": 1, "run": "r"', "not valid JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"run": "r"}', "no schema version"),
        (b'{"schema": 99}', "newer than this praxis"),
        (b'{"schema": 1, "run": "r"}', "wrong schema"),
    ],
)
def test_corrupt_run_json_is_refused(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "run.json"
    path.write_bytes(content)
    with pytest.raises(state_file.StateCorrupt) as info:
        state_file.load(path)
    assert reason in str(info.value)
    assert path.read_bytes() == content


def test_a_missing_run_json_is_refused(tmp_path: Path) -> None:
    with pytest.raises(state_file.StateCorrupt, match="run.json: missing"):
        state_file.load(tmp_path / "run.json")


def test_unknown_status_is_refused(tmp_path: Path) -> None:
    data = fresh().to_dict()
    data["status"] = "exploded"
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    with pytest.raises(state_file.StateCorrupt, match="unknown run status"):
        state_file.load(path)


def test_unknown_phase_status_is_refused(tmp_path: Path) -> None:
    data = fresh().to_dict()
    data["phases"][1]["status"] = "exploded"
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    with pytest.raises(state_file.StateCorrupt, match="phase 'b' has unknown status 'exploded'"):
        state_file.load(path)


def test_the_events_of_the_last_change_are_saved_with_it_and_read_back(tmp_path: Path) -> None:
    change = apply(fresh(), Start(phase="a"), now=1.0)
    outbox = [e.stamped(change.state.revision) for e in change.events]
    path = tmp_path / "run.json"
    state_file.save(change.state, path, outbox)
    assert state_file.load_saved(path) == (change.state, json.loads(json.dumps(outbox)))
    assert state_file.load(path) == change.state
    state_file.save(change.state, path)
    assert "outbox" not in json.loads(path.read_text())  # a change without events: no key


@pytest.mark.parametrize(
    ("outbox", "reason"),
    [
        ({"kind": "x"}, "outbox must be a list of objects"),
        ([1], "outbox must be a list of objects"),
        ([{"kind": "phase_started", "rev": 0}], "outbox[0] is not an event of revision 1"),
        ([{"rev": 1}], "outbox[0] is not an event of revision 1"),
    ],
)
def test_an_outbox_that_is_not_the_events_of_the_revision_is_refused(
    tmp_path: Path, outbox: object, reason: str
) -> None:
    data = apply(fresh(), Start(phase="a"), now=1.0).state.to_dict()
    data["outbox"] = outbox
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    with pytest.raises(
        state_file.StateCorrupt, match=reason.replace("[", r"\[").replace("]", r"\]")
    ):
        state_file.load(path)
