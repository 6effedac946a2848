"""An extract's result written to a host file: CSV, TSV or Parquet by the name's extension.

Rows arrive in batches and leave in batches: one extract holds one batch in memory, and stops
at its caps (``MAX_ROWS`` rows, ``MAX_BYTES`` bytes written) with an error that says which
cap and what to do; a capped extract writes no file, so a truncated result never looks whole.

Parquet keeps the database's types: each batch is typed by pyarrow and spooled to disk as
Arrow IPC, then the batches' types are unified (an all-NULL batch takes its column's type
from the others; ints widen to floats) and written as one file. A column whose values cannot
share one type is written as text.
"""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_ROWS = 1_000_000
MAX_BYTES = 256 * 1024 * 1024
SAMPLE_ROWS = 5
FORMATS = {".csv": ",", ".tsv": "\t", ".parquet": ""}


class CapReached(Exception):
    """The result is over a cap of one extract; no file was written."""


@dataclass(frozen=True)
class Written:
    rows: int
    bytes: int
    sample: list[tuple[Any, ...]]


def format_problem(name: str) -> str | None:
    """Why an extract cannot be written as ``name`` (its extension), or None."""
    if Path(name).suffix.lower() in FORMATS:
        return None
    kinds = ", ".join(FORMATS)
    return f"an extract is written as {kinds} by the name's extension; {name!r} has none of them"


def write(
    dest: Path, columns: list[str], batches: Iterable[list[tuple[Any, ...]]], spool: Path
) -> Written:
    """Write ``batches`` of rows under header ``columns`` to ``dest`` in its name's format.

    ``spool`` is a private host folder for Parquet's batches. CapReached over a cap.
    """
    counter = _Counter()
    if dest.suffix.lower() == ".parquet":
        _parquet(dest, columns, counter.rows(batches), spool, counter)
    else:
        _delimited(dest, columns, counter.rows(batches), FORMATS[dest.suffix.lower()], counter)
    return Written(counter.count, dest.stat().st_size, counter.sample)


class _Counter:
    def __init__(self) -> None:
        self.count = 0
        self.bytes = 0
        self.sample: list[tuple[Any, ...]] = []

    def rows(self, batches: Iterable[list[tuple[Any, ...]]]) -> Iterable[list[tuple[Any, ...]]]:
        for batch in batches:
            if self.count + len(batch) > MAX_ROWS:
                raise CapReached(
                    f"the query returns more than {MAX_ROWS:,} rows (the row cap of one "
                    "extract); filter or aggregate in SQL, or save a part of it"
                )
            if len(self.sample) < SAMPLE_ROWS:
                self.sample.extend(batch[: SAMPLE_ROWS - len(self.sample)])
            self.count += len(batch)
            yield batch

    def add_bytes(self, n: int) -> None:
        self.bytes += n
        if self.bytes > MAX_BYTES:
            raise CapReached(
                f"the result is over {MAX_BYTES // 2**20} MiB (the byte cap of one extract); "
                "select fewer columns or rows, or aggregate in SQL"
            )


def _delimited(
    dest: Path,
    columns: list[str],
    batches: Iterable[list[tuple[Any, ...]]],
    delimiter: str,
    counter: _Counter,
) -> None:
    with dest.open("wb") as fh:
        for rows in itertools.chain([[tuple(columns)]], batches):
            text = io.StringIO()
            csv.writer(text, delimiter=delimiter, lineterminator="\n").writerows(rows)
            data = text.getvalue().encode("utf-8", errors="surrogateescape")
            counter.add_bytes(len(data))
            fh.write(data)


def _parquet(
    dest: Path,
    columns: list[str],
    batches: Iterable[list[tuple[Any, ...]]],
    spool: Path,
    counter: _Counter,
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts: list[Path] = []
    schemas: list[pa.Schema] = []
    for n, batch in enumerate(batches):
        table = pa.table([_array(pa, [row[i] for row in batch]) for i in range(len(columns))],
                         names=columns)  # fmt: skip
        part = spool / f"part-{n:06d}.arrow"
        with pa.OSFile(str(part), "wb") as sink, pa.ipc.new_file(sink, table.schema) as out:
            out.write_table(table)
        counter.add_bytes(part.stat().st_size)
        parts.append(part)
        schemas.append(table.schema)
    schema = _unified(pa, columns, schemas)
    with pq.ParquetWriter(str(dest), schema) as writer:
        if not parts:
            writer.write_table(schema.empty_table())
        for part in parts:
            with pa.memory_map(str(part)) as source:
                table = pa.ipc.open_file(source).read_all()
            writer.write_table(_cast(pa, table, schema))
            part.unlink()
    counter.add_bytes(0 if dest.stat().st_size <= MAX_BYTES else MAX_BYTES + 1)


def _array(pa: Any, values: list[Any]) -> Any:
    try:
        return pa.array(values)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return pa.array([None if v is None else str(v) for v in values], type=pa.string())


def _unified(pa: Any, columns: list[str], schemas: list[Any]) -> Any:
    fields = []
    for i, name in enumerate(columns):
        kinds = [s.field(i).type for s in schemas if s.field(i).type != pa.null()]
        target = kinds[0] if kinds else pa.null()
        for kind in kinds[1:]:
            if kind == target:
                continue
            try:
                target = (
                    pa.unify_schemas(
                        [pa.schema([("c", target)]), pa.schema([("c", kind)])],
                        promote_options="permissive",
                    )
                    .field(0)
                    .type
                )
            except (pa.ArrowException, TypeError):
                target = pa.string()
                break
        fields.append(pa.field(name, target))
    return pa.schema(fields)


def _cast(pa: Any, table: Any, schema: Any) -> Any:
    arrays = []
    for i, field in enumerate(schema):
        column = table.column(i)
        try:
            arrays.append(column.cast(field.type))
        except (pa.ArrowException, TypeError):
            values = [None if v is None else str(v) for v in column.to_pylist()]
            arrays.append(pa.array(values, type=field.type))
    return pa.Table.from_arrays(arrays, schema=schema)
