"""The flow folder as the chat may touch it: listing, reading, writing and undoing writes.

Every path is a relative name inside the flow folder. ``runs/``, ``run.lock``, ``.chat/`` and
any other dot-named part are off limits; so are symlinks, at the file and at every folder on
the way (each folder is opened relative to its parent with ``O_NOFOLLOW``). A write replaces
the file atomically (a temporary file in the same folder, then ``os.replace`` by descriptor)
and is journalled: the previous bytes are kept under ``.chat/<session>.undo/`` so ``undo``
restores them byte for byte, and removes a file the chat created.
"""

from __future__ import annotations

import difflib
import errno
import json
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from praxis.errors import Refused
from sandbox.errors import PathRefused
from sandbox.files import folder_below, open_nofollow, open_regular, replace_at
from sandbox.paths import name_problem

MAX_WRITE_BYTES = 1 << 20  # a definition, a script or a prompt; not a data set
MAX_READ_BYTES = 1 << 20
MAX_LISTED = 500
RESERVED = ("runs", "run.lock", ".chat")
SKIP_DIRS = {"__pycache__", "runs"}
NEW_FILE_MODE = 0o644


T = TypeVar("T")


class FileRefused(Refused):
    """Raised for a path or a write the chat may not make (off limits, a link, too large);
    the message is for the model, or for the person when it names the chat's own folder."""

    def next(self, flow: str) -> str:
        return f"praxis chat {flow}"


@dataclass(frozen=True)
class Write:
    """One journalled write: ``path`` held ``before`` (None: it did not exist)."""

    number: int
    path: str
    before: bytes | None
    after: bytes

    @property
    def diff(self) -> str:
        return unified_diff(self.path, self.before, self.after)


def unified_diff(path: str, before: bytes | None, after: bytes | None) -> str:
    old = [] if before is None else _text(before).splitlines(keepends=True)
    new = [] if after is None else _text(after).splitlines(keepends=True)
    lines = difflib.unified_diff(
        old,
        new,
        fromfile="/dev/null" if before is None else f"a/{path}",
        tofile="/dev/null" if after is None else f"b/{path}",
    )
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in lines)  # fmt: skip
    return text or f"(no change to {path})\n"


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def path_problem(path: object) -> str | None:
    """Why the chat may not use ``path``, or None."""
    problem = name_problem(path)
    if problem:
        return f"{path!r} {problem}: give a path relative to the flow folder"
    assert isinstance(path, str)
    parts = path.split("/")
    if parts[0] in RESERVED:
        return f"{path!r} is inside {parts[0]}, which belongs to praxis, not to the flow's files"
    if any(p.startswith(".") for p in parts):
        return f"{path!r} has a hidden (dot) part; the chat writes only visible flow files"
    return None


