"""Tree: the workspace by descriptor. Links are never followed, sizes are bounded, and a
write replaces a file but never a folder, never through a link."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from sandbox import OutputTooLarge, PathRefused, WalkRefused
from sandbox.tree import Tree, copy_fd_to


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    root = tmp_path / "ws"
    (root / "data" / "deep").mkdir(parents=True)
    (root / "a.txt").write_text("a")
    (root / "data" / "deep" / "b.csv").write_text("x,y\n1,2\n")
    (root / "empty").mkdir()
    return Tree(root)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A host folder next to the tree, holding a secret a link may point at."""
    folder = tmp_path / "host"
    folder.mkdir()
    (folder / "secret.txt").write_text("host secret")
    return folder


def test_listing_names_regular_files_and_sorts_folders_and_others_apart(
    tree: Tree, outside: Path
) -> None:
    os.symlink(outside / "secret.txt", tree.root / "link.txt")
    os.symlink(outside, tree.root / "data" / "linked")
    os.mkfifo(tree.root / "pipe")
    found = tree.listing()
    assert sorted(found) == ["a.txt", "data/deep/b.csv"]
    assert found["a.txt"].size == 1 and stat.S_IMODE(os.stat(tree.root / "a.txt").st_mode) == (
        found["a.txt"].mode
    )
    assert tree.folders() == {"data", "data/deep", "empty"}
    assert tree.strays() == {"link.txt", "data/linked", "pipe"}


def test_a_listing_stops_at_its_bound(tree: Tree) -> None:
    with pytest.raises(WalkRefused, match=r"^the workspace holds more than 3 files and folders"):
        tree.listing(max_files=3)
    assert len(tree.listing(max_files=5)) == 2


def test_an_identity_changes_when_the_content_is_rewritten(tree: Tree) -> None:
    before = tree.listing()["a.txt"].identity
    assert tree.listing()["a.txt"].identity == before
    (tree.root / "a.txt").write_text("changed")
    assert tree.listing()["a.txt"].identity != before


def test_copy_out_copies_a_regular_file_and_gives_its_sha256(tree: Tree, tmp_path: Path) -> None:
    dest = tmp_path / "out" / "b.csv"
    sha = tree.copy_out("data/deep/b.csv", dest)
    assert dest.read_text() == "x,y\n1,2\n"
    assert sha == hashlib.sha256(b"x,y\n1,2\n").hexdigest()


def test_copy_out_never_follows_a_link_at_the_end_or_on_the_way(
    tree: Tree, outside: Path, tmp_path: Path
) -> None:
    os.symlink(outside / "secret.txt", tree.root / "link.txt")
    os.symlink(outside, tree.root / "via")
    os.mkfifo(tree.root / "pipe")
    for name, reason in [
        ("link.txt", "symbolic link"),
        ("via/secret.txt", "symbolic link"),
        ("pipe", "not a regular file"),
        ("missing.txt", "does not exist"),
        ("data", "not a regular file"),
    ]:
        dest = tmp_path / "got" / name.replace("/", "_")
        with pytest.raises(PathRefused, match=reason):
            tree.copy_out(name, dest)
        assert not dest.exists(), name
    assert not (tmp_path / "got").exists()  # refused before anything was made


def test_copy_out_over_its_bound_leaves_nothing(tree: Tree, tmp_path: Path) -> None:
    (tree.root / "big.bin").write_bytes(b"x" * 5000)
    dest = tmp_path / "out" / "big.bin"
    with pytest.raises(OutputTooLarge) as caught:
        tree.copy_out("big.bin", dest, max_bytes=4096)
    assert (caught.value.what, caught.value.limit) == ("big.bin", 4096)
    assert os.listdir(dest.parent) == []


