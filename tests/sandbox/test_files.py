"""sandbox/files.py: a file replaced whole (the old content or the new, no temp left, the mode
asked), hashed and opened below a folder never through a link."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from sandbox.errors import PathRefused
from sandbox.files import (
    confined,
    hash_file,
    nofollow_opener,
    open_below,
    open_nofollow,
    replace_at,
    replace_file,
)


def test_a_file_is_replaced_whole_with_the_mode_asked(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    replace_file(path, b"old")
    replace_file(path, b"new content", mode=0o640)
    assert path.read_bytes() == b"new content"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert os.listdir(tmp_path) == ["run.json"]


def test_a_link_planted_at_the_path_is_replaced_not_written_through(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("kept")
    os.symlink(target, tmp_path / "out.csv")
    replace_file(tmp_path / "out.csv", b"written")
    assert not (tmp_path / "out.csv").is_symlink()
    assert (tmp_path / "out.csv").read_bytes() == b"written"
    assert target.read_text() == "kept"


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.json"
    replace_file(path, b"old")

    def full(fd: int, data: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError, match="No space left"):
        replace_file(path, b"new")
    monkeypatch.undo()
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["run.json"]


def test_a_writer_fills_the_new_file_relative_to_a_folder_descriptor(tmp_path: Path) -> None:
    dfd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        replace_at(dfd, "a.txt", lambda out: out.write(b"streamed"), mode=0o444)
    finally:
        os.close(dfd)
    assert (tmp_path / "a.txt").read_bytes() == b"streamed"
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o444
    assert os.listdir(tmp_path) == ["a.txt"]


def test_a_writer_that_fails_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    replace_file(tmp_path / "a.txt", b"old")

    def broken(out: object) -> None:
        raise ValueError("the source went away")

    with pytest.raises(ValueError):
        replace_file(tmp_path / "a.txt", broken)
    assert (tmp_path / "a.txt").read_bytes() == b"old" and os.listdir(tmp_path) == ["a.txt"]


def test_a_link_is_hashed_never_followed(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_bytes(b"abc")
    os.symlink(tmp_path / "real.txt", tmp_path / "link.txt")
    digest = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert hash_file(tmp_path / "real.txt") == digest
    with pytest.raises(OSError):
        hash_file(tmp_path / "link.txt")


def test_open_below_walks_no_link_even_one_pointing_back_inside(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f.txt").write_bytes(b"in")
    os.symlink(tmp_path / "sub", tmp_path / "alias")
    with open_below(tmp_path, "sub/f.txt") as fd:
        assert os.read(fd, 10) == b"in"
    with pytest.raises(PathRefused, match="passes through a symbolic link"):
        with open_below(tmp_path, "alias/f.txt"):
            pass
    with pytest.raises(PathRefused, match="passes through a symbolic link"):
        confined(tmp_path, "alias/f.txt")
    with pytest.raises(PathRefused, match=r"'\.\.' component"):
        confined(tmp_path, "../f.txt")


def test_open_nofollow_refuses_a_link_and_keeps_its_descriptor_from_children(
    tmp_path: Path,
) -> None:
    target = tmp_path / "secret.txt"
    target.write_text("host")
    os.symlink(target, tmp_path / "link.txt")
    with pytest.raises(OSError) as caught:
        open_nofollow(tmp_path / "link.txt")
    assert caught.value.errno == errno.ELOOP
    fd = open_nofollow(tmp_path / "new.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
    try:
        assert not os.get_inheritable(fd)
        os.write(fd, b"line\n")
    finally:
        os.close(fd)
    assert stat.S_IMODE((tmp_path / "new.log").stat().st_mode) == 0o640 & ~_umask()


def test_the_opener_makes_the_builtin_open_refuse_a_link(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("kept")
    os.symlink(target, tmp_path / "out.txt")
    with pytest.raises(OSError) as caught:
        open(tmp_path / "out.txt", "w", opener=nofollow_opener)
    assert caught.value.errno == errno.ELOOP
    assert target.read_text() == "kept"
    with open(tmp_path / "plain.txt", "w", opener=nofollow_opener) as fh:
        fh.write("ok")
    assert (tmp_path / "plain.txt").read_text() == "ok"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
