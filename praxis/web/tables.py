"""CSV/TSV artifacts as a reviewer reads and edits them: pages of rows, edits cell by cell.

Rows are read through ``csvedit``'s sparse row index, so a page costs the same in a file of
a hundred rows or of a million; a save rewrites only the rows whose cells changed.
Cells stay strings end to end: numbers keep their spelling, nothing is re-inferred.
"""

from __future__ import annotations

import io
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from praxis.errors import Refused
from praxis.flows.engine import edits

from . import columnar, csvedit, csvsplice, find

PAGE_ROWS = 100
MAX_PAGE_ROWS = 500
MAX_CELL = 10_000  # characters of one cell a page shows; a longer cell is edited as text


class BadEdit(Refused):
    """Raised when a submitted table edit does not fit the file (a row or column not there)."""


@dataclass
class TablePage:
    header: list[str]
    rows: list[tuple[int, list[str]]]  # (data row index in the file, cells)
    page: int  # 1-based
    pages: int
    total: int  # data rows
    version: str  # the file version the row numbers refer to
    problem: str | None = None  # why the file is offered as text only
    dialect: str = ""  # e.g. "UTF-8, comma-separated, LF line endings", for the reader
    clipped: set[tuple[int, int]] = field(default_factory=set)  # (row, column) cut short

    @property
    def start(self) -> int:
        return (self.page - 1) * PAGE_ROWS


def is_table(name: str) -> bool:
    return name.lower().endswith((".csv", ".tsv"))


def describe(d: csvedit.Dialect) -> str:
    delimiter = {",": "comma", ";": "semicolon", "\t": "tab"}.get(d.delimiter, repr(d.delimiter))
    enc = "UTF-8 with BOM" if d.bom else ("UTF-8" if d.encoding == "utf-8" else "Latin-1")
    ending = "CRLF" if d.newline == b"\r\n" else "LF"
    return f"{enc}, {delimiter}-separated, {ending} line endings"


def rows_of(
    idx: csvedit.Index, start: int, count: int
) -> tuple[list[tuple[int, list[str]]], list[tuple[int, int]]]:
    """Data rows [start, start + count) fitted to the header's width, and the (row, column)
    of each cell clipped at ``MAX_CELL`` characters (shown, not editable in the grid)."""
    width = len(csvedit.header(fits(idx)))
    count = max(0, min(count, MAX_PAGE_ROWS))
    found = csvedit.read_rows(idx, start + 1, count)
    return fitted(found, list(range(start, start + len(found))), width)


def fitted(
    rows: list[csvedit.Row], numbers: list[int], width: int
) -> tuple[list[tuple[int, list[str]]], list[tuple[int, int]]]:
    """(row number, cells) fitted to ``width``, and the cells clipped at ``MAX_CELL``."""
    out, clipped = [], []
    for n, r in zip(numbers, rows, strict=True):
        cells = _fit(r.fields, width)
        for c, value in enumerate(cells):
            if len(value) > MAX_CELL:
                more = len(value) - MAX_CELL
                cells[c] = value[:MAX_CELL] + f" [... {more} more characters]"
                clipped.append((n, c))
        out.append((n, cells))
    return out, clipped


def found_rows(
    idx: csvedit.Index, query: find.Query, start: int, count: int, spec: dict[str, Any]
) -> dict[str, Any]:
    """Rows [start, start + count) of those ``query`` finds, as /rows answers them, with
    how many it finds and, when it asks for flagged rows, the failing checks."""
    copy = columnar.copy_of(idx)
    found = find.find(copy, query, spec)
    count = max(0, min(count, MAX_PAGE_ROWS))
    numbers = found.rows.slice(start, count).to_pylist()
    rows, clipped = fitted(csvedit.read_spans(idx, copy.spans(numbers)), numbers,
                           len(copy.header))  # fmt: skip
    return {"start": start, "rows": rows, "clipped": clipped, "total": idx.data_rows,
            "matches": found.count, "version": idx.token,
            "flags": [f.to_dict() for f in found.flags]}  # fmt: skip


def fits(idx: csvedit.Index) -> csvedit.Index:
    """``idx`` when a page can show it as a table; NotATable when a row is past what a page
    holds (longer than MAX_ROW_BYTES, or more than MAX_COLUMNS fields): the file is then
    offered as text (bounded), and no row of it is parsed."""
    name = idx.path.name
    if idx.widest > csvedit.MAX_ROW_BYTES:
        limit = csvedit.MAX_ROW_BYTES
        raise csvedit.NotATable(name, f"has a row of {idx.widest:,} bytes (a page shows {limit:,})")
    if idx.most_fields > csvedit.MAX_COLUMNS:
        limit = csvedit.MAX_COLUMNS
        raise csvedit.NotATable(
            name, f"has a row of up to {idx.most_fields:,} fields (a page shows {limit:,} columns)"
        )
    return idx


