"""events.jsonl: the append-only writer and tolerant reader of one run's events (the
catalogue of their kinds is ``model/events.py``).

The events of one change of a run are stamped with the revision of run.json the change made
(``"rev"``): run.json holds them too, until the next change, so an append a crash cut short
is made good (``RunHandle.catch_up``, by ``EventLog.lacking``). Reading tolerates a torn last
line (a crash mid-append) and reports corruption anywhere else.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from sandbox.files import open_nofollow

from ...errors import RecordCorrupt
from ..model.events import REV, Event, plain


class EventLogCorrupt(RecordCorrupt):
    """Raised when a line other than the last of events.jsonl is not a valid event."""

    def __init__(self, path: Path, line: int, reason: str) -> None:
        super().__init__(f"{path}: line {line}: {reason}")
        self.path = path
        self.line = line


# A stamped line as ``Event.stamped`` and ``EventLog.append_lines`` write it begins so.
_STAMP = re.compile(rb'\{"kind": "[^"\\]*", "rev": (\d+)[,}]')
_CHUNK = 1 << 16


class EventLog:
    """Append-only writer and tolerant reader of one run's events.jsonl."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, ev: Event) -> None:
        """Append an event that records no change of run.json (code ran, a tool was called)."""
        self._append((ev.to_json() + "\n").encode("utf-8"))

    def append_lines(self, lines: Sequence[Mapping[str, Any]]) -> None:
        """Append the lines of one change (``Event.stamped``), in one write."""
        if lines:
            self._append(b"".join(_line(data) for data in lines))

    def lacking(self, revision: int, lines: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """Those of ``lines``, the change that made ``revision``, that the log does not hold:
        none when it holds them all (or a later change's), the rest when a crash cut their
        append short. The caller holds the run's lock."""
        if not lines:
            return []
        try:
            fd = open_nofollow(self.path)
        except FileNotFoundError:
            return list(lines)
        try:
            held = 0
            for line in _backward(fd):
                rev = _stamp(line)
                if rev is None:
                    continue  # an event that records no change
                if rev > revision:
                    return []  # the log is ahead of run.json: nothing of this change is lacking
                if rev < revision:
                    break
                held += 1
        finally:
            os.close(fd)
        return list(lines[held:])

    def _append(self, data: bytes) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            self._drop_torn_tail(fd)
            self._write(fd, data)
        finally:
            os.close(fd)

    @staticmethod
    def _write(fd: int, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]

    @staticmethod
    def _drop_torn_tail(fd: int) -> None:
        """Cut a last line that a crash left without its newline, so appends start clean."""
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return
        pos = size
        while pos > 0:
            start = max(0, pos - _CHUNK)
            chunk = os.pread(fd, pos - start, start)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                os.ftruncate(fd, start + nl + 1)
                return
            pos = start
        os.ftruncate(fd, 0)

    def read(self) -> list[Event]:
        return list(self.iter())

    def iter(self) -> Iterator[Event]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return
        complete = raw.endswith(b"\n")
        lines = raw.split(b"\n")
        if complete:
            lines.pop()
        for number, line in enumerate(lines, start=1):
            if not complete and number == len(lines):
                return  # a crash mid-append left this line torn: dropped
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if not isinstance(data, dict):
                    raise ValueError("not a JSON object")
                yield Event.from_dict(data)
            except (ValueError, TypeError) as exc:
                raise EventLogCorrupt(self.path, number, str(exc)) from exc


def _line(data: Mapping[str, Any]) -> bytes:
    """A stamped line, its kind and revision first (as run.json, which sorts keys, may not
    have them)."""
    ordered = {"kind": data.get("kind"), REV: data.get(REV), **data}
    return (json.dumps(ordered, ensure_ascii=False, default=plain) + "\n").encode("utf-8")


def _stamp(line: bytes) -> int | None:
    """The revision a line is stamped with; None for an event that records no change."""
    match = _STAMP.match(line)
    if match is not None:
        return int(match.group(1))
    if b'"rev"' not in line:
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    rev = data.get(REV) if isinstance(data, dict) else None
    return rev if isinstance(rev, int) and not isinstance(rev, bool) else None


def _backward(fd: int) -> Iterator[bytes]:
    """The complete lines of the file, the last first; a torn last line is not one."""
    pos, rest, torn = os.fstat(fd).st_size, b"", True
    while pos > 0:
        start = max(0, pos - _CHUNK)
        parts = (os.pread(fd, pos - start, start) + rest).split(b"\n")
        pos, rest, body = start, parts[0], parts[1:]
        if torn:
            if not body:
                continue  # no newline yet: all of it is the end of the last line
            body.pop()  # what follows the last newline: a torn line, or nothing
            torn = False
        yield from reversed(body)
    if not torn and rest:
        yield rest
