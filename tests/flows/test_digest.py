"""digest.sha256_of: a run file's sha256, never read through a link."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from praxis.flows.definition.digest import sha256_of


def test_the_digest_is_the_sha256_of_the_content(tmp_path: Path) -> None:
    path = tmp_path / "out.csv"
    path.write_bytes(b"a,b\n" * 300_000)  # over one read's chunk
    assert sha256_of(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_link_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "secret").write_bytes(b"not a run's")
    os.symlink(tmp_path / "secret", tmp_path / "out.csv")
    with pytest.raises(OSError):
        sha256_of(tmp_path / "out.csv")
