"""Page helpers: live output read in bounded chunks from an offset."""

from __future__ import annotations

from pathlib import Path

from praxis.web import views


def test_live_reads_stay_bounded(tmp_path: Path) -> None:
    log = tmp_path / "p.log"
    log.write_bytes(b"x" * (views.LIVE_CHUNK * 2 + 5))
    text, offset = views.read_live(log, 0)
    assert len(text) == views.LIVE_CHUNK and offset == views.LIVE_CHUNK
    text, offset = views.read_live(log, 10**9)  # a log started afresh is read from its start
    assert offset == views.LIVE_CHUNK
