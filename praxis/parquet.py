"""Parquet files read within bounds: the shape from the footer, rows a page at a time.

For the prompt's profile of a tabular input, the chat's ``profile`` and the run page's table.
Nothing here reads a whole file: the row count, the columns and their types come from the
footer (itself capped), null counts from the row groups' statistics, and rows from the one
or two row groups a page falls in, decoded in small batches (pyarrow). A footer, a row group
or a page deeper into one row group than the caps allow is refused, naming the cap, so a
small file that unpacks into billions of rows costs the host no more than a few batches.

What a row group costs is counted by its decoded size, not its encoded one: every leaf
column of the shown fields, found by its index in the footer (a name may hold dots or repeat),
its bytes unpacked, and for a repeated leaf its values times their decoded width (one row of
a list may hold them all). Text leaves are decoded as dictionaries and never expanded: a
value is clipped once in the dictionary, so a 3 KB file whose dictionary of one long string
is referenced by every row costs the host that string once, not once per row.
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

from sandbox.files import open_nofollow

from . import parquet_cells as cells

MAX_FOOTER = 16 * 1024 * 1024  # bytes of metadata
MAX_COLUMNS = 200  # shown (the rest are named as cut)
MAX_GROUP_BYTES = 256 * 1024 * 1024  # uncompressed bytes of the shown columns of a row group
MAX_SKIP = 2_000_000  # rows decoded to reach a page inside one row group
MAX_TEXT = 32 * 1024 * 1024  # characters of the cells of one read, as text
BATCH = 1_024
TEXT_TYPES = {"STRING", "NONE", "JSON", "BSON", "ENUM", "UUID"}  # BYTE_ARRAY read as text or bytes
# decoded bytes of one value by physical type (FIXED_LEN_BYTE_ARRAY: its length; BYTE_ARRAY:
# the dictionary index it is read as)
WIDTHS = {"BOOLEAN": 1, "INT32": 4, "INT64": 8, "INT96": 12, "FLOAT": 4, "DOUBLE": 8}


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
def _open(path: Path, *, as_dictionary: bool = False) -> Iterator[Any]:
    """The file's ParquetFile, its footer's size checked first; read by descriptor, no link.

    With ``as_dictionary``, every text leaf is decoded as a dictionary (never expanded).
    """
    try:
        fd = open_nofollow(path)
    except OSError as exc:
        raise NotReadable(f"{path.name} cannot be opened ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        pf = _parquet_file(path, fd, fh, as_dictionary)
        try:
            yield pf
        finally:
            pf.close()


def _parquet_file(path: Path, fd: int, fh: Any, as_dictionary: bool) -> Any:
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
        meta = pq.read_metadata(fh)
        fh.seek(0)
        texts = _text_leaves(meta) if as_dictionary else None
        return pq.ParquetFile(fh, metadata=meta, read_dictionary=texts)
    except NotReadable:
        raise
    except Exception as exc:  # pyarrow's errors for a malformed file are of several kinds
        raise NotReadable(f"{path.name} cannot be read as Parquet ({exc})") from None


def _text_leaves(meta: Any) -> list[int]:
    """The leaf columns pyarrow reads as strings or bytes: decoded as dictionaries."""
    found = []
    for i in range(meta.num_columns):
        leaf = meta.schema.column(i)
        if leaf.physical_type == "BYTE_ARRAY" and leaf.logical_type.type in TEXT_TYPES:
            found.append(i)
    return found


def _fields_of_leaves(path: Path, pf: Any) -> list[int]:
    """For each leaf column of the footer, the index of the top-level field it belongs to."""
    owners = [field for field, f in enumerate(pf.schema_arrow) for _ in range(_leaf_count(f.type))]
    if len(owners) != pf.metadata.num_columns:
        raise NotReadable(
            f"{path.name}'s schema has {len(owners):,} leaf columns but its footer "
            f"{pf.metadata.num_columns:,}; read it with code"
        )
    return owners


def _leaf_count(kind: Any) -> int:
    import pyarrow as pa

    if isinstance(kind, pa.ExtensionType):
        return _leaf_count(kind.storage_type)
    if pa.types.is_struct(kind):
        return sum(_leaf_count(kind.field(i).type) for i in range(kind.num_fields))
    if pa.types.is_map(kind):
        return _leaf_count(kind.key_type) + _leaf_count(kind.item_type)
    if isinstance(kind, pa.ListType | pa.LargeListType | pa.FixedSizeListType | pa.ListViewType
                  | pa.LargeListViewType):  # fmt: skip
        return _leaf_count(kind.value_type)
    return 1


def shape(path: Path) -> Shape:
    import pyarrow as pa

    with _open(path) as pf:
        meta = pf.metadata
        schema = pf.schema_arrow
        columns = [(f.name, str(f.type)) for f in schema]
        groups = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
        owners = _fields_of_leaves(path, pf)
        flat = [not pa.types.is_nested(f.type) for f in schema]
        nulls = [_nulls(meta, owners.index(n) if flat[n] else None) for n in range(len(flat))]
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
    with _open(path, as_dictionary=True) as pf:
        meta = pf.metadata
        owners = _fields_of_leaves(path, pf)
        shown = min(len(pf.schema_arrow), MAX_COLUMNS)
        leaves = [i for i, field in enumerate(owners) if field < shown]
        found: list[list[str]] = []
        room = [MAX_TEXT]
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
            _check_group(path, meta, g, leaves)
            for batch in _batches(pf, g, leaves):
                if skip >= batch.num_rows:
                    skip -= batch.num_rows
                    continue
                part = batch.slice(skip, count - len(found))
                skip = 0
                found.extend(_cells(path, part, room))
                if len(found) >= count:
                    break
            first += n
        return found


def _check_group(path: Path, meta: Any, g: int, leaves: list[int]) -> None:
    """Refuse a row group whose shown leaves decode to more than MAX_GROUP_BYTES."""
    group = meta.row_group(g)
    size = sum(_decoded(meta.schema.column(i), group.column(i)) for i in leaves)
    if size > MAX_GROUP_BYTES:
        raise NotReadable(
            f"{path.name}'s row group {g + 1} is {size // 2**20:,} MiB decoded, over the "
            f"{MAX_GROUP_BYTES // 2**20} MiB this view reads; read it with code"
        )


def _decoded(leaf: Any, chunk: Any) -> int:
    """A column chunk's bytes unpacked, and for a repeated leaf, its values decoded.

    A flat leaf is decoded a batch of rows at a time, so only its unpacked bytes count; a
    repeated leaf's values may all lie in one row, so each counts at its decoded width (a
    text leaf's at its dictionary index) plus its levels.
    """
    size = int(chunk.total_uncompressed_size)
    if leaf.max_repetition_level > 0:
        width = WIDTHS.get(leaf.physical_type, leaf.length or 0) or 4
        size += int(chunk.num_values) * (width + 2)
    return size


def _cells(path: Path, part: Any, room: list[int]) -> list[list[str]]:
    try:
        return cells.of_batch(part, room)
    except cells.OverBudget:
        raise NotReadable(
            f"the rows asked for of {path.name} hold more than {MAX_TEXT // 2**20} MiB of text, "
            "the most this view shows at once; read it with code"
        ) from None


def _batches(pf: Any, g: int, leaves: list[int]) -> Iterator[Any]:
    yield from pf.reader.iter_batches(BATCH, row_groups=[g], column_indices=leaves,
                                      use_threads=False)  # fmt: skip


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