def test_copy_fd_to_replaces_the_destination_whole(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.write_bytes(b"new content")
    dest = tmp_path / "dest"
    dest.write_bytes(b"old content that is longer")
    fd = os.open(src, os.O_RDONLY)
    try:
        sha = copy_fd_to(fd, dest)
    finally:
        os.close(fd)
    assert dest.read_bytes() == b"new content"
    assert sha == hashlib.sha256(b"new content").hexdigest()
    assert sorted(os.listdir(tmp_path)) == ["dest", "src"]


def test_copy_in_makes_folders_replaces_a_file_and_sets_the_mode(
    tree: Tree, tmp_path: Path
) -> None:
    src = tmp_path / "upload.txt"
    src.write_text("uploaded")
    tree.copy_in(src, "new/folder/u.txt", mode=0o444)
    placed = tree.root / "new" / "folder" / "u.txt"
    assert placed.read_text() == "uploaded" and stat.S_IMODE(placed.stat().st_mode) == 0o444
    assert os.stat(placed).st_ino != os.stat(src).st_ino  # a copy, not the host's inode
    tree.copy_in(src, "a.txt")
    assert (tree.root / "a.txt").read_text() == "uploaded"
    assert not [n for n in os.listdir(tree.root) if n.endswith(".upload")]


def test_copy_in_refuses_a_folder_a_link_on_the_way_and_a_host_link(
    tree: Tree, outside: Path, tmp_path: Path
) -> None:
    src = tmp_path / "upload.txt"
    src.write_text("uploaded")
    with pytest.raises(PathRefused, match="is a folder"):
        tree.copy_in(src, "data")
    os.symlink(outside, tree.root / "via")
    with pytest.raises(PathRefused, match="symbolic link"):
        tree.copy_in(src, "via/secret.txt")
    assert (outside / "secret.txt").read_text() == "host secret"
    os.symlink(outside / "secret.txt", tmp_path / "host-link")
    with pytest.raises(OSError):  # the host's own source is opened without following a link
        tree.copy_in(tmp_path / "host-link", "copied.txt")
    assert not (tree.root / "copied.txt").exists()


def test_copy_in_replaces_a_planted_link_instead_of_writing_through_it(
    tree: Tree, outside: Path, tmp_path: Path
) -> None:
    os.symlink(outside / "secret.txt", tree.root / "report.txt")
    src = tmp_path / "upload.txt"
    src.write_text("uploaded")
    tree.copy_in(src, "report.txt")
    assert (outside / "secret.txt").read_text() == "host secret"
    assert not (tree.root / "report.txt").is_symlink()
    assert (tree.root / "report.txt").read_text() == "uploaded"


def test_link_in_places_the_same_inode(tree: Tree, tmp_path: Path) -> None:
    src = tmp_path / "object"
    src.write_text("stored")
    tree.link_in(src, "data/stored.txt")
    assert os.stat(tree.root / "data" / "stored.txt").st_ino == os.stat(src).st_ino


def test_remove_takes_the_file_and_the_folders_it_leaves_empty(tree: Tree) -> None:
    (tree.root / "data" / "keep.txt").write_text("k")
    tree.remove("data/deep/b.csv")
    assert not (tree.root / "data" / "deep").exists()
    assert (tree.root / "data" / "keep.txt").exists()  # data still holds a file
    tree.remove("data/deep/b.csv")  # gone already: not an error


def test_remove_takes_a_link_itself_never_its_target(tree: Tree, outside: Path) -> None:
    os.symlink(outside / "secret.txt", tree.root / "link.txt")
    os.symlink(outside, tree.root / "via")
    tree.remove("link.txt")
    tree.remove("via/secret.txt")  # through a link: refused quietly, nothing removed
    assert not os.path.lexists(tree.root / "link.txt")
    assert (outside / "secret.txt").read_text() == "host secret"


def test_make_and_remove_folder_never_remove_one_that_holds_a_file(tree: Tree) -> None:
    tree.make_folder("made/inner")
    assert (tree.root / "made" / "inner").is_dir()
    tree.remove_folder("data")  # holds a file: kept
    tree.remove_folder("made/inner")
    tree.remove_folder("empty")
    assert (tree.root / "data").is_dir()
    assert tree.folders() == {"data", "data/deep", "made"}


def test_seal_makes_every_file_read_only_once(tree: Tree) -> None:
    assert tree.seal(None) == 2
    modes = {n: e.mode for n, e in tree.listing().items()}
    assert modes == {"a.txt": 0o444, "data/deep/b.csv": 0o444}
    assert tree.seal(None) == 0  # already sealed: nothing to do
