"""The workspace folder seen from the host: sizes, read-only uploads (a copy, or a link only
where no kernel could write the source), fetches by copy, sealing."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from sandbox import OutputTooLarge, PathRefused
from sandbox.fake import FakeSandbox
from sandbox.values import disk_bytes as parse_size
from sandbox.workspace import Composed, WorkspaceFolder

KERNEL_UID = 1000  # the docker backend's kernels


@pytest.mark.parametrize(
    ("value", "size"),
    [(512, 512), ("512", 512), ("64m", 64 << 20), ("10g", 10 << 30), ("1.5k", 1536),
     ("2GiB", 2 << 30), (" 3 mb ", 3 << 20), ("1t", 1 << 40)],
)  # fmt: skip
def test_sizes_are_powers_of_1024(value: str | int, size: int) -> None:
    assert parse_size(value) == size


@pytest.mark.parametrize("value", ["ten", "-1", "1x", "", "1 g g", True])
def test_a_size_that_is_not_one_is_refused_with_the_value(value: object) -> None:
    with pytest.raises(ValueError, match="is not a size like 512m or 10g"):
        parse_size(value)  # type: ignore[arg-type]


@pytest.fixture
def ws(tmp_path: Path) -> WorkspaceFolder:
    workspace = WorkspaceFolder(tmp_path / "runs" / "r1" / "workspace", kernel_uid=KERNEL_UID)
    workspace.open()
    return workspace


def source(tmp_path: Path, mode: int, name: str = "src.csv") -> Path:
    path = tmp_path / name
    path.write_text("id\n1\n")
    os.chmod(path, mode)
    return path


def test_open_makes_the_folder_with_its_mode(tmp_path: Path, ws: WorkspaceFolder) -> None:
    assert ws.root.is_dir() and stat.S_IMODE(ws.root.stat().st_mode) == 0o777
    plain = WorkspaceFolder(tmp_path / "plain", mode=None)
    plain.root.mkdir(mode=0o700)
    plain.open()
    assert stat.S_IMODE(plain.root.stat().st_mode) == 0o700
    assert ws.quota is None  # no disk quota asked: a plain folder


def test_an_upload_is_a_read_only_copy_by_default(tmp_path: Path, ws: WorkspaceFolder) -> None:
    src = source(tmp_path, 0o644)
    ws.upload(src, "data/in.csv")
    placed = ws.root / "data" / "in.csv"
    assert placed.read_text() == "id\n1\n"
    assert stat.S_IMODE(placed.stat().st_mode) == 0o444
    assert placed.stat().st_ino != src.stat().st_ino


def test_a_read_only_source_no_kernel_owns_is_linked_not_copied(tmp_path: Path) -> None:
    me = os.getuid()
    others = WorkspaceFolder(tmp_path / "others", kernel_uid=me + 1)  # kernels of another uid
    others.open()
    linked = source(tmp_path, 0o444, name="object")
    others.upload(linked, "a.csv")
    assert (others.root / "a.csv").stat().st_ino == linked.stat().st_ino
    writable = source(tmp_path, 0o644, name="writable")
    others.upload(writable, "w.csv")  # a kernel could write through a link: a copy
    assert (others.root / "w.csv").stat().st_ino != writable.stat().st_ino
    mine = WorkspaceFolder(tmp_path / "mine", kernel_uid=me)  # kernels own the source: a copy
    mine.open()
    mine.upload(linked, "a.csv")
    assert (mine.root / "a.csv").stat().st_ino != linked.stat().st_ino


def test_an_upload_replaces_the_file_and_never_writes_through_a_link(
    tmp_path: Path, ws: WorkspaceFolder
) -> None:
    (tmp_path / "host.txt").write_text("host")
    os.symlink(tmp_path / "host.txt", ws.root / "in.csv")
    ws.upload(source(tmp_path, 0o644), "in.csv")
    assert (tmp_path / "host.txt").read_text() == "host"
    assert (ws.root / "in.csv").read_text() == "id\n1\n"


def test_an_upload_of_what_is_not_a_regular_host_file_is_refused(
    tmp_path: Path, ws: WorkspaceFolder
) -> None:
    os.symlink(source(tmp_path, 0o644), tmp_path / "link.csv")
    for src in (tmp_path / "link.csv", tmp_path / "missing.csv", tmp_path):
        with pytest.raises(PathRefused, match="not a regular file on the host"):
            ws.upload(src, "in.csv")
    with pytest.raises(PathRefused):
        ws.upload(source(tmp_path, 0o644), "../out.csv")
    assert ws.listing() == {}


def test_a_fetch_is_a_copy_with_its_sha256_and_its_bound(
    tmp_path: Path, ws: WorkspaceFolder
) -> None:
    (ws.root / "out.csv").write_bytes(b"id\n1\n")
    dest = tmp_path / "fetched" / "out.csv"
    assert ws.fetch("out.csv", dest) == hashlib.sha256(b"id\n1\n").hexdigest()
    assert dest.read_bytes() == b"id\n1\n"
    assert dest.stat().st_ino != (ws.root / "out.csv").stat().st_ino
    with pytest.raises(OutputTooLarge):
        ws.fetch("out.csv", tmp_path / "small", max_bytes=2)
    assert not (tmp_path / "small").exists()


def test_the_listing_names_files_with_their_identity(ws: WorkspaceFolder) -> None:
    (ws.root / "d").mkdir()
    (ws.root / "d" / "a.txt").write_text("abc")
    os.symlink("/etc/passwd", ws.root / "link")
    listing = ws.listing()
    assert list(listing) == ["d/a.txt"]
    info = (ws.root / "d" / "a.txt").stat()
    assert (listing["d/a.txt"].size, listing["d/a.txt"].ino) == (3, info.st_ino)
    assert ws.folders() == {"d"} and ws.strays() == {"link"}
    assert ws.survey() == (listing, {"d"}, {"link"})  # the three from one walk


def test_sealing_makes_every_file_read_only(ws: WorkspaceFolder) -> None:
    (ws.root / "a.txt").write_text("a")
    (ws.root / "d").mkdir()
    (ws.root / "d" / "b.txt").write_text("b")
    os.chmod(ws.root / "d" / "b.txt", 0o666)
    ws.seal()
    for name in ("a.txt", "d/b.txt"):
        assert stat.S_IMODE((ws.root / name).stat().st_mode) == 0o444, name


def test_a_folder_backends_file_half_is_its_workspaces_own_methods(tmp_path: Path) -> None:
    box = FakeSandbox(workspace=tmp_path / "ws", name="composed")
    half = ["upload", "listing", "fetch", "remove", "folders", "strays", "survey"]
    half += ["make_folder", "remove_folder", "clear"]
    for name in half:
        method = getattr(box, name)
        assert method.__self__ is box.workspace, name
        assert method.__func__ is getattr(WorkspaceFolder, name), name
    box.open()
    src = tmp_path / "in.txt"
    src.write_text("x")
    box.upload(src, "in.txt")
    assert set(box.workspace.listing()) == {"in.txt"}


def test_a_contract_method_is_composed_only_of_the_folders_method_of_its_name() -> None:
    with pytest.raises((TypeError, RuntimeError)) as caught:  # 3.11 wraps it in RuntimeError

        class Wrong(FakeSandbox):
            fetch = Composed(WorkspaceFolder.listing)  # type: ignore[assignment]

    error = caught.value if isinstance(caught.value, TypeError) else caught.value.__cause__
    assert str(error) == "Wrong.fetch is composed of the folder's listing"
