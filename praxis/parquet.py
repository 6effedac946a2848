"""Parquet files read within bounds: the shape from the footer, rows a page at a time.

For the prompt's profile of a tabular input, the chat's ``profile`` and the run page's table.
Nothing here reads a whole file: the row count, the columns and their types come from the
footer (itself capped), null counts from the row groups' statistics, and rows from the one
or two row groups a page falls in, decoded in small batches (pyarrow). A footer, a row group
or a page deeper into one row group than the caps allow is refused, naming the cap, so a
small file that unpacks into billions of rows costs the host no more than a few batches.
"""

from __future__ import annotations

import csv
import io
import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_FOOTER = 16 * 1024 * 1024  # bytes of metadata
MAX_COLUMNS = 200  # shown (the rest are named as cut)
MAX_GROUP_BYTES = 256 * 1024 * 1024  # uncompressed bytes of the shown columns of a row group
MAX_SKIP = 2_000_000  # rows decoded to reach a page inside one row group
MAX_CELL = 10_000  # characters of one cell as text
BATCH = 1_024


class NotReadable(Exception):
    """The file is not Parquet, or reading the part asked for would pass a cap."""


@dataclass(frozen=True)
class Shape:
    rows: int
    columns: list[tuple[str, str]]  # (name, Arrow type) of every column
    nulls: list[int | None]  # per column, from statistics; None where a row group has none
    groups: list[int]  # rows per row group

    @property
    def shown(self) -> list[str]:
        return [name for name, _ in self.columns[:MAX_COLUMNS]]


def is_parquet(name: str) -> bool:
    return name.lower().endswith(".parquet")


@contextmanager
def _open(path: Path) -> Iterator[Any]:
    """The file's ParquetFile, its footer's size checked first; read by descriptor, no link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise NotReadable(f"{path.name} cannot be opened ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        pf = _parquet_file(path, fd, fh)
        try:
            yield pf
        finally:
            pf.close()


def _parquet_file(path: Path, fd: int, fh: Any) -> Any:
    import pyarrow.parquet as pq

    try:
        size = os.fstat(fd).st_size
        if size < 12:
            raise NotReadable(f"{path.name} is too short to be a Parquet file")
        fh.seek(size - 8)
        tail = fh.read(8)
        if tail[4:] != b"PAR1":
            raise NotReadable(f"{path.name} is not a Parquet file (no PAR1 footer)")
        (footer,) = struct.unpack("<I", tail[:4])
        if footer > MAX_FOOTER:
            raise NotReadable(
                f"{path.name}'s metadata is {footer:,} bytes, over the {MAX_FOOTER // 2**20} "
                "MiB this view reads; read it with code"
            )
        fh.seek(0)
        return pq.ParquetFile(fh)
    except NotReadable:
        raise
    except Exception as exc:  # pyarrow's errors for a malformed file are of several kinds
        raise NotReadable(f"{path.name} cannot be read as Parquet ({exc})") from None


def shape(path: Path) -> Shape:
    with _open(path) as pf:
        meta = pf.metadata
        schema = pf.schema_arrow
        columns = [(f.name, str(f.type)) for f in schema]
        groups = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
        nulls: list[int | None] = []
        leaves = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
        for name, _ in columns:
            nulls.append(_nulls(meta, leaves.get(name)))
        return Shape(meta.num_rows, columns, nulls, groups)


def _nulls(meta: Any, leaf: int | None) -> int | None:
    if leaf is None:  # a nested column: several leaves
        return None
    total = 0
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(leaf).statistics
        if stats is None or not stats.has_null_count:
            return None
        total += stats.null_count
    return total


def rows(path: Path, start: int, count: int) -> list[list[str]]:
    """Rows [start, start + count) of the shown columns, each cell as text (clipped)."""
    with _open(path) as pf:
        meta = pf.metadata
        names = [f.name for f in pf.schema_arrow][:MAX_COLUMNS]
        found: list[list[str]] = []
        first = 0
        for g in range(meta.num_row_groups):
            n = meta.row_group(g).num_rows
            if start >= first + n or len(found) >= count:
                first += n
                continue
            skip = max(0, start - first)
            if skip > MAX_SKIP:
                raise NotReadable(
                    f"row {start + 1:,} lies {skip:,} rows into a row group of {n:,}; this view "
                    f"decodes at most {MAX_SKIP:,} rows to reach a page; read it with code"
                )
            _check_group(path, meta, g, names)
            for batch in _batches(pf, g, names):
                if skip >= batch.num_rows:
                    skip -= batch.num_rows
                    continue
                part = batch.slice(skip, count - len(found))
                skip = 0
                found.extend(_cells(part))
                if len(found) >= count:
                    break
            first += n
        return found


def _check_group(path: Path, meta: Any, g: int, names: list[str]) -> None:
    group = meta.row_group(g)
    wanted = set(names)
    size = sum(
        group.column(i).total_uncompressed_size
        for i in range(group.num_columns)
        if group.column(i).path_in_schema.split(".")[0] in wanted
    )
    if size > MAX_GROUP_BYTES:
        raise NotReadable(
            f"{path.name}'s row group {g + 1} is {size // 2**20:,} MiB unpacked, over the "
            f"{MAX_GROUP_BYTES // 2**20} MiB this view reads; read it with code"
        )


def _batches(pf: Any, g: int, names: list[str]) -> Iterator[Any]:
    yield from pf.iter_batches(batch_size=BATCH, row_groups=[g], columns=names,
                               use_threads=False)  # fmt: skip


def _cells(batch: Any) -> list[list[str]]:
    columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
    return [[_text(col[r]) for col in columns] for r in range(batch.num_rows)]


def _text(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    if len(text) > MAX_CELL:
        return text[:MAX_CELL] + f" [... {len(text) - MAX_CELL} more characters]"
    return text


def profile(path: Path, sample: int = 5) -> str:
    """Rows, columns, types and nulls from the metadata, and the first ``sample`` rows."""
    try:
        found = shape(path)
        head = rows(path, 0, sample)
    except NotReadable as exc:
        return f"could not be read as a table ({exc})"
    lines = [
        f"| {name} | {kind} | {'?' if n is None else n} |"
        for (name, kind), n in zip(found.columns[:MAX_COLUMNS], found.nulls, strict=False)
    ]
    more = len(found.columns) - MAX_COLUMNS
    if more > 0:
        lines.append(f"| ... {more:,} more columns | | |")
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows([found.shown, *head])
    return (
        f"{found.rows:,} rows, {len(found.columns)} columns (Parquet)\n\n"
        "| column | dtype | nulls |\n|---|---|---|\n"
        + "\n".join(lines)
        + f"\n\nFirst {len(head)} rows:\n```\n{text.getvalue().strip()}\n```"
    )