def page_of(path: Path, page: int, size: int = PAGE_ROWS) -> TablePage:
    idx = fits(csvedit.index(path))
    pages = max(1, -(-idx.data_rows // size))
    page = min(max(1, page), pages)
    rows, clipped = rows_of(idx, (page - 1) * size, size)
    return TablePage(
        header=csvedit.header(idx),
        rows=rows,
        clipped=set(clipped),
        page=page,
        pages=pages,
        total=idx.data_rows,
        version=idx.token,
        problem=idx.problem,
        dialect=describe(idx.dialect),
    )


def _fit(row: list[str], width: int) -> list[str]:
    return row + [""] * (width - len(row)) if len(row) < width else row


def apply_cells(path: Path, cells: dict[tuple[int, int], str], version: str = "") -> bytes:
    """The file's bytes with data cell (row, column) set to each value; only those rows move.

    ``version`` is the file version the page showed; BadEdit when the file changed since,
    when a cell is out of range, or when the file cannot be saved as a table losslessly.
    """
    out = io.BytesIO()
    write_cells(path, cells, out, version)
    return out.getvalue()


@dataclass
class Staged:
    """A cell save written beside the outputs, not yet in place: its file, the edit's diff,
    and what lets the saved file's row index and columnar copy be made without a scan."""

    path: Path
    diff: dict[str, Any]
    before: csvedit.Index
    spliced: csvsplice.Spliced
    edits: dict[int, dict[int, str]]

    def carry(self) -> None:
        """Once the staged file is in place: its index now, its columnar copy soon."""
        new = csvsplice.carried(self.before, self.spliced)
        if new is not None:
            columnar.carry_later(self.before, new, self.spliced.shifts, self.edits)


def cell_diff(header: list[str], changed: list[csvsplice.Change]) -> dict[str, Any]:
    """The edit's cell-level diff, as ``edits.diff_tables`` records one, from the cells a
    save changed (no rows move in a cell save: nothing to compare)."""
    rows = {r for r, _, _, _ in changed}
    cells = [
        {"row": r + 1, "column": header[c] if c < len(header) else f"column {c + 1}",
         "old": old[:200], "new": new[:200]}
        for r, c, old, new in sorted(changed)[: edits.MAX_CELLS]
    ]  # fmt: skip
    return {"columns_before": header, "columns_after": header, "changed": len(rows),
            "added": 0, "removed": 0, "cells": cells}  # fmt: skip


def stage_cells(
    path: Path, cells: dict[tuple[int, int], str], folder: Path, version: str = ""
) -> Staged:
    """``apply_cells`` streamed into a new file in ``folder`` (same file system as ``path``,
    so it can replace it atomically). BadEdit as ``apply_cells``."""
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name[:100]}.", suffix=".save")
    try:
        with os.fdopen(fd, "wb") as out:
            spliced = write_cells(path, cells, out, version)
    except BaseException:
        os.unlink(tmp)
        raise
    idx = csvedit.index(path)
    diff = cell_diff(csvedit.header(idx), spliced.changed)
    return Staged(Path(tmp), diff, idx, spliced, edits_of(cells))


def edits_of(cells: dict[tuple[int, int], str]) -> dict[int, dict[int, str]]:
    edits: dict[int, dict[int, str]] = {}
    for (row, col), value in cells.items():
        edits.setdefault(row, {})[col] = value
    return edits


def write_cells(
    path: Path, cells: dict[tuple[int, int], str], out: BinaryIO, version: str = ""
) -> csvsplice.Spliced:
    try:
        idx = csvedit.index(path)
    except csvedit.NotATable as exc:
        raise BadEdit(f"{exc.name} {exc.reason}: edit it as text") from None
    if version and version != idx.token:
        raise BadEdit(f"{path.name} changed since this page was shown: reload it, then edit")
    if idx.problem:
        raise BadEdit(f"{path.name} can only be edited as text: {idx.problem}")
    width = len(csvedit.header(idx))
    edits: dict[int, dict[int, str]] = {}
    for (row, col), value in cells.items():
        if not 0 <= row < idx.data_rows or not 0 <= col < width:
            raise BadEdit(f"{path.name} has no cell at row {row + 1}, column {col + 1}")
        edits.setdefault(row, {})[col] = value
    try:
        return csvsplice.splice_to(idx, edits, out)
    except csvedit.BadRow as exc:
        raise BadEdit(str(exc)) from None
    except UnicodeEncodeError as exc:
        raise BadEdit(
            f"{path.name} is {idx.dialect.encoding} text; {exc.object[exc.start : exc.end]!r} "
            "cannot be written in it"
        ) from None


def check_text(path: Path, text: str) -> bytes:
    """A whole-table text edit as bytes in the file's own encoding and line endings.

    BadEdit, with the reason, when it does not parse as a table with the same columns.
    """
    try:
        idx = csvedit.index(path)
    except csvedit.NotATable:
        return text.replace("\r\n", "\n").encode("utf-8")
    try:
        data = csvsplice.encode_text(text, idx)
        rows = csvsplice.parse_all(data, idx.dialect)
    except csvedit.BadRow as exc:
        raise BadEdit(f"{path.name} as edited is not a table: {exc}") from None
    if not rows:
        raise BadEdit(f"{path.name} as edited is empty: it needs at least its header row")
    # a file that was not a clean table keeps the header the reviewer gives it
    head = rows[0].fields if idx.problem else csvedit.header(idx)
    if rows[0].fields != head:
        raise BadEdit(
            f"{path.name} as edited has columns {rows[0].fields}, not {head}: "
            "keep the header as it is"
        )
    for n, row in enumerate(rows[1:], start=1):
        if row.fields and len(row.fields) != len(head):
            raise BadEdit(
                f"{path.name} as edited: row {n} has {len(row.fields)} fields, "
                f"the header has {len(head)}"
            )
    return data


def parse_cell_fields(items: list[tuple[str, str]]) -> dict[tuple[int, int], str]:
    """Form fields named ``cell.<row>.<col>`` as {(row, col): value}; other fields ignored."""
    cells: dict[tuple[int, int], str] = {}
    for key, value in items:
        parts = key.split(".")
        if len(parts) != 3 or parts[0] != "cell":
            continue
        try:
            cells[(int(parts[1]), int(parts[2]))] = value
        except ValueError:
            raise BadEdit(f"bad cell field {key!r}") from None
    return cells
