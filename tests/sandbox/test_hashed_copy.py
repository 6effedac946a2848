"""sandbox/files/hashed_copy.py: a copy made in the kernel, hashed on the way by a thread that
reads back what was copied; bounded; the same bytes and digest by every way of copying."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sandbox import OutputTooLarge
from sandbox.files.hashed_copy import SMALL, STEP, copy_hashed


@contextmanager
def pair(src: Path, dst: Path) -> Iterator[tuple[int, int]]:
    fd = os.open(src, os.O_RDONLY)
    out = os.open(dst, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        yield fd, out
    finally:
        os.close(out)
        os.close(fd)


@pytest.mark.parametrize("size", [0, 1, 1 << 20, SMALL + 1, 2 * STEP + 12345])
def test_the_copy_holds_the_bytes_and_their_digest(tmp_path: Path, size: int) -> None:
    data = os.urandom(size)
    (tmp_path / "src").write_bytes(data)
    with pair(tmp_path / "src", tmp_path / "dst") as (fd, out):
        sha = copy_hashed(fd, out)
    assert (tmp_path / "dst").read_bytes() == data
    assert sha == hashlib.sha256(data).hexdigest()


def test_a_copy_from_an_offset_takes_the_rest(tmp_path: Path) -> None:
    data = os.urandom(3 * STEP // 2)
    (tmp_path / "src").write_bytes(data)
    with pair(tmp_path / "src", tmp_path / "dst") as (fd, out):
        os.lseek(fd, 1000, os.SEEK_SET)
        sha = copy_hashed(fd, out)
    assert (tmp_path / "dst").read_bytes() == data[1000:]
    assert sha == hashlib.sha256(data[1000:]).hexdigest()


def test_a_pipe_is_copied_by_reads_and_writes(tmp_path: Path) -> None:
    data = os.urandom(3 << 20)  # more than a pipe holds: the writer and the copy take turns
    r, w = os.pipe()

    def feed() -> None:
        with os.fdopen(w, "wb") as pipe:
            pipe.write(data)

    writer = threading.Thread(target=feed)
    writer.start()
    out = os.open(tmp_path / "dst", os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        sha = copy_hashed(r, out)
    finally:
        os.close(out)
        os.close(r)
        writer.join()
    assert (tmp_path / "dst").read_bytes() == data
    assert sha == hashlib.sha256(data).hexdigest()


def test_a_file_over_the_bound_is_refused_before_a_byte_moves(tmp_path: Path) -> None:
    (tmp_path / "src").write_bytes(b"x" * 5000)
    with (
        pair(tmp_path / "src", tmp_path / "dst") as (fd, out),
        pytest.raises(OutputTooLarge) as caught,
    ):
        copy_hashed(fd, out, max_bytes=4096, what="big.bin")
    assert (caught.value.what, caught.value.limit) == ("big.bin", 4096)
    assert (tmp_path / "dst").stat().st_size == 0


def test_a_stream_over_the_bound_stops_one_step_past_it(tmp_path: Path) -> None:
    r, w = os.pipe()

    def feed() -> None:
        with os.fdopen(w, "wb") as pipe:
            try:
                pipe.write(b"y" * (8 << 20))
            except BrokenPipeError:  # the copy stopped reading: as it should
                pass

    writer = threading.Thread(target=feed)
    writer.start()
    out = os.open(tmp_path / "dst", os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with pytest.raises(OutputTooLarge):
            copy_hashed(r, out, max_bytes=1 << 20, what="stream")
    finally:
        os.close(out)
        os.close(r)
        writer.join()
    assert (tmp_path / "dst").stat().st_size <= (1 << 20) + (1 << 20)


def test_without_a_digest_it_only_copies(tmp_path: Path) -> None:
    data = os.urandom(100_000)
    (tmp_path / "src").write_bytes(data)
    with pair(tmp_path / "src", tmp_path / "dst") as (fd, out):
        assert copy_hashed(fd, out, digest=False) is None
    assert (tmp_path / "dst").read_bytes() == data


@pytest.mark.parametrize("size", [100, SMALL + 1])  # hashed after the copy; by the thread
def test_a_destination_it_cannot_read_back_fails_the_copy(tmp_path: Path, size: int) -> None:
    (tmp_path / "src").write_bytes(b"z" * size)
    fd = os.open(tmp_path / "src", os.O_RDONLY)
    out = os.open(tmp_path / "dst", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with pytest.raises(OSError):
            copy_hashed(fd, out)  # a digest of bytes it cannot read back would vouch for nothing
    finally:
        os.close(out)
        os.close(fd)
