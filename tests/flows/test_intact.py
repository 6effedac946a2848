"""An object of the store is used only as what its name says: hashed by descriptor before its
first use in a process, again once anything changed it, and replaced when content the store
is given again shows it to be something else."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from praxis.flows.store import intact
from praxis.flows.store.intact import ObjectTampered
from praxis.flows.store.snapshot import Store, Workspace
from sandbox.fake import FakeSandbox


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tamper(path: Path, data: bytes) -> None:
    """Change a read-only file in place, as its owner can."""
    os.chmod(path, 0o644)
    with open(path, "r+b") as fh:
        fh.write(data)


def test_an_object_edited_in_place_after_it_was_checked_is_checked_again(tmp_path: Path) -> None:
    store = Store(tmp_path / "objects")
    src = tmp_path / "in.csv"
    src.write_bytes(b"fruit,count\napple,1\n")
    name, _ = store.add_file(src)  # written by this process: known to hold its name
    intact.check(store.path(name), name, "in.csv")
    tamper(store.path(name), b"fruit,count\napple,9\n")
    with pytest.raises(ObjectTampered) as caught:
        intact.check(store.path(name), name, "in.csv")
    assert name in str(caught.value) and "in.csv" in str(caught.value)
    assert f"rm {store.path(name)}" in str(caught.value)
    assert not intact.holds(store.path(name), name)


def test_a_copy_of_a_tampered_object_is_never_kept(tmp_path: Path) -> None:
    objects = tmp_path / "objects"
    objects.mkdir()
    planted = objects / sha(b"apple,1\n")
    planted.write_bytes(b"apple,999999\n")
    dest = tmp_path / "out.csv"
    with pytest.raises(ObjectTampered, match="it stood for out.csv"):
        intact.copy(planted, planted.name, dest, "out.csv", mode=0o444)
    assert not dest.exists()
    with pytest.raises(ObjectTampered):
        intact.read(planted, planted.name, "a manifest")
    good = objects / sha(b"apple,1\n" * 1000)
    good.write_bytes(b"apple,1\n" * 1000)
    intact.copy(good, good.name, dest, "out.csv", mode=0o444)
    assert dest.read_bytes() == good.read_bytes()
    assert dest.stat().st_ino != good.stat().st_ino and dest.stat().st_mode & 0o777 == 0o444


def test_a_tampered_object_never_reaches_the_workspace(tmp_path: Path) -> None:
    store = Store(tmp_path / "objects")
    src = tmp_path / "p1.csv"
    src.write_bytes(b"fruit,count\napple,1\n")
    name, size = store.add_file(src)
    tamper(store.path(name), b"fruit,count\napple,7\n")
    box = FakeSandbox(workspace=tmp_path / "workspace", name="r1")
    box.open()
    try:
        ws = Workspace(box, store)
        with pytest.raises(ObjectTampered, match="it stood for data/p1.csv"):
            ws.place("data/p1.csv", name, size)
        assert "data/p1.csv" not in box.listing()
    finally:
        box.close()


def test_content_given_again_replaces_a_planted_object(tmp_path: Path) -> None:
    store = Store(tmp_path / "objects")
    real = b"fruit,count\napple,1\n"
    planted = store.path(sha(real))
    planted.parent.mkdir(parents=True)
    planted.write_bytes(b"fruit,count\napple,999999\n")
    src = tmp_path / "in.csv"
    src.write_bytes(real)
    name, _ = store.add_file(src)
    assert name == planted.name and planted.read_bytes() == real
    assert planted.stat().st_mode & 0o777 == 0o444


def test_a_link_costs_no_second_hash_and_an_edit_through_it_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "objects")
    src = tmp_path / "p1.csv"
    src.write_bytes(b"fruit,count\napple,1\n")
    name, _ = store.add_file(src)
    out = tmp_path / "output.csv"
    intact.link(store.path(name), name, out, "p1.csv")  # a recorded output: the object's inode
    with monkeypatch.context() as patched:
        hashed: list[int] = []
        patched.setattr(intact, "hash_fd", lambda fd: hashed.append(fd) or name)
        intact.check(store.path(name), name, "p1.csv")
        assert hashed == []  # the link changed only the ctime: still known
    tamper(out, b"fruit,count\napple,7\n")  # through the output
    with pytest.raises(ObjectTampered, match="it stood for p1.csv"):
        intact.check(store.path(name), name, "p1.csv")


def test_content_stored_again_is_shown_by_its_bytes_not_hashed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An object this process did not write (another process's, or shipped) meets the same
    content collected again: it is compared with the new copy (hashed on its way in), not
    hashed; it stays, and runs share its inode. One whose bytes differ is replaced."""
    real = b"fruit,count\n" + b"apple,1\n" * 5000
    objects = tmp_path / "objects"
    objects.mkdir()
    earlier = objects / sha(real)
    earlier.write_bytes(real)  # as another process left it
    os.chmod(earlier, 0o444)
    inode = earlier.stat().st_ino
    src = tmp_path / "out.csv"
    src.write_bytes(real)
    store = Store(objects)
    with monkeypatch.context() as patched:
        patched.setattr(intact, "hash_fd", lambda fd: pytest.fail("the object was hashed"))
        name, _ = store.add_file(src, fresh=True)
    assert name == earlier.name and earlier.stat().st_ino == inode
    assert not list((objects / ".incoming").iterdir())  # the new copy was dropped

    other = tmp_path / "other"
    other.mkdir()
    planted = other / sha(real)
    planted.write_bytes(real[:-2] + b"9\n")  # the same size, one byte changed
    planted_inode = planted.stat().st_ino
    name, _ = Store(other).add_file(src, fresh=True)
    assert planted.read_bytes() == real and planted.stat().st_ino != planted_inode
    unknown = tmp_path / "unknown"
    unknown.write_bytes(real)  # not written through the store: nothing vouches for it
    assert not intact.holds_as(unknown, name, tmp_path / "missing")  # no copy to compare with
    assert intact.holds_as(unknown, name, src)
