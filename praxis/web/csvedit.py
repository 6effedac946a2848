"""Lossless CSV/TSV editing, the reading: rows found by byte offsets (``csvsplice`` writes
an edit back, only edited rows re-encoded).

A table file is read as it is: its encoding (UTF-8 with or without a BOM, else Latin-1),
its delimiter (``,`` ``;`` or TAB, sniffed), each row's own line ending and each field's own
quoting. Rows are located by a quote-aware scan over the bytes (a record ends at a newline
outside quotes); a sparse index keeps every ``INDEX_EVERY``-th row's offset, built once per
file version, so a page of rows is read without reading the rows before it.

A record is parsed and written back with the same field quoting and line ending
(``parse_record``, ``write_record``); a row whose bytes would not come back unchanged when
re-written (``a, "b"``, a stray quote) marks the file as one edited as text only
(``Index.problem``).
"""

from __future__ import annotations

import codecs
import csv
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from praxis import units
from praxis.errors import Refused
from praxis.lru import LRU

INDEX_EVERY = 1000
SAMPLE_BYTES = 64 * 1024
CHECK_WHOLE_BYTES = 4 * 1024 * 1024  # files up to this size are round-trip checked whole
CHECK_ROWS = 1000  # larger files: the first rows are checked, and every row an edit touches
MAX_TABLE_BYTES = 4 * 1024**3
# a page shows a table only within these (else it offers the file as text, bounded): what a
# page holds is then at most PAGE_ROWS rows of MAX_ROW_BYTES, MAX_COLUMNS cells each
MAX_ROW_BYTES = 1024 * 1024
MAX_COLUMNS = 1000
MAX_RECORD_BYTES = 4 * 1024 * 1024  # a record the scan holds at once, whatever it shows
DELIMITERS = ",;\t"
CACHE_SIZE = 16
CHUNK = 1 << 20


class NotATable(Refused):
    """Raised when a file cannot be edited as a table here; ``reason`` says why, for a person."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


class BadRow(Refused):
    """Raised when an edit names a row or column the file does not have, or a row that
    cannot be re-written byte for byte."""


@dataclass(frozen=True)
class Dialect:
    encoding: str  # "utf-8" or "latin-1"
    bom: bytes  # b"\xef\xbb\xbf" or b""
    delimiter: str
    newline: bytes  # the first row's line ending (b"\n", b"\r\n"); b"\n" when none


@dataclass(frozen=True)
class Row:
    """One parsed record: its fields, which were quoted, and its line ending."""

    fields: list[str]
    quoted: list[bool]
    end: bytes  # b"\n", b"\r\n" or b"" (the last row of a file without a trailing newline)


@dataclass
class Index:
    """Where rows start in one version of a file. Row 0 is the header."""

    path: Path
    version: tuple[int, int, int]  # (size, mtime_ns, inode)
    dialect: Dialect
    offsets: list[int]  # offsets[k] = start of row k * INDEX_EVERY
    rows: int  # rows including the header
    size: int
    problem: str | None = None  # why the file is offered as text only
    widest: int = 0  # bytes of the longest row
    most_fields: int = 0  # delimiters + 1 of the row with most (quoted ones counted too)

    @property
    def data_rows(self) -> int:
        return max(0, self.rows - 1)

    @property
    def token(self) -> str:
        size, mtime, ino = self.version
        return f"{size}-{mtime}-{ino}"


# --- one record ------------------------------------------------------------------------------


def parse_record(raw: bytes, dialect: Dialect) -> Row:
    """Parse one record's bytes (its line ending included). BadRow when it is malformed."""
    end = b"\r\n" if raw.endswith(b"\r\n") else b"\n" if raw.endswith(b"\n") else b""
    text = raw[: len(raw) - len(end)].decode(dialect.encoding)
    d = dialect.delimiter
    fields: list[str] = []
    quoted: list[bool] = []
    if text == "":
        return Row(fields, quoted, end)
    i, n = 0, len(text)
    while True:
        if i < n and text[i] == '"':
            parts, j = [], i + 1
            while True:
                k = text.find('"', j)
                if k < 0:
                    raise BadRow("a quoted field is not closed")
                parts.append(text[j:k])
                if k + 1 < n and text[k + 1] == '"':
                    parts.append('"')
                    j = k + 2
                    continue
                j = k + 1
                break
            fields.append("".join(parts))
            quoted.append(True)
            if j == n:
                break
            if text[j] != d:
                raise BadRow("text follows a closing quote")
            i = j + 1
        else:
            k = text.find(d, i)
            if k < 0:
                fields.append(text[i:])
                quoted.append(False)
                break
            fields.append(text[i:k])
            quoted.append(False)
            i = k + 1
        if i == n:  # a delimiter ends the record: one more, empty field
            fields.append("")
            quoted.append(False)
            break
    return Row(fields, quoted, end)


