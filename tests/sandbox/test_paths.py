"""Safe workspace names and confinement (sandbox.paths)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox import PathRefused
from sandbox.files import confined
from sandbox.paths import check_name, name_problem


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("..", "has a '..' component"),
        ("a/../../etc/passwd", "has a '..' component"),
        ("./a", "has a '.' component"),
        ("/etc/passwd", "is an absolute path"),
        ("C:/x", "is an absolute path"),
        ("a\\b", "contains a backslash (use / between folders)"),
        ("a\x00b", "contains a NUL byte"),
        ("", "is empty"),
        ("a//b", "has an empty path component"),
        ("a/", "has an empty path component"),
        ("x" * 256, "has a component over 255 bytes"),
        ("é" * 128, "has a component over 255 bytes"),  # 256 bytes in UTF-8
        (None, "must be a string, not NoneType"),
    ],
)
def test_unsafe_names_are_refused_with_the_reason(name: object, problem: str) -> None:
    assert name_problem(name) == problem
    with pytest.raises(PathRefused) as info:
        check_name(name)  # type: ignore[arg-type]
    assert info.value.reason == problem


@pytest.mark.parametrize("name", ["a.csv", "data/sales.csv", "x" * 255, "é" * 127, ".hidden"])
def test_safe_names_pass(name: str) -> None:
    assert name_problem(name) is None and check_name(name) == name


def test_confined_returns_a_regular_file_inside(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/f.txt").write_text("x")
    assert confined(tmp_path, "sub/f.txt") == tmp_path / "sub/f.txt"
    assert confined(tmp_path, "new.txt", must_exist=False) == tmp_path / "new.txt"
    with pytest.raises(PathRefused, match="does not exist"):
        confined(tmp_path, "new.txt")


def test_symlinks_out_and_in_are_refused(tmp_path: Path) -> None:
    base = tmp_path / "ws"
    base.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("s")
    os.symlink(secret, base / "out.txt")
    os.symlink(tmp_path, base / "up")
    (base / "real.txt").write_text("r")
    os.symlink("real.txt", base / "in.txt")
    with pytest.raises(PathRefused, match="is a symbolic link"):  # never followed, even out
        confined(base, "out.txt")
    with pytest.raises(PathRefused, match="passes through a symbolic link"):
        confined(base, "up/secret.txt")
    with pytest.raises(PathRefused, match="is a symbolic link"):
        confined(base, "in.txt")


def test_fifos_and_devices_are_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "dir").mkdir()
    with pytest.raises(PathRefused, match="is not a regular file"):
        confined(tmp_path, "pipe")
    with pytest.raises(PathRefused, match="is not a regular file"):
        confined(tmp_path, "dir")
    os.symlink("/dev/null", tmp_path / "null")
    with pytest.raises(PathRefused, match="is a symbolic link"):
        confined(tmp_path, "null")
