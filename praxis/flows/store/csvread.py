"""A declared table read as a stream: bounded memory whatever a phase wrote.

``records`` gives the rows of a .csv/.tsv one at a time from an open binary file: strict
quoting, a line of at most ``MAX_LINE`` characters, a record of at most ``MAX_FIELDS``
fields and ``MAX_RECORD`` characters (quoted fields may span lines). Anything past a bound is
``Unreadable`` with a one-line message naming the file, the line and the bound, so a one-line
CSV of the collect limit, or of a million columns, costs a few MiB to refuse.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Generator, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import BinaryIO

from sandbox.files import open_nofollow

from ..model.check_spec import TABULAR

MAX_LINE = 1 << 20  # characters of one line
MAX_RECORD = 4 << 20  # characters of one record (its lines together)
MAX_FIELDS = 10_000  # fields of one record


class Unreadable(Exception):
    """A table that does not parse (or is too large to check)."""


@contextmanager
def opened(source: bytes | Path) -> Iterator[BinaryIO]:
    """A binary file of ``source``: bytes as they are, a path opened without following a
    link."""
    if isinstance(source, bytes):
        yield io.BytesIO(source)
        return
    fd = open_nofollow(source)
    with os.fdopen(fd, "rb") as fh:
        yield fh


def size_of(source: bytes | Path) -> int:
    if isinstance(source, bytes):
        return len(source)
    with opened(source) as fh:
        return os.fstat(fh.fileno()).st_size


class _Lines:
    """The text lines of a binary file, each at most ``MAX_LINE`` characters; counts the
    characters of the record being read."""

    def __init__(self, fh: BinaryIO, name: str, max_line: int) -> None:
        self.text = io.TextIOWrapper(fh, encoding="utf-8-sig", errors="replace", newline="")
        self.name = name
        self.max_line = max_line
        self.line = 0
        self.record = 0  # characters since the last record ended

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        line = self.text.readline(self.max_line + 1)
        if not line:
            raise StopIteration
        self.line += 1
        if len(line) > self.max_line and not line.endswith(("\n", "\r")):
            raise Unreadable(
                f"{self.name}: line {self.line} has more than {self.max_line:,} characters "
                "(the most read of one line)"
            )
        self.record += len(line)
        if self.record > MAX_RECORD:
            raise Unreadable(
                f"{self.name}: the record ending near line {self.line} has more than "
                f"{MAX_RECORD:,} characters (the most read of one record)"
            )
        return line


def records(
    fh: BinaryIO, name: str, *, max_line: int = MAX_LINE
) -> Generator[list[str], None, None]:
    """The non-empty records of table ``name`` (``fh``: its bytes), header first."""
    for _line, row in numbered(fh, name, max_line=max_line):
        yield row


def numbered(
    fh: BinaryIO, name: str, *, max_line: int = MAX_LINE
) -> Generator[tuple[int, list[str]], None, None]:
    """``records``, each with the line it starts on (1-based, as an editor counts: a quoted
    field may span lines)."""
    lines = _Lines(fh, name, max_line)
    delimiter = TABULAR.get(Path(name).suffix.lower(), ",")
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    try:
        while True:
            start = lines.line + 1
            try:
                row = next(reader)
            except StopIteration:
                return
            lines.record = 0
            if len(row) > MAX_FIELDS:
                raise Unreadable(
                    f"{name}: line {start} has more than {MAX_FIELDS:,} fields "
                    "(the most read of one record)"
                )
            if row:
                yield start, row
    except csv.Error as exc:
        raise Unreadable(f"{name} does not parse near line {lines.line}: {exc}") from None
    finally:
        if not fh.closed:
            lines.text.detach()  # the caller's file stays open


def header(source: bytes | Path, name: str) -> list[str]:
    """The first record of a table ([] for an empty one)."""
    with opened(source) as fh, closing(records(fh, name)) as found:
        return next(found, [])
