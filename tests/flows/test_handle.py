"""RunHandle: the newest run or a named one, a new run folder made exclusively, and the one
way to change a run: run.json written, then the event appended."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from praxis.flows import contract, runner
from praxis.flows.events import RunStateChanged
from praxis.flows.handle import NoRun, RunHandle, listing
from praxis.flows.layout import list_run_ids
from praxis.flows.model import Flow
from praxis.flows.state import IllegalTransition
from praxis.flows.state_file import load

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


def test_a_change_writes_run_json_then_appends_the_event(flow: Flow) -> None:
    clock = iter([NOON, NOON + 1, NOON + 2])
    run = RunHandle.create(flow, clock=lambda: next(clock))
    heard: list[str] = []
    run.listeners.append(lambda e: heard.append(e.kind))
    state = run.change("start", phase="load", pid=42)
    assert state.status == "running" and state.phase("load").started == NOON + 1
    assert load(run.paths.state).to_dict() == state.to_dict()
    lines = [json.loads(x) for x in run.paths.events.read_text().splitlines()]
    assert [(x["kind"], x["status"], x["reason"]) for x in lines] == [
        (RunStateChanged.kind, "running", "start")
    ]
    assert heard == [RunStateChanged.kind]
    run.change("waiting", phase="load", what="approval")  # the status stays: no event
    assert len(run.paths.events.read_text().splitlines()) == 1 and heard == [RunStateChanged.kind]


def test_an_illegal_change_writes_nothing(flow: Flow) -> None:
    run = RunHandle.create(flow)
    before = run.paths.state.read_bytes()
    with pytest.raises(IllegalTransition, match="finish"):
        run.change("finish", phase="load", hashes={})
    assert run.paths.state.read_bytes() == before
    assert not run.paths.events.exists() or run.paths.events.read_text() == ""


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
        time.sleep(0.3)  # the begin waits for the Flow's lock, held shared here
        assert list_run_ids(flow.root) == ids and made == []
    thread.join(30)
    assert list_run_ids(flow.root) == [*ids, *made] and len(made) == 1
    assert not [p for p in (flow.root / "runs").iterdir() if p.name.startswith(".")]