def write_record(row: Row, dialect: Dialect) -> bytes:
    """The record's bytes: each field quoted if it was, or if it must be; its own ending."""
    d = dialect.delimiter
    out = []
    for value, was_quoted in zip(row.fields, row.quoted, strict=True):
        must = d in value or '"' in value or "\n" in value or "\r" in value
        if len(row.fields) == 1 and value == "":
            must = True  # an unquoted lone empty field would read back as a blank line
        out.append('"' + value.replace('"', '""') + '"' if was_quoted or must else value)
    return d.join(out).encode(dialect.encoding) + row.end


def round_trips(raw: bytes, dialect: Dialect) -> bool:
    try:
        return write_record(parse_record(raw, dialect), dialect) == raw
    except (BadRow, UnicodeError):
        return False


# --- a file ----------------------------------------------------------------------------------


def version_of(path: Path) -> tuple[int, int, int]:
    """(size, mtime_ns, inode) of ``path``: the version of a file an index is made from."""
    st = os.stat(path, follow_symlinks=False)
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def detect_encoding(fh: BinaryIO) -> tuple[str, bytes]:
    """("utf-8", bom) when the whole file decodes as UTF-8, else ("latin-1", b"")."""
    first = fh.read(3)
    bom = codecs.BOM_UTF8 if first == codecs.BOM_UTF8 else b""
    fh.seek(len(bom))
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            decoder.decode(chunk)
        decoder.decode(b"", final=True)
        return "utf-8", bom
    except UnicodeDecodeError:
        return "latin-1", b""  # every byte is one character: decoding and encoding give it back


def detect_delimiter(sample: str, name: str) -> str:
    default = "\t" if name.lower().endswith(".tsv") else ","
    lines = sample.splitlines()[:50]
    if not lines:
        return default
    try:
        found = csv.Sniffer().sniff("\n".join(lines), delimiters=DELIMITERS).delimiter
    except csv.Error:
        found = ""
    if found in DELIMITERS and found:
        return found
    counts = {d: lines[0].count(d) for d in DELIMITERS}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] > counts.get(default, 0) else default


def record_ends(buf: bytes, start: int, size: int) -> tuple[int, int]:
    """(end of the record starting at ``start``, quotes it holds): the newline outside quotes."""
    pos, quotes = start, 0
    while True:
        nl = buf.find(b"\n", pos, size)
        end = size if nl < 0 else nl + 1
        quotes += buf.count(b'"', pos, end)
        if quotes % 2 == 0 or end >= size:
            return end, quotes
        pos = end


def records(fh: BinaryIO, pos: int, size: int) -> Iterator[tuple[int, int, int]]:
    """(start, end, quotes) of each record from offset ``pos``, reading a window at a time."""
    for start, end, quotes, _ in counted(fh, pos, size, b""):
        yield start, end, quotes


def counted(
    fh: BinaryIO, pos: int, size: int, delimiter: bytes
) -> Iterator[tuple[int, int, int, int]]:
    """``records``, with the count of ``delimiter`` in each; NotATable for a record longer
    than MAX_RECORD_BYTES (the window never holds more)."""
    fh.seek(pos)
    buf, base = b"", pos
    while pos < size:
        rel = pos - base
        end, quotes = record_ends(buf, rel, len(buf))
        if end >= len(buf) and base + len(buf) < size:
            if len(buf) - rel > MAX_RECORD_BYTES:
                raise NotATable(
                    Path(getattr(fh, "name", "?")).name,
                    f"has a row longer than {MAX_RECORD_BYTES:,} bytes, more than a page "
                    "reads as a table",
                )
            more = fh.read(CHUNK)
            if not more:
                raise NotATable(Path(getattr(fh, "name", "?")).name, "shrank while being read")
            buf, base = buf[rel:] + more, pos
            continue
        delims = buf.count(delimiter, rel, end) if delimiter else 0
        yield pos, base + end, quotes, delims
        pos = base + end


def build_index(path: Path) -> Index:
    version = version_of(path)
    size = version[0]
    if size > MAX_TABLE_BYTES:
        raise NotATable(path.name, f"is {units.size(size)}, more than this page edits as a table")
    tsv = path.name.lower().endswith(".tsv")
    if size == 0:
        d = Dialect("utf-8", b"", "\t" if tsv else ",", b"\n")
        return Index(path, version, d, [0], 0, 0, problem="the file is empty")
    with open(path, "rb") as fh:
        return _scan(path, version, fh, size)


