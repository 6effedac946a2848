"""The workspace as versioned state (DESIGN.md §5): content-addressed files and manifests.

``objects/<sha256>`` holds every file a manifest names, read-only, written once. A manifest
maps each workspace path to its content (sha256, size) and to the identity the file had in the
workspace (inode, mtime, ctime: these change whenever the content can have), so a file whose
identity is unchanged is not read again. ``snapshots/<phase>/<n>.json`` is the workspace as
it was before attempt n of a phase; ``<n>.post.json`` as the phase left it (after collection).

``Workspace`` keeps what the sandbox's workspace holds now, moves files between it and the
store only through the sandbox's own operations (upload, listing, fetch, remove), and so works
on every backend. Nothing in the store shares an inode with a file a kernel can write: the
store copies what it takes in, and files go out as copies (the sandbox decides: a link only
where no kernel can write it). Nothing trusts an object's name: each is hashed before it is
used (``intact``), and content added again replaces a file under its name that does not
hold it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox import FileStat, PathRefused, Sandbox, WalkRefused
from sandbox.files import READ_FLAGS, hash_fd, hash_file, replace_file
from sandbox.tree import copy_fd_to

from ...errors import PraxisError
from ..definition import flow_files
from ..definition.digest import known_digest
from . import intact

log = logging.getLogger("praxis")
MAX_FILES = 10_000  # new files one phase may leave in the workspace
MAX_BYTES = 1 << 30  # bytes of new files one phase may leave (their size, holes included)
KEPT = 4  # manifests a Workspace keeps after saving them (a phase's pre and post, and the last)


@dataclass(frozen=True)
class Item:
    """One file of a manifest: its content, and its identity where it was seen."""

    sha256: str
    size: int
    ino: int = 0
    mtime_ns: int = 0
    ctime_ns: int = 0

    def same_file(self, st: FileStat) -> bool:
        """True when ``st`` is this very file, unchanged (identity known and equal)."""
        return bool(self.ino) and (self.ino, self.size, self.mtime_ns, self.ctime_ns) == (
            st.ino,
            st.size,
            st.mtime_ns,
            st.ctime_ns,
        )

    def seen_as(self, st: FileStat) -> Item:
        return Item(self.sha256, self.size, st.ino, st.mtime_ns, st.ctime_ns)


Manifest = dict[str, Item]
FOLDER = "folder"  # the sha256 of a manifest entry "<path>/": a folder, empty or not


def is_folder(name: str) -> bool:
    return name.endswith("/")


def digest(manifest: Manifest) -> str:
    """The content of a workspace, as one sha256 (paths and contents; not identities)."""
    text = "".join(f"{name}\0{manifest[name].sha256}\n" for name in sorted(manifest))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def save_manifest(path: Path, manifest: Manifest, **extra: Any) -> None:
    """``files`` (path -> content and identity) and ``folders`` (every folder, empty or not):
    one JSON object, a line per file and per folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, manifest_text(manifest, **extra).encode() + b"\n", durable=False)


def manifest_text(manifest: Manifest, **extra: Any) -> str:
    """The JSON of a manifest file (json's C encoder per line: its indenting encoder takes
    tens of ms on a workspace of thousands of files)."""
    dumps = json.dumps
    head = [f" {dumps(k)}: {dumps(v)}," for k, v in {"digest": digest(manifest), **extra}.items()]
    files = [
        f'  {dumps(n)}: {{"sha256": {dumps(i.sha256)}, "size": {i.size}, "ino": {i.ino}, '
        f'"mtime_ns": {i.mtime_ns}, "ctime_ns": {i.ctime_ns}}}'
        for n, i in sorted(manifest.items())
        if not is_folder(n)
    ]
    folders = [f"  {dumps(n[:-1])}" for n in sorted(manifest) if is_folder(n)]
    return "\n".join(
        [
            "{",
            *head,
            ' "files": ' + _block("{", files, "},"),
            ' "folders": ' + _block("[", folders, "]"),
            "}",
        ]
    )


def _block(start: str, lines: list[str], end: str) -> str:
    return start + ("\n" + ",\n".join(lines) + "\n " if lines else "") + end


