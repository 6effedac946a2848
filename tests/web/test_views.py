"""Page helpers: live output read in bounded chunks from an offset; the timeline."""

from __future__ import annotations

from pathlib import Path

from praxis.flows.engine import runner
from praxis.flows.engine.runner import load_flow
from praxis.flows.store.handle import RunHandle
from praxis.web import views

from ..flows.helpers import three_phase_flow


def test_live_reads_stay_bounded(tmp_path: Path) -> None:
    log = tmp_path / "p.log"
    log.write_bytes(b"x" * (views.LIVE_CHUNK * 2 + 5))
    text, offset = views.read_live(log, 0)
    assert len(text) == views.LIVE_CHUNK and offset == views.LIVE_CHUNK
    text, offset = views.read_live(log, 10**9)  # a log started afresh is read from its start
    assert offset == views.LIVE_CHUNK


def test_a_running_phase_bar_reaches_now(tmp_path: Path) -> None:
    root = three_phase_flow(tmp_path)
    run = RunHandle.open(load_flow(root), runner.begin(root).id)
    first, second = run.state.phases[0], run.state.phases[1]
    first.status, first.started, first.ended = "done", 100.0, 110.0
    second.status, second.started = "running", 110.0
    bars = views.timeline(run, now=140.0)
    assert (bars[0].x, bars[0].width) == (0.0, views.CHART_WIDTH / 4)
    assert (bars[1].x, bars[1].width) == (views.CHART_WIDTH / 4, views.CHART_WIDTH * 3 / 4)
    assert (bars[1].started, bars[1].ended) == (110.0, None)
    later = views.timeline(run, now=210.0)[1]
    assert later.width == round(views.CHART_WIDTH * 100 / 110, 1)  # it grew with the clock
