"""Writes stay inside the flow folder, follow no links, and undo restores bytes exactly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from praxis.chat.workfiles import FileRefused, WorkFiles

SESSION = "20261130-120000"


@pytest.fixture
def files(tmp_path: Path) -> WorkFiles:
    root = tmp_path / "flow"
    root.mkdir()
    return WorkFiles(root, SESSION)


def test_undo_restores_the_previous_version_byte_for_byte(files: WorkFiles) -> None:
    original = b"flow: x\r\nphases: []\r\n# \xff not utf-8, no newline at the end"
    (files.root / "flow.yaml").write_bytes(original)
    first = files.write("flow.yaml", b"flow: x\nphases: [a]\n")
    files.write("flow.yaml", b"flow: x\nphases: [b]\n")

    assert first.before == original
    assert "-phases: [a]" not in first.diff and "+phases: [a]" in first.diff
    undone = files.undo()
    assert undone is not None and undone.after == b"flow: x\nphases: [b]\n"
    assert (files.root / "flow.yaml").read_bytes() == b"flow: x\nphases: [a]\n"
    files.undo()
    assert (files.root / "flow.yaml").read_bytes() == original
    assert files.undo() is None


def test_undo_of_a_new_file_removes_it_and_keeps_the_mode_of_a_replaced_one(
    files: WorkFiles,
) -> None:
    script = files.root / "scripts" / "run.sh"
    script.parent.mkdir()
    script.write_bytes(b"echo 1\n")
    script.chmod(0o755)
    files.write("scripts/run.sh", b"echo 2\n")
    files.write("scripts/new.py", b"print(1)\n")
    assert script.stat().st_mode & 0o777 == 0o755

    files.undo()
    assert not (files.root / "scripts" / "new.py").exists()
    files.undo()
    assert script.read_bytes() == b"echo 1\n"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../outside.txt", "'..' component"),
        ("/etc/passwd", "absolute path"),
        ("runs/20261130-1/output/x.csv", "inside runs"),
        ("run.lock", "inside run.lock"),
        (".chat/20261130-120000.jsonl", "inside .chat"),
        ("scripts/.hidden.py", "hidden (dot) part"),
    ],
)
def test_paths_outside_the_flow_files_are_refused(files: WorkFiles, path: str, reason: str) -> None:
    with pytest.raises(FileRefused, match=reason.replace("(", r"\(").replace(")", r"\)")):
        files.write(path, b"x")
    assert not (files.root.parent / "outside.txt").exists()
    assert not (files.root / "runs").exists()


def test_links_are_never_followed(files: WorkFiles, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"secret")
    os.symlink(outside, files.root / "linked")
    os.symlink(outside / "secret.txt", files.root / "alias.txt")

    with pytest.raises(FileRefused, match="linked is a link"):
        files.write("linked/new.py", b"x")
    with pytest.raises(FileRefused, match="is a link"):
        files.write("alias.txt", b"x")
    with pytest.raises(FileRefused, match="is a link"):
        files.read("alias.txt")
    assert (outside / "secret.txt").read_bytes() == b"secret"
    assert not (outside / "new.py").exists()
    assert [p for p, _ in files.listing()] == []


def test_a_fifo_is_refused_without_blocking(files: WorkFiles) -> None:
    os.mkfifo(files.root / "pipe.txt")
    with pytest.raises(FileRefused, match="not a regular file"):
        files.read("pipe.txt")


def test_session_diff_shows_each_changed_file_since_the_session_began(files: WorkFiles) -> None:
    (files.root / "flow.yaml").write_text("a\n")
    files.write("flow.yaml", b"b\n")
    files.write("flow.yaml", b"c\n")
    files.write("prompts/task.md", b"hello\n")
    diff = files.session_diff()
    assert "-a\n+c\n" in diff
    assert "+++ b/prompts/task.md" in diff and "+hello" in diff
