"""write_atomic: the old content or the new, never a mix; no temp file left; the mode kept."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from praxis.flows.store.atomic import write_atomic


def test_a_file_is_replaced_whole_with_the_mode_asked(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    write_atomic(path, b"old")
    write_atomic(path, b"new content", mode=0o640)
    assert path.read_bytes() == b"new content"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert os.listdir(tmp_path) == ["run.json"]


def test_a_link_planted_at_the_path_is_replaced_not_written_through(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("kept")
    os.symlink(target, tmp_path / "out.csv")
    write_atomic(tmp_path / "out.csv", b"written")
    assert not (tmp_path / "out.csv").is_symlink()
    assert (tmp_path / "out.csv").read_bytes() == b"written"
    assert target.read_text() == "kept"


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.json"
    write_atomic(path, b"old")

    def full(fd: int, data: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(path, b"new")
    monkeypatch.undo()
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["run.json"]
