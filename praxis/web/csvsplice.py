"""Lossless CSV/TSV editing, the saving: an edit spliced into the file's bytes.

Every byte outside the edited rows is copied as it was (in the kernel between two files
where it can). An edited row is parsed and written back with the same field quoting and line
ending (``csvedit``); a row whose bytes would not come back unchanged when re-written is
refused, so such a file is edited as text only. A whole-file text edit is encoded in the
file's own encoding, BOM and line endings, and parsed whole before it is written.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from .csvedit import (
    CHUNK,
    BadRow,
    Dialect,
    Index,
    NotATable,
    Row,
    header,
    keep,
    parse_record,
    record_ends,
    round_trips,
    spans,
    version_of,
    write_record,
)


def splice(idx: Index, edits: dict[int, dict[int, str]]) -> bytes:
    """The file's bytes with data row r's column c set to ``edits[r][c]`` (``splice_to``)."""
    out = io.BytesIO()
    splice_to(idx, edits, out)
    return out.getvalue()


Change = tuple[int, int, str, str]  # (data row, column, old value, new value)
Shift = tuple[int, int, int]  # (start, end) of an edited row in the old file, its new length


@dataclass
class Spliced:
    """What a splice changed: the cells whose value changed, and where rows grew or shrank."""

    changed: list[Change]
    shifts: list[Shift]


def splice_to(idx: Index, edits: dict[int, dict[int, str]], out: BinaryIO) -> Spliced:
    """Write the file to ``out`` with data row r's column c set to ``edits[r][c]``, in one
    streaming pass: every byte outside the edited rows is copied as it was.

    Rows are data rows (0 is the first row after the header). An edited row keeps each
    field's quoting and its line ending; a new value's line breaks follow the cell's own.
    Returns each cell whose value changed.
    """
    planned: list[tuple[int, int, bytes]] = []  # (start, end, new bytes) of each edited row
    changed: list[Change] = []
    with open(idx.path, "rb") as fh:
        if version_of(idx.path) != idx.version:
            raise NotATable(idx.path.name, "changed while it was being read: reload the page")
        for r in sorted(edits):
            if not 0 <= r < idx.data_rows:
                raise BadRow(f"{idx.path.name} has no row {r + 1}")
            ((a, b),) = spans(idx, r + 1, 1)
            fh.seek(a)
            planned.append((a, b, _edited_row(idx, r, fh.read(b - a), edits[r], changed)))
        pos = 0
        for a, b, new in planned:
            _copy(fh, pos, a, out)
            out.write(new)
            pos = b
        _copy(fh, pos, idx.size, out)
        if version_of(idx.path) != idx.version:
            raise NotATable(idx.path.name, "changed while it was being read: reload the page")
    return Spliced(changed, [(a, b, len(new)) for a, b, new in planned])


def carried(idx: Index, spliced: Spliced) -> Index | None:
    """The index of the file ``splice_to`` wrote from ``idx``'s, now at ``idx.path``, made
    from ``idx`` (rows start where they did, shifted by the rows before that changed size)
    instead of scanning it again; None when the file there is not that one any more."""
    version = version_of(idx.path)
    grew = sum(n - (b - a) for a, b, n in spliced.shifts)
    if version[0] != idx.size + grew:
        return None
    offsets, k, delta = [], 0, 0
    shifts = sorted(spliced.shifts)
    for o in idx.offsets:
        while k < len(shifts) and shifts[k][1] <= o:
            delta += shifts[k][2] - (shifts[k][1] - shifts[k][0])
            k += 1
        offsets.append(o + delta)
    new = Index(idx.path, version, idx.dialect, offsets, idx.rows, version[0], idx.problem)
    keep(new)
    return new


def _copy(fh: BinaryIO, start: int, end: int, out: BinaryIO) -> None:
    """Bytes [start, end) of ``fh`` to ``out``: in the kernel between two files, else read
    and written a window at a time."""
    left = end - start
    if (
        hasattr(os, "copy_file_range")
        and hasattr(out, "fileno")
        and not isinstance(out, io.BytesIO)
    ):
        out.flush()
        src, dst, at = fh.fileno(), out.fileno(), start
        try:
            while left > 0:
                done = os.copy_file_range(src, dst, left, at)
                if done == 0:
                    break
                at, left = at + done, left - done
        except OSError:
            pass  # another file system, an old kernel: copy it ourselves
        os.lseek(dst, 0, os.SEEK_END)
        start = at
    fh.seek(start)
    while left > 0:
        chunk = fh.read(min(CHUNK * 8, left))
        if not chunk:
            raise NotATable(Path(getattr(fh, "name", "?")).name, "shrank while being read")
        out.write(chunk)
        left -= len(chunk)


def _edited_row(
    idx: Index, r: int, raw: bytes, cells: dict[int, str], changed: list[Change]
) -> bytes:
    """Data row ``r`` (its bytes ``raw``) with ``cells`` set, quoting and ending kept."""
    width = len(header(idx))
    if not round_trips(raw, idx.dialect):
        raise BadRow(
            f"{idx.path.name} row {r + 1} would not be written back as it is: edit the file as text"
        )
    row = parse_record(raw, idx.dialect)
    fields, quoted = list(row.fields), list(row.quoted)
    for c, value in cells.items():
        if not 0 <= c < max(width, len(fields)):
            raise BadRow(f"{idx.path.name} has no column {c + 1}")
        while len(fields) <= c:
            fields.append("")
            quoted.append(False)
        old, fields[c] = fields[c], _line_breaks(value, fields[c])
        if fields[c] != old:
            changed.append((r, c, old, fields[c]))
    new = write_record(Row(fields, quoted, row.end), idx.dialect)
    try:
        new.decode(idx.dialect.encoding)
    except UnicodeError:  # pragma: no cover - encode already refused it
        raise BadRow(f"row {r + 1} cannot be written in {idx.dialect.encoding}") from None
    return new


def _line_breaks(value: str, old: str) -> str:
    """A browser sends CRLF line breaks; the cell keeps the ones it had (LF unless CRLF)."""
    value = value.replace("\r\n", "\n")
    return value.replace("\n", "\r\n") if "\r\n" in old else value


def encode_text(text: str, idx: Index) -> bytes:
    """A whole-file text edit in the file's own encoding, BOM and line endings."""
    text = text.replace("\r\n", "\n")
    if idx.dialect.newline == b"\r\n":
        text = text.replace("\n", "\r\n")
    try:
        return idx.dialect.bom + text.encode(idx.dialect.encoding)
    except UnicodeEncodeError as exc:
        raise BadRow(
            f"{idx.path.name} is {idx.dialect.encoding}; {text[exc.start : exc.end]!r} "
            "cannot be written in it"
        ) from None


def parse_all(data: bytes, dialect: Dialect) -> list[Row]:
    """Every record of ``data`` (whole-file checks of a text edit). BadRow when malformed."""
    body = data[len(dialect.bom) :] if data.startswith(dialect.bom) else data
    rows: list[Row] = []
    pos = 0
    while pos < len(body):
        end, quotes = record_ends(body, pos, len(body))
        if quotes % 2:
            raise BadRow(f"row {len(rows) + 1} opens a quote that is never closed")
        try:
            rows.append(parse_record(body[pos:end], dialect))
        except BadRow as exc:
            raise BadRow(f"row {len(rows) + 1}: {exc}") from None
        except UnicodeError:
            raise BadRow(f"row {len(rows) + 1} is not {dialect.encoding} text") from None
        pos = end
    return rows