class WorkFiles:
    """The flow folder ``root``, with the undo journal of chat session ``session``."""

    def __init__(self, root: Path, session: str) -> None:
        self.root = root
        self.session = session

    # -- reading ------------------------------------------------------------------------

    def listing(self) -> list[tuple[str, int]]:
        """(relative path, size) of every visible regular file; links are not followed."""
        found: list[tuple[str, int]] = []
        for here, dirs, files in os.walk(self.root):
            rel = Path(here).relative_to(self.root)
            dirs[:] = sorted(
                d for d in dirs
                if not d.startswith(".") and not (rel == Path(".") and d in SKIP_DIRS)
                and d != "__pycache__" and not os.path.islink(os.path.join(here, d))
            )  # fmt: skip
            for name in sorted(files):
                if name.startswith(".") or (rel == Path(".") and name in RESERVED):
                    continue
                st = os.lstat(os.path.join(here, name))
                if stat.S_ISREG(st.st_mode):
                    found.append(((rel / name).as_posix(), st.st_size))
                if len(found) >= MAX_LISTED:
                    return found
        return found

    def read(self, path: str, limit: int = MAX_READ_BYTES) -> bytes | None:
        """The bytes of ``path`` (None when it does not exist); refuses links and non-files."""
        return self._at(path, lambda dfd, name: _read_at(dfd, name, path, limit))

    def size(self, path: str) -> int | None:
        """The size of regular file ``path`` (None when it does not exist); refuses links."""
        return self._at(path, lambda dfd, name: _size_at(dfd, name, path))

    def _at(self, path: str, look: Callable[[int, str], T]) -> T | None:
        """``look(folder descriptor, name)`` of file ``path``; None when it does not exist."""
        problem = path_problem(path)
        if problem:
            raise FileRefused(problem)
        parent, name = self._split(path)
        try:
            with self._folder(parent, create=False) as dfd:
                return look(dfd, name)
        except FileNotFoundError:
            return None

    # -- writing ------------------------------------------------------------------------

    def write(self, path: str, data: bytes) -> Write:
        """Replace ``path`` with ``data`` (atomically) and journal the previous version."""
        problem = path_problem(path)
        if problem:
            raise FileRefused(problem)
        if len(data) > MAX_WRITE_BYTES:
            raise FileRefused(
                f"{path}: {len(data):,} bytes is over the {MAX_WRITE_BYTES:,} byte limit"
            )
        parent, name = self._split(path)
        with self._folder(parent, create=True) as dfd:
            try:
                before: bytes | None = _read_at(dfd, name, path, MAX_READ_BYTES * 64)
            except FileNotFoundError:
                before = None
            _replace_at(dfd, name, data)
        write = Write(self._next_number(), path, before, data)
        self._journal(write)
        return write

    def undo(self) -> Write | None:
        """Undo the newest journalled write: restore its previous bytes or remove the file."""
        entries = self.history()
        if not entries:
            return None
        last = entries[-1]
        parent, name = self._split(last.path)
        with self._folder(parent, create=True) as dfd:
            if last.before is None:
                try:
                    os.unlink(name, dir_fd=dfd)
                except FileNotFoundError:
                    pass
            else:
                _replace_at(dfd, name, last.before)
        folder = self._undo_dir()
        assert folder is not None
        (folder / f"{last.number}.json").unlink()
        for suffix in (".before", ".after"):
            (folder / f"{last.number}{suffix}").unlink(missing_ok=True)
        return last

    def history(self) -> list[Write]:
        """The journalled writes of this session, oldest first."""
        folder = self._undo_dir(create=False)
        if folder is None:
            return []
        entries = []
        for meta in folder.glob("*.json"):
            info = json.loads(_plain_read(meta))
            number = int(info["number"])
            before = _plain_read(folder / f"{number}.before") if info["existed"] else None
            after = _plain_read(folder / f"{number}.after")
            entries.append(Write(number, str(info["path"]), before, after))
        return sorted(entries, key=lambda w: w.number)

    def session_diff(self) -> str:
        """Each file this session changed, from its version before the first write to now."""
        first: dict[str, bytes | None] = {}
        for w in self.history():
            first.setdefault(w.path, w.before)
        parts = []
        for path, before in first.items():
            try:
                now = self.read(path)
            except FileRefused as exc:
                parts.append(f"{path}: {exc}\n")
                continue
            if now != before:
                parts.append(unified_diff(path, before, now))
        return "".join(parts) or "(no changes in this session)\n"

    # -- the journal --------------------------------------------------------------------

    def chat_dir(self) -> Path:
        """``<flow>/.chat``, created if missing; refused if it is a link or not a folder."""
        folder = self.root / ".chat"
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode):
            raise FileRefused(f"{folder} is not a plain folder (a link?); remove it and try again")
        return folder

    def _undo_dir(self, create: bool = True) -> Path | None:
        folder = self.root / ".chat" / f"{self.session}.undo"
        if not create:
            return folder if folder.is_dir() and not folder.is_symlink() else None
        self.chat_dir()
        folder.mkdir(exist_ok=True)
        if folder.is_symlink():
            raise FileRefused(f"{folder} is a link; remove it and try again")
        return folder

    def _next_number(self) -> int:
        entries = self.history()
        return entries[-1].number + 1 if entries else 1

    def _journal(self, write: Write) -> None:
        folder = self._undo_dir()
        assert folder is not None
        if write.before is not None:
            _plain_write(folder / f"{write.number}.before", write.before)
        _plain_write(folder / f"{write.number}.after", write.after)
        meta = {"number": write.number, "path": write.path, "existed": write.before is not None}
        _plain_write(folder / f"{write.number}.json", json.dumps(meta).encode("utf-8"))

    # -- descriptors --------------------------------------------------------------------

    @staticmethod
    def _split(path: str) -> tuple[list[str], str]:
        parts = path.split("/")
        return parts[:-1], parts[-1]

    @contextmanager
    def _folder(self, parts: list[str], *, create: bool) -> Iterator[int]:
        """A descriptor of folder ``parts`` below the root, opened link by link (no links)."""
        with ExitStack() as stack:
            try:
                fd = stack.enter_context(folder_below(self.root, parts, create=create, mode=0o755))
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise FileRefused(
                        f"{'/'.join(parts)} is a link or not a folder, or passes through one; "
                        "the chat follows no links"
                    ) from None
                raise
            yield fd


def _read_at(dfd: int, name: str, shown: str, limit: int) -> bytes:
    """The bytes of ``name`` in folder ``dfd``, refused over ``limit``."""
    fd = _open_regular(dfd, name, shown)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise FileRefused(f"{shown} is {size:,} bytes, over the {limit:,} byte limit here")
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _size_at(dfd: int, name: str, shown: str) -> int:
    """The size of ``name`` in folder ``dfd``."""
    fd = _open_regular(dfd, name, shown)
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def _open_regular(dfd: int, name: str, shown: str) -> int:
    """A descriptor of regular file ``name`` in folder ``dfd``; links and non-files refused."""
    try:
        return open_regular(dfd, name, shown)
    except PathRefused as exc:
        if isinstance(exc.__cause__, OSError) and exc.__cause__.errno == errno.ELOOP:
            raise FileRefused(f"{shown} is a link; the chat follows no links") from None
        if exc.reason == "is not a regular file":
            raise FileRefused(f"{shown} is not a regular file") from None
        if isinstance(exc.__cause__, OSError):
            raise exc.__cause__ from None  # a missing file is the caller's to say
        raise


def _plain_read(path: Path) -> bytes:
    """A journal file's bytes; a link or a non-file there is refused."""
    try:
        fd = open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise FileRefused(f"{path} cannot be read ({exc.strerror}); start a new chat") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileRefused(f"{path} is not a regular file; start a new chat")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    finally:
        os.close(fd)


def _plain_write(path: Path, data: bytes) -> None:
    fd = open_nofollow(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def _replace_at(dfd: int, name: str, data: bytes) -> None:
    """Write ``data`` to a new file beside ``name``, then rename it over ``name``."""
    mode = NEW_FILE_MODE
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        pass
    else:
        if stat.S_ISLNK(st.st_mode):
            raise FileRefused(f"{name} is a link; the chat follows no links")
        if not stat.S_ISREG(st.st_mode):
            raise FileRefused(f"{name} is not a regular file")
        mode = stat.S_IMODE(st.st_mode)
    replace_at(dfd, name, data, mode=mode)
