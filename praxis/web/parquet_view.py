"""A Parquet output as a table page: read-only, rows from the row groups a page falls in."""

from __future__ import annotations

import os
from pathlib import Path

from praxis import parquet

from .tables import MAX_PAGE_ROWS, PAGE_ROWS, TablePage

READ_ONLY = "Parquet, shown read-only: change it with code (a re-run), or by hand"


def page_of(path: Path, page: int, size: int = PAGE_ROWS) -> TablePage:
    """Page ``page`` of ``path``; NotReadable when the file or the page passes a cap."""
    found = parquet.shape(path)
    pages = max(1, -(-found.rows // size))
    page = min(max(1, page), pages)
    start = (page - 1) * size
    rows = parquet.rows(path, start, size)
    cut = len(found.columns) - len(found.shown)
    return TablePage(
        header=found.shown,
        rows=[(start + i, cells) for i, cells in enumerate(rows)],
        page=page,
        pages=pages,
        total=found.rows,
        version=version(path),
        dialect=READ_ONLY + (f"; {cut:,} more columns not shown" if cut > 0 else ""),
    )


def rows_of(path: Path, start: int, count: int) -> list[tuple[int, list[str]]]:
    count = max(0, min(count, MAX_PAGE_ROWS))
    return [(start + i, cells) for i, cells in enumerate(parquet.rows(path, start, count))]


def version(path: Path) -> str:
    st = os.stat(path, follow_symlinks=False)
    return f"{st.st_size}-{st.st_mtime_ns}"
