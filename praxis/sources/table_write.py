"""One output written to a table in the worker process (``worker``): one transaction.

The output's header is checked against the table's columns first (the same names, and an
upsert's key among them): a mismatch is refused before anything is written. Then, in one
transaction, ``replace`` deletes the table's rows and inserts the output's; ``upsert``
deletes the rows whose key an output row has and inserts the output's rows. Any failure
rolls the transaction back, and a worker killed midway leaves it uncommitted, which the
database discards: the table is as it was. Values are bound, never formatted into the SQL;
the table and column names are quoted identifiers. Bounded like an extract: a timer cancels
the statement at the budget, the address space is capped.

A CSV or TSV cell is text (an empty cell NULL), which the database casts to the column's
type; a Parquet value keeps its type.
"""

from __future__ import annotations

import csv
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import connect
from .source import Target, redact

BATCH = 1_000
PAUSE_SECONDS = 120.0  # the test hook's wait: killed long before


class ColumnsRefused(Exception):
    """The output cannot be written to the table as it is (its columns differ)."""


def run(job: dict[str, Any], limit: Callable[[int], None]) -> dict[str, Any]:
    """Write the job's output to its table; ``limit(bytes)`` caps the address space (once
    connected and the readers imported)."""
    target = Target(**{**job["target"], "secrets": tuple(job["target"]["secrets"])})
    source = Path(job["source"])
    columns = header(source)
    database = Path(job["database"]) if job.get("database") else None
    try:
        raw = _connect(target, database, job["seconds"])
    except connect.errors_of(target.engine) as exc:
        text = redact(str(exc).strip(), target.secrets)[:1_000]
        return {"error": "unavailable", "message": f"cannot connect: {text}"}
    session = connect.Session(target, raw, job["seconds"])
    errors = session.errors
    failures: tuple[type[BaseException], ...] = (*errors, ValueError, OSError)
    with session:
        try:
            if target.engine == "postgresql" and not target.allow_superuser:
                connect.refuse_power(session, target)
        except connect.Unavailable as exc:
            return {"error": "unavailable", "message": str(exc)}
        session.start_timer()
        if source.suffix.lower() == ".parquet":
            import pyarrow.parquet  # noqa: F401  (its allocator reserves address space once)
        limit(job["memory"])
        try:
            rows = _write(session, job, columns, source)
        except ColumnsRefused as exc:
            _rollback(raw)
            return {"error": "columns", "message": str(exc)}
        except failures as exc:
            _rollback(raw)
            why = session.error(exc) if isinstance(exc, errors) else exc
            return {"error": "write", "message": str(why)}
    return {"rows": rows, "columns": columns}


def _write(session: connect.Session, job: dict[str, Any], columns: list[str], source: Path) -> int:
    raw, engine = session.raw, session.engine
    table = ".".join(_ident(p) for p in str(job["table"]).split("."))
    key: list[str] = list(job["key"])
    mark = "%s" if engine == "postgresql" else "?"
    cur = raw if engine == "duckdb" else raw.cursor()
    _begin(raw, engine)
    cur.execute(f"SELECT * FROM {table} WHERE 1 = 0")
    have = [str(d[0]) for d in cur.description or ()]
    _check(job["table"], columns, have, key)
    if job["mode"] == "replace":
        cur.execute(f"DELETE FROM {table}")
    names = ", ".join(_ident(c) for c in columns)
    insert = f"INSERT INTO {table} ({names}) VALUES ({', '.join([mark] * len(columns))})"
    where = " AND ".join(f"{_ident(k)} = {mark}" for k in key)
    at = [columns.index(k) for k in key]
    written = 0
    for batch in rows_of(source):
        if job["mode"] == "upsert":
            cur.executemany(
                f"DELETE FROM {table} WHERE {where}", [[r[i] for i in at] for r in batch]
            )
        cur.executemany(insert, batch)
        written += len(batch)
        if job.get("pause"):
            _pause(Path(job["pause"]))
    raw.commit()
    return written


def _check(table: str, columns: list[str], have: list[str], key: list[str]) -> None:
    """Refused unless the output's columns are the table's (in any order), keys among them."""
    extra = [c for c in columns if c not in have]
    lacking = [c for c in have if c not in columns]
    if extra or lacking or len(set(columns)) != len(columns):
        parts = []
        if extra:
            parts.append(f"the table has no column {', '.join(extra)}")
        if lacking:
            parts.append(f"the output has no column {', '.join(lacking)}")
        if len(set(columns)) != len(columns):
            parts.append("the output repeats a column name")
        raise ColumnsRefused(
            f"the output's columns do not match table {table}: {'; '.join(parts)}; make the "
            "phase write the table's columns, or alter the table; nothing was written"
        )
    missing = [k for k in key if k not in columns]
    if missing:
        raise ColumnsRefused(f"key column {', '.join(missing)} is not a column of the output")


def header(source: Path) -> list[str]:
    """The output's column names."""
    if source.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        return [str(n) for n in pq.read_schema(source).names]
    with source.open(newline="", encoding="utf-8") as fh:
        return next(csv.reader(fh, delimiter=_delimiter(source)), [])


def rows_of(source: Path) -> Iterator[list[tuple[Any, ...]]]:
    """The output's rows in batches: Parquet's values typed, a CSV's text (empty: NULL)."""
    if source.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        for part in pq.ParquetFile(source).iter_batches(batch_size=BATCH):
            cols = part.to_pydict()
            values = list(cols.values())
            yield [tuple(v[i] for v in values) for i in range(part.num_rows)]
        return
    with source.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh, delimiter=_delimiter(source))
        next(reader, None)
        batch: list[tuple[Any, ...]] = []
        for row in reader:
            batch.append(tuple(None if v == "" else v for v in row))
            if len(batch) >= BATCH:
                yield batch
                batch = []
        if batch:
            yield batch


def _delimiter(source: Path) -> str:
    return "\t" if source.suffix.lower() == ".tsv" else ","


def _connect(target: Target, database: Path | None, seconds: float) -> Any:
    if target.engine == "sqlite":
        import sqlite3

        assert database is not None
        conn = sqlite3.connect(str(database), isolation_level=None, check_same_thread=False)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        return conn
    if target.engine == "duckdb":
        import duckdb

        assert database is not None
        config: dict[str, str | bool | int | float | list[str]] = {
            "threads": 1,
            "memory_limit": connect.DUCKDB_MEMORY,
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "enable_external_access": False,
        }
        return duckdb.connect(str(database), config=config)
    import psycopg
    from psycopg.conninfo import make_conninfo

    params = dict(target.params)
    params.update(
        options=f"-c statement_timeout={max(1, int(seconds * 1000))}",
        connect_timeout=str(connect.CONNECT_SECONDS),
        application_name="praxis publish",
    )
    return psycopg.connect(make_conninfo("", **params))


def _begin(raw: Any, engine: str) -> None:
    if engine == "sqlite":
        raw.execute("BEGIN IMMEDIATE")
    elif engine == "duckdb":
        raw.begin()
    # psycopg: a transaction begins with the first statement (autocommit is off)


def _rollback(raw: Any) -> None:
    try:
        raw.rollback()
    except Exception:  # a connection the timer cancelled may refuse; closing discards it
        pass


def _pause(marker: Path) -> None:
    """The test hook (``PRAXIS_TEST_PUBLISH_PAUSE``, passed by the runner only then): with
    rows written and the transaction open, say so and wait to be killed."""
    marker.write_text(str(os.getpid()))
    time.sleep(PAUSE_SECONDS)


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
