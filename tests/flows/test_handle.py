"""RunHandle: the newest run or a named one, a new run folder made exclusively, and the one
way to change a run: run.json written with the change's events, then the events appended."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from praxis.flows.definition import contract
from praxis.flows.engine import runner
from praxis.flows.model.events import PhaseStarted, RunBegun, RunStateChanged
from praxis.flows.model.flow import Flow
from praxis.flows.model.machine import IllegalTransition
from praxis.flows.model.transitions import Cancel, Fail, Finish, Rerun, Start, Wait
from praxis.flows.store import handle as handle_module
from praxis.flows.store.event_log import EventLog
from praxis.flows.store.handle import NoRun, RunHandle, held, listing
from praxis.flows.store.layout import list_run_ids, lock_path
from praxis.flows.store.state_file import load

from ..waiting import waits_for_lock
from .helpers import three_phase_flow

NOON = 1_795_000_000.0


@pytest.fixture
def flow(tmp_path: Path) -> Flow:
    return contract.require(three_phase_flow(tmp_path))


def test_without_a_run_open_says_so_with_the_next_command(flow: Flow) -> None:
    with pytest.raises(NoRun) as caught:
        RunHandle.open(flow, None)
    assert str(caught.value) == "demo has no runs yet" and caught.value.next("f") == "praxis run f"
    with pytest.raises(NoRun) as named:
        RunHandle.open(flow, "20261130-120000-0000")
    assert str(named.value) == "demo has no run '20261130-120000-0000'"
    assert named.value.next("f") == "praxis runs f"


def test_runs_are_created_in_order_even_when_the_clock_goes_back(flow: Flow) -> None:
    times = iter([NOON, NOON, NOON - 3600])
    runs = [RunHandle.create(flow, clock=lambda: next(times)) for _ in range(3)]
    ids = [r.id for r in runs]
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert [load(r.paths.state).seq for r in runs] == [1, 2, 3]
    assert RunHandle.open(flow, None).id == ids[-1]  # the newest, by creation
    assert RunHandle.open(flow, ids[0]).state.seq == 1
    created = runs[0].paths
    assert all(d.is_dir() for d in (created.output, created.scratch, created.records))


def test_a_new_run_s_log_begins_with_run_begun_in_its_run_json_too(flow: Flow) -> None:
    run = RunHandle.create(flow, clock=lambda: NOON)
    (line,) = [json.loads(x) for x in run.paths.events.read_text().splitlines()]
    assert line == {
        "kind": RunBegun.kind,
        "rev": 0,
        "at": NOON,
        "run": run.id,
        "flow": "demo",
        "phases": ["load", "review", "total"],
    }
    assert json.loads(run.paths.state.read_text())["outbox"] == [line]


def test_a_change_writes_run_json_then_appends_the_event(flow: Flow) -> None:
    clock = iter([NOON, NOON + 1, NOON + 2])
    run = RunHandle.create(flow, clock=lambda: next(clock))
    begun = run.paths.events.read_bytes()
    heard: list[str] = []
    run.listeners.append(lambda e: heard.append(e.kind))
    state = run.change(Start(phase="load", pid=42))
    assert state.status == "running" and state.phase("load").started == NOON + 1
    assert load(run.paths.state).to_dict() == state.to_dict()
    raw = run.paths.events.read_bytes()
    assert raw.startswith(begun)
    lines = [json.loads(x) for x in raw[len(begun) :].splitlines()]
    assert [(x["kind"], x["rev"]) for x in lines] == [
        (RunStateChanged.kind, 1),
        (PhaseStarted.kind, 1),
    ]
    assert (lines[0]["status"], lines[0]["reason"]) == ("running", "start")
    assert json.loads(run.paths.state.read_text())["outbox"] == lines
    assert heard == [RunStateChanged.kind, PhaseStarted.kind]
    run.change(Wait(phase="load", what="approval"))  # the status stays: no event
    assert run.paths.events.read_bytes() == raw and len(heard) == 2
    assert "outbox" not in json.loads(run.paths.state.read_text())


def test_an_illegal_change_writes_nothing(flow: Flow) -> None:
    run = RunHandle.create(flow)
    before, log = run.paths.state.read_bytes(), run.paths.events.read_bytes()
    with pytest.raises(IllegalTransition, match="finish"):
        run.change(Finish(phase="load", hashes={}))
    assert run.paths.state.read_bytes() == before
    assert run.paths.events.read_bytes() == log


def test_a_run_id_is_a_plain_name_of_a_run_folder(flow: Flow, tmp_path: Path) -> None:
    RunHandle.create(flow)
    (flow.root / "runs" / "linked").symlink_to(tmp_path)
    for bad in ("..", ".", "", "../runs", ".new-x", "linked"):
        with pytest.raises(NoRun):
            RunHandle.open(flow, bad)


def test_a_new_run_appears_whole_and_waits_for_a_listing_to_end(flow: Flow) -> None:
    made: list[str] = []
    with listing(flow) as ids:
        thread = threading.Thread(target=lambda: made.append(runner.begin(flow).id))
        thread.start()
        waits_for_lock(thread, lock_path(flow.root))  # held shared here: the begin waits
        assert list_run_ids(flow.root) == ids and made == []
    thread.join(30)
    assert list_run_ids(flow.root) == [*ids, *made] and len(made) == 1
    assert not [p for p in (flow.root / "runs").iterdir() if p.name.startswith(".")]


# --- a change's two writes, and a crash at each point between them ---------------------------


class Crash(BaseException):
    """The process dies here: nothing after this point runs."""


def by_revision(run: RunHandle) -> dict[int, list[dict[str, Any]]]:
    """The log's lines of each change, by the revision they are stamped with (a torn last
    line is not one)."""
    found: dict[int, list[dict[str, Any]]] = {}
    raw = run.paths.events.read_bytes()
    for line in raw.split(b"\n")[:-1]:
        data = json.loads(line)
        if "rev" in data:
            found.setdefault(data["rev"], []).append(data)
    return found


def saved_outbox(run: RunHandle) -> tuple[int, list[dict[str, Any]]]:
    data = json.loads(run.paths.state.read_text())
    return data["revision"], data.get("outbox", [])


def _cut_at(point: str, data: bytes) -> int:
    first = data.index(b"\n") + 1
    return {
        "mid-append, nothing written": 0,
        "mid-append, a torn first line": first // 2,
        "mid-append, one line of two": first,
        "mid-append, one line and a torn one": first + 10,
        "mid-append, all but the last newline": len(data) - 1,
    }[point]


POINTS = [
    "before run.json",
    "after run.json, before the append",
    "mid-append, nothing written",
    "mid-append, a torn first line",
    "mid-append, one line of two",
    "mid-append, one line and a torn one",
    "mid-append, all but the last newline",
]


def crash(monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    """Make the next change of the run die at ``point``."""
    if point == "before run.json":

        def no_save(*args: Any) -> None:
            raise Crash(point)

        monkeypatch.setattr(handle_module, "save", no_save)
    elif point == "after run.json, before the append":

        def no_append(log: EventLog, lines: list[dict[str, Any]]) -> None:
            if lines:
                raise Crash(point)

        monkeypatch.setattr(EventLog, "append_lines", no_append)
    else:

        def torn(fd: int, data: bytes) -> None:
            os.write(fd, data[: _cut_at(point, data)])
            raise Crash(point)

        monkeypatch.setattr(EventLog, "_write", staticmethod(torn))


@pytest.mark.parametrize("point", POINTS)
def test_a_crash_at_each_point_of_a_change_loses_no_event_and_repeats_none(
    flow: Flow, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    run = RunHandle.create(flow)
    outboxes = {0: saved_outbox(run)[1]}
    run.change(Start(phase="load", pid=1))
    outboxes[1] = saved_outbox(run)[1]
    crash(monkeypatch, point)
    with pytest.raises(Crash):
        run.change(Fail(phase="load", error="boom"))  # two events: the run's, the phase's
    monkeypatch.undo()
    revision, outbox = saved_outbox(run)
    committed = point != "before run.json"
    assert revision == (2 if committed else 1)
    if committed:
        outboxes[2] = outbox
        assert [x["kind"] for x in outbox] == ["run_state", "phase_failed"]
    # a reader never sees an event of a change that run.json does not hold
    assert max(by_revision(run)) <= revision
    assert [e.kind for e in EventLog(run.paths.events).read()]  # readable, a torn line dropped

    with held(flow, run.id, "changing"):  # the next command: under the run's lock
        next_command = RunHandle.open(flow, run.id)
        next_command.catch_up()
    assert next_command.state.revision == revision
    assert by_revision(run) == outboxes  # each change's events, once, in order
    again = RunHandle.open(flow, run.id)
    again.change(Cancel())
    outboxes[revision + 1] = saved_outbox(again)[1]
    assert by_revision(again) == outboxes
    assert [e.kind for e in EventLog(run.paths.events).read()][-2:] == [
        "run_state",
        "run_cancelled",
    ]


@pytest.mark.parametrize("point", POINTS[1:])
def test_the_next_change_of_any_process_appends_what_a_crash_left_out(
    flow: Flow, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    run = RunHandle.create(flow)
    run.change(Start(phase="load", pid=1))
    crash(monkeypatch, point)
    with pytest.raises(Crash):
        run.change(Fail(phase="load", error="boom"))
    monkeypatch.undo()
    lost = saved_outbox(run)[1]
    RunHandle.open(flow, run.id).change(Rerun(phase="load"))  # no catch_up asked for
    lines = by_revision(run)
    assert lines[2] == lost and [x["kind"] for x in lines[3]][-1] == "rerun_requested"


def test_an_append_that_fails_is_made_good_by_the_handle_s_next_change(
    flow: Flow, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = RunHandle.create(flow)
    run.change(Start(phase="load", pid=1))
    real = EventLog.append_lines

    def full(log: EventLog, lines: list[dict[str, Any]]) -> None:
        monkeypatch.setattr(EventLog, "append_lines", real)
        raise OSError(28, "no space left on device")

    monkeypatch.setattr(EventLog, "append_lines", full)
    with pytest.raises(OSError):
        run.change(Fail(phase="load", error="boom"))
    assert 2 not in by_revision(run)
    run.change(Rerun(phase="load"))  # the same process goes on (the runner recovers so)
    assert sorted(by_revision(run)) == [0, 1, 2, 3]
    assert [x["kind"] for x in by_revision(run)[2]] == ["run_state", "phase_failed"]


def test_catching_up_a_log_that_holds_the_change_adds_nothing(flow: Flow) -> None:
    run = RunHandle.create(flow)
    run.change(Start(phase="load", pid=1))
    run.emit(PhaseStarted(phase="noise", attempt=0))  # events between changes are not stamped
    whole = run.paths.events.read_bytes()
    for _ in range(2):
        again = RunHandle.open(flow, run.id)
        again.catch_up()
        again.catch_up()
        assert run.paths.events.read_bytes() == whole


def test_a_run_deleted_between_finding_it_and_reading_its_state_is_no_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listing that races a delete sees the run gone (NoRun), never a corrupt run."""
    flow = contract.require(three_phase_flow(tmp_path))
    run = runner.begin(flow)
    real = handle_module.load_saved

    def deleted_first(path: Path) -> Any:
        os.rename(path.parent, path.parent.with_name(".trash-" + path.parent.name))
        return real(path)

    monkeypatch.setattr(handle_module, "load_saved", deleted_first)
    with pytest.raises(NoRun):
        RunHandle.open(flow, run.id)
    monkeypatch.undo()
    with pytest.raises(NoRun):  # and after: the run is gone, not broken
        RunHandle.open(flow, run.id)