def load_manifest(path: Path) -> Manifest | None:
    """The manifest at ``path``; None when there is none (a run older than snapshots)."""
    try:
        return parse_manifest(path.read_bytes())
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def parse_manifest(text: bytes) -> Manifest:
    """The manifest a manifest file's bytes hold; ValueError when they hold none."""
    try:
        data = json.loads(text)
        found = {name: Item(**item) for name, item in data["files"].items()}
        found.update({f"{name}/": Item(FOLDER, 0) for name in data.get("folders", [])})
        return found
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a manifest ({exc})") from None


class NotRecordable(PraxisError):
    """Raised when a phase left what cannot be recorded: more new files or bytes than a
    phase may, or a file name that is not UTF-8."""


class Store:
    """``objects/``: files by sha256, read-only, each written once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._seen: dict[tuple[Any, ...], str] = {}  # host file identity -> sha256

    def path(self, sha: str) -> Path:
        return self.root / sha

    def has(self, sha: str) -> bool:
        return self.path(sha).is_file()

    def add_file(self, src: Path, *, fresh: bool = False) -> tuple[str, int]:
        """Take a copy of host file ``src`` (never following a link); (sha256, size). Content
        the store has already is read once, not copied; ``fresh`` (content likely new, such
        as an edit): copied while it is hashed, read once either way."""
        fd = os.open(src, READ_FLAGS)
        try:
            return self.add_fd(fd, str(src), fresh=fresh)
        finally:
            os.close(fd)

    def add_flow_file(self, root: Path, name: str) -> tuple[str, int]:
        """Take a copy of flow file ``name``, opened by descriptor inside ``root`` with no
        link followed (flow_files); (sha256, size)."""

        with flow_files.open_fd(root, name) as fd:
            return self.add_fd(fd, str(root / name))

    def add_fd(self, fd: int, src: str, *, fresh: bool = False) -> tuple[str, int]:
        """Take a copy of the regular file open at ``fd`` (known as ``src``); (sha256, size).
        A file whose digest this process knows (``digest``) is not hashed again."""
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise PathRefused(src, "is not a regular file")
        key = (src, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        sha = self._seen.get(key) or known_digest(st)
        if sha is None and fresh:
            tmp = self._incoming()
            sha = self._keep(tmp, copy_fd_to(fd, tmp))
            self._seen[key] = sha
            return sha, st.st_size
        if sha is None:
            sha = hash_fd(fd)
        if not intact.holds(self.path(sha), sha):  # missing, or not what its name says
            if self.has(sha):
                log.warning("object %s did not hold %s: stored again from it", sha, src)
            os.lseek(fd, 0, os.SEEK_SET)
            tmp = self._incoming()
            sha = self._keep(tmp, copy_fd_to(fd, tmp))
        self._seen[key] = sha
        return sha, st.st_size

    def remember(self, path: Path, sha: str) -> None:
        """Host file ``path`` (a copy or a link of object ``sha``, filed by the host) holds
        ``sha`` as it is now: ``add_file`` of it reads it again only once it has changed."""
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode):
            key = (str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            self._seen[key] = sha

    def add_from(self, sandbox: Sandbox, name: str) -> tuple[str, int]:
        """Take workspace file ``name`` (through the sandbox's fetch); (sha256, size)."""
        tmp = self._incoming()
        try:
            sha = sandbox.fetch(name, tmp)
            if sha is None:  # the backend did not hash on the way: read the copy once more
                sha = hash_file(tmp)
            size = tmp.stat().st_size
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return self._keep(tmp, sha), size

    def _incoming(self) -> Path:
        folder = self.root / ".incoming"
        folder.mkdir(parents=True, exist_ok=True)
        return folder / uuid.uuid4().hex

    def _keep(self, tmp: Path, sha: str) -> str:
        """Make ``tmp`` (just written, its content hashed on the way: ``sha``) the object
        ``sha``, unless the store holds it already (runs share its inode): shown by its
        bytes being ``tmp``'s, not by hashing it again. A file under that name that does not
        hold it (changed or put there outside praxis) is replaced."""
        if intact.holds_as(self.path(sha), sha, tmp):
            tmp.unlink(missing_ok=True)
            return sha
        os.chmod(tmp, 0o444)
        made = os.stat(tmp).st_ino
        os.replace(tmp, self.path(sha))
        st = os.stat(self.path(sha), follow_symlinks=False)
        if st.st_ino == made:  # not replaced again since by another run adding it too
            intact.remember(st, sha)
        return sha


class Workspace:
    """What a sandbox's workspace holds now, kept in step with the store.

    ``known`` is the last manifest this object made or restored: a file whose identity is
    unchanged since is not fetched again.
    """

    def __init__(self, sandbox: Sandbox, store: Store, known: Manifest | None = None) -> None:
        self.sandbox = sandbox
        self.store = store
        self.known: Manifest = dict(known or {})
        self.placed: Manifest = {}  # placed since the last listing: content known, identity not
        self.seen: dict[str, FileStat] = {}  # the files as this object last looked at them
        # files and folders as restore last saw them, while nothing has changed them since
        self.look: tuple[dict[str, FileStat], set[str]] | None = None
        self.stored = (0, 0)  # files and bytes the last snapshot read into the store
        self.settled: tuple[str, Manifest] | None = None  # (phase, pre-state) just settled
        self._saved: dict[Path, Manifest] = {}  # the manifests this object saved last

    def save(self, path: Path, manifest: Manifest, **extra: Any) -> None:
        """``save_manifest``, keeping the manifest for ``load`` (the next phase starts from
        the one the phase before it saved)."""
        save_manifest(path, manifest, **extra)
        self._saved.pop(path, None)
        self._saved[path] = dict(manifest)
        while len(self._saved) > KEPT:
            self._saved.pop(next(iter(self._saved)))

    def load(self, path: Path) -> Manifest | None:
        """``load_manifest``, without reading back a manifest this object saved."""
        kept = self._saved.get(path)
        return dict(kept) if kept is not None else load_manifest(path)

    def snapshot(
        self, *, max_new: int = MAX_FILES, max_bytes: int = MAX_BYTES, settled: bool = False
    ) -> Manifest:
        """The workspace now: every file's content in the store. Files not seen before (new
        or changed) are fetched into the store: at most ``max_new`` of them, ``max_bytes`` in
        all, else OutputTooLarge. Call it only while no sandbox process runs. ``settled``:
        no phase ran since this object restored the workspace; when neither that restore
        nor anything since changed a file, its look at the workspace is the workspace."""
        look, self.look = self.look, None
        listing, folders = look if settled and look is not None else self.sandbox.survey()[:2]
        for name in listing:
            try:
                name.encode("utf-8")
            except UnicodeEncodeError:
                shown = name.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
                raise NotRecordable(
                    f"the phase wrote a file whose name is not UTF-8 ({shown!r}): "
                    "praxis records only UTF-8 names; rename or remove it in the phase"
                ) from None
        unknown = sorted(n for n, st in listing.items() if self._item(n, st) is None)
        if len(unknown) > max_new:
            raise NotRecordable(
                f"the phase left {len(unknown)} new files in the workspace; at most "
                f"{max_new} are collected (the limit of files per phase)"
            )
        total = sum(listing[n].size for n in unknown)
        if total > max_bytes:
            raise NotRecordable(
                f"the phase left {total} bytes of new files; at most {max_bytes} are collected "
                "(the limit of bytes per phase: raise it with sandbox.collect, e.g. 4g)"
            )
        manifest: Manifest = {}
        for name, st in listing.items():
            item = self._item(name, st)
            if item is None:
                sha, size = self.store.add_from(self.sandbox, name)
                item = Item(sha, size)
            manifest[name] = item.seen_as(st)
        for folder in folders:
            manifest[folder + "/"] = Item(FOLDER, 0)
        self.known, self.placed, self.seen = manifest, {}, listing
        self.stored = (len(unknown), total)
        return manifest

    def _item(self, name: str, st: FileStat) -> Item | None:
        """What ``name`` holds, if known without reading it."""
        if name in self.placed:  # put there by this object since the last listing
            return self.placed[name]
        item = self.known.get(name)
        return item if item is not None and item.same_file(st) else None

    def holds(self, name: str, sha: str) -> bool:
        """Whether the workspace holds content ``sha`` at ``name`` as an upload would leave
        it: put there by this object, or seen there by its last look as it recorded it, on
        an isolated backend (whose ``quiesce`` makes every file read-only to later code;
        elsewhere only an upload is read-only)."""
        placed = self.placed.get(name)
        if placed is not None:
            return placed.sha256 == sha
        st = self.seen.get(name)
        if st is None or not self.sandbox.isolated:
            return False
        item = self._item(name, st)
        return item is not None and item.sha256 == sha

    def place(self, name: str, sha: str, size: int) -> None:
        """Put the stored content ``sha`` at workspace path ``name`` (read-only there)."""
        self.look = None
        checked = intact.check(self.store.path(sha), sha, name)  # what the name says
        self.sandbox.upload(self.store.path(sha), name)
        intact.linked(self.store.path(sha), sha, checked)  # the upload may be a link
        self.placed[name] = Item(sha, size)

    def restore(self, target: Manifest) -> list[str]:
        """Make the workspace hold exactly ``target``: its files and folders, and nothing
        else (no link, FIFO or socket a phase left); the names removed or replaced."""
        listing, folders, strays, cleared = self._look()  # one look at the workspace
        changed = sorted(strays)  # a link a phase left never reaches another
        for name in changed:
            self.sandbox.remove(name)
        if changed:  # removing one takes the folders it leaves empty with it: look again
            listing, folders, _ = self.sandbox.survey()
        changed += cleared
        self.seen = dict(listing)
        looked = len(changed)  # the changes this look saw done
        removed = False
        files = {n: i for n, i in target.items() if not is_folder(n)}
        for name, st in listing.items():
            item, current = files.get(name), self._item(name, st)
            if item is None:
                self.sandbox.remove(name)
                self.known.pop(name, None)
                self.placed.pop(name, None)
                self.seen.pop(name, None)
                changed.append(name)
                removed = True
            elif current is None or current.sha256 != item.sha256:
                self.place(name, item.sha256, item.size)
                changed.append(name)
        for name, item in files.items():
            if name not in listing:
                self.place(name, item.sha256, item.size)
                changed.append(name)
        wanted = {n[:-1] for n in target if is_folder(n)}
        holding = _parents(files)  # the folders that hold a file (all a manifest had before)
        wanted |= holding
        # a removal may take emptied folders with it; a file placed made the folders above it
        now = None if removed else folders | holding
        changed += self._restore_folders(wanted, now)
        self.look = (listing, folders) if len(changed) == looked else None
        return sorted(changed)

    def _look(self) -> tuple[dict[str, FileStat], set[str], set[str], list[str]]:
        """The workspace's files, folders and strays; a workspace no walk can read whole (too
        deep, too many entries: a phase left it so) is emptied first, so a restore never
        fails the way the phase did."""
        try:
            return (*self.sandbox.survey(), [])
        except WalkRefused as exc:
            log.info("emptying the workspace to restore it: %s", exc)
            self.sandbox.clear()
            self.known, self.placed, self.seen = {}, {}, {}
            return {}, set(), set(), [f"{exc.folder}/" if exc.folder else "./"]

    def _restore_folders(self, wanted: set[str], current: set[str] | None) -> list[str]:
        """Make the folders ``wanted``; ``current`` are those there now (None: look)."""
        try:
            if current is None:
                current = self.sandbox.folders()
            for folder in sorted(current - wanted, key=lambda f: -f.count("/")):
                self.sandbox.remove_folder(folder)  # deepest first; only once empty
            for folder in sorted(wanted - current):
                self.sandbox.make_folder(folder)
        except NotImplementedError:
            return []
        return sorted(f + "/" for f in (current ^ wanted))


def _parents(names: Iterable[str]) -> set[str]:
    """Every folder above each of ``names``."""
    found: set[str] = set()
    for name in names:
        parts = name.split("/")[:-1]
        found.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return found
