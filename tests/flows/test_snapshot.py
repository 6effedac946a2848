"""The workspace as versioned state: a read-only content store, manifests, and a workspace
snapshotted and restored through the sandbox's own operations (the fake's folder here)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from praxis.flows.store import snapshot
from praxis.flows.store.snapshot import FOLDER, Item, NotRecordable, Store, Workspace
from sandbox import FileStat, PathRefused
from sandbox.fake import FakeSandbox


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "objects")


@pytest.fixture
def box(tmp_path: Path) -> Iterator[FakeSandbox]:
    sb = FakeSandbox(workspace=tmp_path / "ws", name="r")
    sb.open()
    try:
        yield sb
    finally:
        sb.close()


class Counting(FakeSandbox):
    """The fake, counting the files fetched out of its workspace."""

    fetched: list[str]

    def fetch(self, name: str, dest: Path) -> str | None:
        self.fetched.append(name)
        return super().fetch(name, dest)


def write(box: FakeSandbox, name: str, data: bytes) -> None:
    path = Path(box.workspace.root) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# --- the store -------------------------------------------------------------------------------


def test_the_store_keeps_one_read_only_copy_per_content(store: Store, tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.write_bytes(b"same")
    two.write_bytes(b"same")
    assert store.add_file(one) == (sha(b"same"), 4)
    assert store.add_file(two) == (sha(b"same"), 4)
    kept = store.path(sha(b"same"))
    assert [p.name for p in store.root.iterdir() if p.is_file()] == [sha(b"same")]
    assert stat.S_IMODE(kept.stat().st_mode) == 0o444
    assert kept.stat().st_ino != one.stat().st_ino  # a copy: the source may change later
    one.write_bytes(b"changed")
    assert store.add_file(one) == (sha(b"changed"), 7)  # a new identity is read again
    assert kept.read_bytes() == b"same"
    assert not list((store.root / ".incoming").iterdir())


def test_the_store_refuses_a_link_and_a_fifo(store: Store, tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("host file")
    os.symlink(target, tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError):
        store.add_file(tmp_path / "link")
    with pytest.raises(PathRefused, match="not a regular file"):
        store.add_file(tmp_path / "fifo")
    assert not store.has(sha(b"host file"))


def test_the_store_takes_a_workspace_file_through_fetch(store: Store, box: FakeSandbox) -> None:
    write(box, "data/a.csv", b"x\n1\n")
    assert store.add_from(box, "data/a.csv") == (sha(b"x\n1\n"), 4)
    assert store.path(sha(b"x\n1\n")).read_bytes() == b"x\n1\n"
    with pytest.raises(PathRefused):
        store.add_from(box, "missing.csv")
    assert not list((store.root / ".incoming").iterdir())  # the failed copy is gone


# --- manifests -------------------------------------------------------------------------------


def test_the_digest_is_of_paths_and_contents_not_identities() -> None:
    a = {"a.txt": Item(sha(b"a"), 1, ino=5, mtime_ns=1), "d/": Item(FOLDER, 0)}
    same = {"a.txt": Item(sha(b"a"), 1, ino=9, mtime_ns=2), "d/": Item(FOLDER, 0)}
    assert snapshot.digest(a) == snapshot.digest(same)
    assert snapshot.digest(a) != snapshot.digest({"a.txt": a["a.txt"]})
    assert snapshot.digest(a) != snapshot.digest({"b.txt": a["a.txt"], "d/": a["d/"]})


def test_a_manifest_round_trips_with_its_folders(tmp_path: Path) -> None:
    manifest = {
        "d/a.txt": Item(sha(b"a"), 1, ino=3, mtime_ns=4, ctime_ns=5),
        "d/": Item(FOLDER, 0),
        "empty/": Item(FOLDER, 0),
    }
    path = tmp_path / "snapshots" / "p" / "1.json"
    snapshot.save_manifest(path, manifest, phase="p")
    assert snapshot.load_manifest(path) == manifest
    assert snapshot.load_manifest(tmp_path / "none.json") is None
    path.write_text('{"files": {"a": {"colour": 1}}}')
    with pytest.raises(ValueError, match="not a manifest"):
        snapshot.load_manifest(path)


def test_a_manifest_file_is_json_with_a_line_per_file_and_folder(tmp_path: Path) -> None:
    manifest = {
        'd/\u00e9 "q".csv': Item(sha(b"e"), 1, ino=3, mtime_ns=4, ctime_ns=5),
        "a.txt": Item(sha(b"a"), 1),
        "d/": Item(FOLDER, 0),
        "x/y/": Item(FOLDER, 0),
    }
    path = tmp_path / "m.json"
    snapshot.save_manifest(path, manifest, pre="p", definition="d")
    data = json.loads(path.read_text())
    assert data["digest"] == snapshot.digest(manifest) and data["pre"] == "p"
    assert data["files"]['d/\u00e9 "q".csv'] == {
        "sha256": sha(b"e"),
        "size": 1,
        "ino": 3,
        "mtime_ns": 4,
        "ctime_ns": 5,
    }
    assert list(data["files"]) == sorted(data["files"]) and data["folders"] == ["d", "x/y"]
    lines = path.read_text().splitlines()
    assert sum(sha(b"a") in line for line in lines) == 1  # one line per file
    assert snapshot.load_manifest(path) == manifest
    for empty in ({}, {"only/": Item(FOLDER, 0)}):
        snapshot.save_manifest(path, empty)
        assert snapshot.load_manifest(path) == empty


def test_a_workspace_loads_the_manifest_it_saved_without_reading_it(
    store: Store, box: FakeSandbox, tmp_path: Path
) -> None:
    ws = Workspace(box, store)
    manifest = {"a.txt": Item(sha(b"a"), 1, ino=3, mtime_ns=4, ctime_ns=5)}
    path = tmp_path / "snapshots" / "p" / "1.post.json"
    ws.save(path, manifest)
    assert snapshot.load_manifest(path) == manifest  # on disk, as save_manifest writes it
    path.unlink()
    loaded = ws.load(path)
    assert loaded == manifest
    assert loaded is not None and loaded is not manifest
    loaded.clear()  # what a caller does with it never changes what the next load gives
    assert ws.load(path) == manifest
    assert ws.load(tmp_path / "other.json") is None  # not saved here: read (and missing)
    for n in range(snapshot.KEPT):
        ws.save(tmp_path / f"{n}.json", manifest)
    assert ws.load(path) is None  # only the last few are kept; the others are read again


def test_the_store_remembers_a_file_it_filed_until_it_changes(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src.csv"
    src.write_bytes(b"id\n1\n")
    digest, _ = store.add_file(src)
    out = tmp_path / "out.csv"
    os.link(store.path(digest), out)
    store.remember(out, digest)
    hashed: list[int] = []
    real = snapshot.hash_fd
    monkeypatch.setattr(snapshot, "hash_fd", lambda fd: hashed.append(fd) or real(fd))
    assert store.add_file(out) == (digest, 5) and hashed == []  # not read again
    out.unlink()
    out.write_bytes(b"id\n2\n")  # another file at the same path
    assert store.add_file(out) == (sha(b"id\n2\n"), 5) and len(hashed) == 1


# --- the workspace ---------------------------------------------------------------------------


def test_a_snapshot_reads_only_new_or_changed_files(store: Store, tmp_path: Path) -> None:
    box = Counting(workspace=tmp_path / "ws", name="r")
    box.fetched = []
    box.open()
    write(box, "a.txt", b"a")
    write(box, "d/b.txt", b"b")
    ws = Workspace(box, store)
    first = ws.snapshot()
    assert {n: i.sha256 for n, i in first.items()} == {
        "a.txt": sha(b"a"),
        "d/b.txt": sha(b"b"),
        "d/": FOLDER,
    }
    assert sorted(box.fetched) == ["a.txt", "d/b.txt"] and ws.stored == (2, 2)
    write(box, "d/b.txt", b"bb")
    second = ws.snapshot()
    assert box.fetched[2:] == ["d/b.txt"] and ws.stored == (1, 2)
    assert second["d/b.txt"].sha256 == sha(b"bb") and second["a.txt"] == first["a.txt"]


def test_a_snapshot_over_its_bounds_is_not_recordable(store: Store, box: FakeSandbox) -> None:
    for n in range(3):
        write(box, f"f{n}.txt", b"x" * 10)
    with pytest.raises(NotRecordable, match="3 new files.*at most 2"):
        Workspace(box, store).snapshot(max_new=2)
    with pytest.raises(NotRecordable, match="30 bytes.*at most 20"):
        Workspace(box, store).snapshot(max_bytes=20)
    assert len(Workspace(box, store).snapshot(max_new=3, max_bytes=30)) == 3


def test_a_name_that_is_not_utf8_is_not_recordable(store: Store, box: FakeSandbox) -> None:
    os.close(os.open(os.path.join(os.fsencode(box.workspace.root), b"bad\xff.txt"), os.O_CREAT))
    with pytest.raises(NotRecordable, match="not UTF-8"):
        Workspace(box, store).snapshot()


def test_restore_makes_the_workspace_hold_exactly_the_manifest(
    store: Store, box: FakeSandbox, tmp_path: Path
) -> None:
    write(box, "keep.txt", b"keep")
    write(box, "data/in.csv", b"x\n1\n")
    ws = Workspace(box, store)
    before = ws.snapshot()
    write(box, "data/in.csv", b"rewritten")  # a later phase changes, adds, links, makes folders
    write(box, "later/deep/new.txt", b"new")
    os.mkdir(Path(box.workspace.root) / "made_by_later")
    (tmp_path / "host.txt").write_text("host")
    os.symlink(tmp_path / "host.txt", Path(box.workspace.root) / "link.txt")
    changed = ws.restore(before)
    assert changed == ["data/in.csv", "later/deep/new.txt", "link.txt", "made_by_later/"]
    assert snapshot.digest(ws.snapshot()) == snapshot.digest(before)
    root = Path(box.workspace.root)
    assert (root / "data" / "in.csv").read_bytes() == b"x\n1\n"
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == [
        "data",
        "data/in.csv",
        "keep.txt",
    ]
    assert (tmp_path / "host.txt").read_text() == "host"


def test_restore_brings_back_a_deleted_file_and_an_empty_folder(
    store: Store, box: FakeSandbox
) -> None:
    write(box, "a.txt", b"a")
    os.mkdir(Path(box.workspace.root) / "empty")
    ws = Workspace(box, store)
    before = ws.snapshot()
    assert before["empty/"] == Item(FOLDER, 0)
    os.unlink(Path(box.workspace.root) / "a.txt")
    os.rmdir(Path(box.workspace.root) / "empty")
    assert ws.restore(before) == ["a.txt", "empty/"]
    assert (Path(box.workspace.root) / "a.txt").read_bytes() == b"a"
    assert (Path(box.workspace.root) / "empty").is_dir()
    assert ws.restore(before) == []  # already there: nothing changes


class Looking(FakeSandbox):
    """The fake, counting how often the runner looks at the whole workspace."""

    looks = 0

    def survey(self) -> tuple[dict[str, FileStat], set[str], set[str]]:
        self.looks += 1
        return super().survey()

    def listing(self) -> dict[str, FileStat]:
        self.looks += 1
        return super().listing()

    def folders(self) -> set[str]:
        self.looks += 1
        return super().folders()

    def strays(self) -> set[str]:
        self.looks += 1
        return super().strays()


def test_restoring_and_recording_look_at_the_workspace_once_each(
    store: Store, tmp_path: Path
) -> None:
    box = Looking(workspace=tmp_path / "ws", name="r")
    box.open()
    write(box, "d/a.txt", b"a")
    os.mkdir(Path(box.workspace.root) / "empty")
    ws = Workspace(box, store)
    before = ws.snapshot()
    assert box.looks == 1
    assert ws.restore(before) == [] and box.looks == 2
    assert ws.snapshot(settled=True) == before and box.looks == 2  # restore's look, unchanged
    assert ws.snapshot(settled=True) == before and box.looks == 3  # no restore since: looks
    write(box, "d/b.txt", b"b")  # a phase adds a file, in a new folder too
    write(box, "new/c.txt", b"c")
    looks = box.looks
    assert ws.restore(before) == ["d/b.txt", "new/c.txt"]  # new/ went with its file
    assert box.looks == looks + 2  # a removal may take folders with it: they are looked at
    assert snapshot.digest(ws.snapshot(settled=True)) == snapshot.digest(before)
    assert box.looks == looks + 3  # restore changed the workspace: its look is not it
    ws.restore(before)
    ws.place("d/a.txt", before["d/a.txt"].sha256, 1)  # an upload after restore's look
    looks = box.looks
    after = ws.snapshot(settled=True)
    assert box.looks == looks + 1 and after["d/a.txt"] != before["d/a.txt"]  # a new file
    assert not (Path(box.workspace.root) / "new").exists()


def test_restore_keeps_a_folder_that_a_removal_emptied(store: Store, box: FakeSandbox) -> None:
    root = Path(box.workspace.root)
    os.mkdir(root / "links")
    os.mkdir(root / "files")
    ws = Workspace(box, store)
    before = ws.snapshot()
    assert {"links/", "files/"} <= set(before)
    os.symlink("/etc/passwd", root / "links" / "l")  # removing them empties both folders
    write(box, "files/x.txt", b"x")
    assert ws.restore(before) == ["files/", "files/x.txt", "links/", "links/l"]
    assert (root / "links").is_dir() and (root / "files").is_dir()
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == ["files", "links"]