def _scan(path: Path, version: tuple[int, int, int], fh: BinaryIO, size: int) -> Index:
    head = fh.read(SAMPLE_BYTES)
    if b"\x00" in head:
        raise NotATable(path.name, "holds NUL bytes: it is not a text table")
    fh.seek(0)
    encoding, bom = detect_encoding(fh)
    sample = head[len(bom) :].decode(encoding, errors="replace")
    delimiter = detect_delimiter(sample, path.name)
    first = next(records(fh, len(bom), size))
    fh.seek(first[1] - 2)
    newline = b"\r\n" if fh.read(2) == b"\r\n" else b"\n"
    dialect = Dialect(encoding, bom, delimiter, newline)
    offsets: list[int] = []
    rows, problem = 0, None
    check_all = size <= CHECK_WHOLE_BYTES
    last = len(bom)
    widest = most = 0
    for start, end, quotes, delims in counted(fh, len(bom), size, delimiter.encode()):
        if rows % INDEX_EVERY == 0:
            offsets.append(start)
        widest, most = max(widest, end - start), max(most, delims + 1)
        if quotes % 2 and problem is None:
            problem = f"row {rows + 1} opens a quote that is never closed"
        if problem is None and (check_all or rows < CHECK_ROWS):
            here = fh.tell()
            fh.seek(start)
            raw = fh.read(end - start)
            fh.seek(here)
            if not round_trips(raw, dialect):
                problem = _why(raw, dialect, rows)
        rows += 1
        last = end
    if not offsets:
        offsets.append(last)
    return Index(path, version, dialect, offsets, rows, size, problem, widest, most)


def _why(raw: bytes, dialect: Dialect, row: int) -> str:
    where = "the header" if row == 0 else f"row {row}"
    try:
        parse_record(raw, dialect)
    except BadRow as exc:
        return f"{where} is not plain CSV ({exc}); writing it back would change it"
    return f"{where} is written in a way a table save would not keep byte for byte"


_cache: LRU[tuple[str, int, int, int], Index] = LRU(CACHE_SIZE)


def index(path: Path) -> Index:
    """The row index of this version of ``path`` (cached by path, size, mtime, inode)."""
    key = (str(path), *version_of(path))
    found = _cache.get(key)
    if found is not None:
        return found
    built = build_index(path)
    _cache.put(key, built)
    return built


def keep(idx: Index) -> None:
    """Cache ``idx`` as the index of its version of its file (one made without a scan)."""
    _cache.put((str(idx.path), *idx.version), idx)


def spans(idx: Index, start: int, count: int) -> list[tuple[int, int]]:
    """Byte spans of rows [start, start + count) (row 0 is the header), read from disk."""
    if start < 0 or count <= 0 or start >= idx.rows or idx.size == 0:
        return []
    found: list[tuple[int, int]] = []
    with open(idx.path, "rb") as fh:
        if version_of(idx.path) != idx.version:
            raise NotATable(idx.path.name, "changed while it was being read: reload the page")
        row = (start // INDEX_EVERY) * INDEX_EVERY
        for a, b, _ in records(fh, idx.offsets[start // INDEX_EVERY], idx.size):
            if row >= start:
                found.append((a, b))
            row += 1
            if row >= start + count:
                break
    return found


def read_rows(idx: Index, start: int, count: int) -> list[Row]:
    """Parsed rows [start, start + count); a malformed row comes back as its raw text."""
    result = []
    with open(idx.path, "rb") as fh:
        for a, b in spans(idx, start, count):
            fh.seek(a)
            result.append(lenient(fh.read(b - a), idx.dialect))
    return result


def read_spans(idx: Index, found: list[tuple[int, int]]) -> list[Row]:
    """Parsed rows at the byte spans ``found`` (from a columnar copy of this version);
    a malformed row comes back as its raw text."""
    result = []
    with open(idx.path, "rb") as fh:
        if version_of(idx.path) != idx.version:
            raise NotATable(idx.path.name, "changed while it was being read: reload the page")
        for a, b in found:
            fh.seek(a)
            result.append(lenient(fh.read(b - a), idx.dialect))
    return result


def lenient(raw: bytes, dialect: Dialect) -> Row:
    """``raw`` parsed; a malformed record comes back as one field of its text."""
    try:
        return parse_record(raw, dialect)
    except (BadRow, UnicodeError):
        text = raw.decode(dialect.encoding, errors="replace").rstrip("\r\n")
        return Row([text], [False], b"")


def header(idx: Index) -> list[str]:
    rows = read_rows(idx, 0, 1)
    return rows[0].fields if rows else []
