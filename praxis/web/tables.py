"""CSV/TSV artifacts as a reviewer reads and edits them: pages of rows, edits cell by cell.

Cells stay strings end to end (the csv module, not pandas), so a save changes only the cells
the reviewer changed: numbers keep their spelling, nothing is re-inferred.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

PAGE_ROWS = 100
MAX_EDIT_BYTES = 50 * 1024 * 1024


class BadEdit(Exception):
    """Raised when a submitted table edit does not fit the file (a row or column not there)."""


@dataclass
class TablePage:
    header: list[str]
    rows: list[tuple[int, list[str]]]  # (row index in the file, cells), data rows only
    page: int  # 1-based
    pages: int
    total: int  # data rows


def delimiter_of(name: str) -> str:
    return "\t" if name.lower().endswith(".tsv") else ","


def is_table(name: str) -> bool:
    return name.lower().endswith((".csv", ".tsv"))


def read_rows(path: Path) -> tuple[list[list[str]], str]:
    """All rows (header first) and the line ending the file uses."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    newline = "\r\n" if "\r\n" in text[:65536] else "\n"
    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter_of(path.name)))
    return rows, newline


def page_of(path: Path, page: int, size: int = PAGE_ROWS) -> TablePage:
    rows, _ = read_rows(path)
    header, data = (rows[0], rows[1:]) if rows else ([], [])
    pages = max(1, -(-len(data) // size))
    page = min(max(1, page), pages)
    start = (page - 1) * size
    width = len(header)
    shown = [(start + i, _fit(r, width)) for i, r in enumerate(data[start : start + size])]
    return TablePage(header=header, rows=shown, page=page, pages=pages, total=len(data))


def _fit(row: list[str], width: int) -> list[str]:
    return row + [""] * (width - len(row)) if len(row) < width else row


def apply_cells(path: Path, cells: dict[tuple[int, int], str]) -> bytes:
    """The file's bytes with data cell (row, column) set to each value; BadEdit if out of range."""
    rows, newline = read_rows(path)
    if not rows:
        raise BadEdit(f"{path.name} is empty: edit it as text")
    width = len(rows[0])
    for (row, col), value in cells.items():
        if not 0 <= row < len(rows) - 1 or not 0 <= col < width:
            raise BadEdit(f"{path.name} has no cell at row {row + 1}, column {col + 1}")
        line = rows[row + 1]
        if len(line) < width:
            line.extend([""] * (width - len(line)))
        line[col] = value
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, delimiter=delimiter_of(path.name), lineterminator=newline)
    writer.writerows(rows)
    return buf.getvalue().encode("utf-8")


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
