"""Run SQL on the host against the flow's data source and save the result as CSV.

``flow.database`` is a SQLite file of the flow (opened read-only) or a URL with ``://``
(through SQLAlchemy, when installed). The query runs on the host, never in the sandbox; only
the CSV result enters the workspace.
"""

from __future__ import annotations

import csv
import sqlite3
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox.paths import confined

MAX_ROWS = 1_000_000


class ExtractError(Exception):
    """The query could not run (bad SQL, no database); the message is shown to the model."""


class SourceUnavailable(ExtractError):
    """The flow has no usable data source (none declared, missing file, no SQLAlchemy)."""


@dataclass(frozen=True)
class Extracted:
    name: str
    columns: list[str]
    rows: int
    sample: list[tuple[Any, ...]]

    def summary(self) -> str:
        text = f"wrote {self.name}: {self.rows:,} rows, columns {', '.join(self.columns)}"
        if self.sample:
            text += "\nfirst rows:\n" + "\n".join(", ".join(map(str, r)) for r in self.sample)
        return text


def run_query(database: str | None, root: Path, query: str, dest: Path) -> Extracted:
    """Run ``query`` against ``database`` and write the result as CSV to host file ``dest``."""
    if not database:
        raise SourceUnavailable("this flow declares no 'database' in flow.yaml")
    if "://" in database:
        columns, rows = _sqlalchemy_rows(database, query)
        return _write_csv(dest, columns, rows)
    try:
        path = confined(root, database)
    except Exception as exc:
        raise SourceUnavailable(f"database {database!r}: {exc}") from exc
    uri = path.resolve().as_uri() + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True)
    try:
        conn.execute("PRAGMA query_only = ON")
        cursor = conn.execute(query)
        columns = [d[0] for d in cursor.description or ()]
        if not columns:
            raise ExtractError("the statement returned no result set; extract needs a SELECT")
        return _write_csv(dest, columns, cursor)
    except sqlite3.Error as exc:
        raise ExtractError(f"SQL error: {exc}") from exc
    finally:
        conn.close()


def _sqlalchemy_rows(url: str, query: str) -> tuple[list[str], list[Sequence[Any]]]:
    try:
        import sqlalchemy
    except ImportError as exc:
        raise SourceUnavailable(
            f"database {url.split('://')[0]}://... needs SQLAlchemy: pip install sqlalchemy "
            "and the database's driver"
        ) from exc
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as conn:
            result = conn.execute(sqlalchemy.text(query))
            if not result.returns_rows:
                raise ExtractError("the statement returned no result set; extract needs a SELECT")
            columns = list(result.keys())
            rows: list[Sequence[Any]] = [tuple(r) for r in result.fetchmany(MAX_ROWS + 1)]
            conn.rollback()
        return columns, rows
    except sqlalchemy.exc.SQLAlchemyError as exc:
        raise ExtractError(f"SQL error: {exc}") from exc
    finally:
        engine.dispose()


def _write_csv(dest: Path, columns: list[str], rows: Iterable[Sequence[Any]]) -> Extracted:
    count = 0
    sample: list[tuple[Any, ...]] = []
    with dest.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            if count >= MAX_ROWS:
                raise ExtractError(
                    f"the query returns more than {MAX_ROWS:,} rows; filter or aggregate in SQL"
                )
            writer.writerow(row)
            if count < 5:
                sample.append(tuple(row))
            count += 1
    return Extracted(dest.name, columns, count, sample)


def extract_to_workspace(
    database: str | None, root: Path, query: str, upload: Any, name: str
) -> Extracted:
    """Run the query into a temporary CSV and ``upload(path, name)`` it into the workspace."""
    with tempfile.TemporaryDirectory(prefix="praxis-extract-") as tmp:
        dest = Path(tmp) / "result.csv"
        result = run_query(database, root, query, dest)
        upload(dest, name)
    return Extracted(name, result.columns, result.rows, result.sample)
