"""digest.sha256_of: a run file's sha256, never read through a link."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from praxis.flows.definition import digest
from praxis.flows.definition.digest import settled, sha256_of


def test_the_digest_is_the_sha256_of_the_content(tmp_path: Path) -> None:
    path = tmp_path / "out.csv"
    path.write_bytes(b"a,b\n" * 300_000)  # over one read's chunk
    assert sha256_of(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_link_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "secret").write_bytes(b"not a run's")
    os.symlink(tmp_path / "secret", tmp_path / "out.csv")
    with pytest.raises(OSError):
        sha256_of(tmp_path / "out.csv")


def test_an_unchanged_file_is_not_read_again_by_the_next_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, known = tmp_path / "out.csv", tmp_path / "hashes.json"
    path.write_bytes(b"a,b\n1,2\n")
    monkeypatch.setattr(digest, "FINE_SETTLED_NS", -1)
    monkeypatch.setattr(digest, "SETTLED_NS", -1)
    expected = hashlib.sha256(path.read_bytes()).hexdigest()
    assert sha256_of(path, known) == expected
    digest._cache.clear()  # the next process

    def unread(fd: int) -> str:
        raise AssertionError("read again")

    monkeypatch.setattr(digest, "hash_fd", unread)
    assert sha256_of(path, known) == expected
    path.write_bytes(b"a,b\n1,3\n")  # changed: its identity is not the one kept
    monkeypatch.undo()
    assert sha256_of(path, known) == hashlib.sha256(b"a,b\n1,3\n").hexdigest()


def test_the_kept_digests_are_bounded_and_junk_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(digest, "FINE_SETTLED_NS", -1)
    monkeypatch.setattr(digest, "SETTLED_NS", -1)
    known = tmp_path / "hashes.json"
    for i in range(digest.KNOWN + 20):
        path = tmp_path / f"f{i}"
        path.write_bytes(b"%d" % i)
        sha256_of(path, known)
    assert len(json.loads(known.read_text())) == digest.KNOWN
    for junk in (b"not json", b"[1]", b'{"1:2:3:4:5": 7}', b"{" + b" " * (1 << 17) + b"}"):
        known.write_bytes(junk)
        digest._cache.clear()
        assert sha256_of(path, known) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_settled_needs_a_whole_tick_of_a_coarse_clock() -> None:
    assert not settled(5_000_000_000, 6_000_000_000)  # whole seconds: 2 s
    assert settled(5_000_000_000, 7_500_000_000)
    assert not settled(5_000_000_001, 5_050_000_000)  # sub-second stamps: 0.1 s
    assert settled(5_000_000_001, 5_200_000_000)
