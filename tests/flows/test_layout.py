"""The run folder's layout: run ids that sort by creation, the run listing, and what a
reviewer may write at a Gate."""

from __future__ import annotations

import calendar
import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from praxis.flows.model import state as st
from praxis.flows.model.flow import Flow, Phase
from praxis.flows.model.machine import apply
from praxis.flows.model.transitions import Finish, Gate, Start
from praxis.flows.store import layout
from praxis.flows.store.layout import NotWritable, RunPaths

NOON = calendar.timegm((2026, 11, 30, 12, 0, 0, 0, 0, 0))
ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{4}$")


def test_a_run_id_is_the_utc_time_and_a_random_suffix() -> None:
    run_id = layout.new_run_id(NOON)
    assert ID.match(run_id) and run_id.startswith("20261130-120000-")


def test_a_run_id_sorts_after_the_newest_when_the_clock_went_back() -> None:
    newest = layout.new_run_id(NOON)
    ids = [newest]
    for _ in range(50):  # the same second, and an hour earlier: never before the newest
        ids.append(layout.new_run_id(NOON - 3600 * (len(ids) % 2), after=ids[-1]))
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(ID.match(i) for i in ids)


def test_a_run_id_after_the_last_suffix_moves_to_the_next_second() -> None:
    run_id = layout.new_run_id(NOON, after="20261130-120000-ffff")
    assert run_id > "20261130-120000-ffff" and run_id.startswith("20261130-120001-")


def test_runs_are_listed_oldest_first_and_hidden_or_plain_files_are_not_runs(
    tmp_path: Path,
) -> None:
    assert layout.list_run_ids(tmp_path) == [] and layout.newest(tmp_path) is None
    runs = layout.runs_dir(tmp_path)
    for name in ("20261130-120001-aaaa", "20261130-120000-ffff", ".staging"):
        (runs / name).mkdir(parents=True)
    (runs / "20261130-130000-0000").write_text("a file, not a run")
    os.symlink(runs / "20261130-120000-ffff", runs / "20261130-140000-0000")
    assert layout.list_run_ids(tmp_path) == ["20261130-120000-ffff", "20261130-120001-aaaa"]
    assert layout.newest(tmp_path) == "20261130-120001-aaaa"


def test_newest_seq_reads_the_newest_run_and_falls_back_on_the_count(tmp_path: Path) -> None:
    assert layout.newest_seq(tmp_path) == 0
    runs = layout.runs_dir(tmp_path)
    (runs / "20261130-120000-0000").mkdir(parents=True)
    (runs / "20261130-120001-0000").mkdir()
    (runs / "20261130-120001-0000" / "run.json").write_text(json.dumps({"seq": 7}))
    assert layout.newest_seq(tmp_path) == 7
    (runs / "20261130-120001-0000" / "run.json").write_text("not json")
    assert layout.newest_seq(tmp_path) == 2


def test_run_paths_name_every_part_of_the_run_folder(tmp_path: Path) -> None:
    paths = layout.run_paths(tmp_path, "r1")
    assert paths.root == tmp_path / "runs" / "r1" and paths.id == "r1"
    assert paths.snapshot("clean", 2) == paths.root / "snapshots" / "clean" / "2.json"
    assert paths.snapshot("clean", 2, "post") == paths.root / "snapshots/clean/2.post.json"
    assert paths.attempt("clean", 3) == paths.root / "attempts" / "clean" / "3"
    assert paths.record("clean") == paths.root / "records" / "clean.ipynb"
    paths.make()
    assert sorted(p.name for p in paths.root.iterdir()) == [
        "output",
        "records",
        "scratch",
        "workspace",
    ]


def test_an_unlisted_run_is_out_of_the_listing_and_its_files_go_with_the_trash(
    tmp_path: Path,
) -> None:
    paths = RunPaths(tmp_path / "runs" / "r1")
    paths.make()
    (paths.output / "a.txt").write_text("a")
    trash = layout.unlist_run(paths)
    assert not paths.root.exists() and layout.list_run_ids(tmp_path) == []
    assert (trash / "output" / "a.txt").read_text() == "a"
    shutil.rmtree(trash)


# --- what a reviewer may write ---------------------------------------------------------------

FLOW = Flow(
    name="f",
    root=Path("/nonexistent"),
    phases=(
        Phase(id="clean", kind="script", outputs=("clean.csv", "notes/n.txt"), review="required"),
        Phase(id="total", kind="script", outputs=("total.txt",)),
    ),
)


def at_gate() -> st.RunState:
    state = st.new_run("r1", "f", ["clean", "total"], now=1.0)
    state = apply(state, Start(phase="clean", pid=1), now=2.0).state
    state = apply(state, Finish(phase="clean", hashes={}), now=3.0).state
    return apply(state, Gate(phase="clean"), now=3.0).state


@pytest.fixture
def paths(tmp_path: Path) -> RunPaths:
    paths = RunPaths(tmp_path / "runs" / "r1")
    paths.make()
    (paths.output / "clean.csv").write_text("id\n1\n")
    return paths


def test_at_a_gate_only_the_gated_phases_outputs_are_writable(paths: RunPaths) -> None:
    state = at_gate()
    assert (state.waiting, state.gate) == ("gate", "clean")
    assert layout.writable_names(FLOW, state) == ["clean.csv", "notes/n.txt"]
    assert layout.writable(FLOW, state, paths, "clean.csv") == paths.output / "clean.csv"
    with pytest.raises(NotWritable, match="only the outputs of phase 'clean'") as caught:
        layout.writable(FLOW, state, paths, "total.txt")
    assert caught.value.name == "total.txt"


def test_away_from_a_gate_nothing_is_writable(paths: RunPaths) -> None:
    state = st.new_run("r1", "f", ["clean", "total"], now=1.0)
    assert layout.writable_names(FLOW, state) == []
    with pytest.raises(NotWritable, match="not waiting at a Gate"):
        layout.writable(FLOW, state, paths, "clean.csv")


def test_a_writable_name_through_a_link_is_refused(paths: RunPaths, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.unlink(paths.output / "clean.csv")
    os.symlink(elsewhere / "clean.csv", paths.output / "clean.csv")
    with pytest.raises(NotWritable):
        layout.writable(FLOW, at_gate(), paths, "clean.csv")
    os.unlink(paths.output / "clean.csv")
    os.rename(paths.output, tmp_path / "moved")
    os.symlink(elsewhere, paths.output)  # output/ itself leads elsewhere
    with pytest.raises(NotWritable):
        layout.writable(FLOW, at_gate(), paths, "notes/n.txt")


def test_new_run_id_uses_the_clock_when_given_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time", lambda: NOON)
    assert layout.new_run_id().startswith("20261130-120000-")
