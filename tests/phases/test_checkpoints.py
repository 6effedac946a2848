"""praxis.phases.checkpoints: a running phase's record is saved while a long cell runs."""

from __future__ import annotations

import json
import time
from pathlib import Path

from praxis.flows.store.record import Record
from praxis.phases.checkpoints import SHARE, Checkpoints


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_due_save_happens_before_the_cell_runs(tmp_path: Path) -> None:
    path = tmp_path / "records" / "p.ipynb"
    saves = Checkpoints(Record({"phase": "p"}), path, clock=Clock())
    with saves.around():
        saved = json.loads(path.read_text())
    assert saved["metadata"]["praxis"]["status"] == "running"


def test_a_save_not_due_happens_while_a_long_cell_runs(tmp_path: Path) -> None:
    path = tmp_path / "records" / "p.ipynb"
    clock = Clock()
    record = Record({"phase": "p"})
    saves = Checkpoints(record, path, clock=clock)
    saves.save()
    path.unlink()
    saves.cost = 0.06  # the next save is due 0.06 / SHARE seconds after the last
    assert saves.wait == 0.06 / SHARE
    record.markdown("a cell that runs long")
    with saves.around():  # not due by the clock: the timer saves once the cell ran a while
        for _ in range(600):
            if path.exists():
                break
            time.sleep(0.05)
    saved = json.loads(path.read_text())
    assert [c["source"] for c in saved["cells"]] == ["a cell that runs long"]


def test_a_quick_cell_leaves_the_save_to_a_later_one(tmp_path: Path) -> None:
    path = tmp_path / "records" / "p.ipynb"
    clock = Clock()
    saves = Checkpoints(Record({"phase": "p"}), path, clock=clock)
    saves.save()
    path.unlink()
    saves.cost = 1.0
    with saves.around():
        pass  # returns before the timer fires; the timer is cancelled
    assert not path.exists()
    clock.now += saves.wait
    with saves.around():
        assert path.exists()
