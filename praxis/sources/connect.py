"""One read-only, time-bounded connection to a data source, through SQLAlchemy.

Each engine is held to read-only by the database itself, never by looking at the SQL:

- SQLite: the file opened ``mode=ro``, ``PRAGMA query_only``, no ATTACH;
- DuckDB: the file opened ``read_only=True``; the phase's tabular inputs are temporary views
  on copies, the only files the connection may read (``allowed_paths``, external access off,
  the configuration locked); bounded by ``memory_limit``, one thread and a spill cap;
- PostgreSQL: every transaction read-only (``default_transaction_read_only`` and
  ``SET TRANSACTION READ ONLY``), ``statement_timeout`` from the phase's budget.

A timer cancels the query at the budget on every engine (``cancel_safe`` / ``interrupt``), so
a slow fetch cannot outlast it either. Rows are streamed in batches (PostgreSQL: psycopg's
``Cursor.stream``), never held whole. Error text reaches the model with secrets masked.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Any

from sandbox.errors import SandboxError
from sandbox.files import confined

from .source import MEMORY, Source, missing_driver, redact, resolved_url, secrets

BATCH_ROWS = 1_000
DUCKDB_MEMORY = "256MB"
DUCKDB_SPILL = "1GB"
CONNECT_SECONDS = 30


class QueryError(Exception):
    """The query could not run (bad SQL, a refused write, the timeout); shown to the model."""


class Unavailable(QueryError):
    """The source cannot be reached: no such file, a missing driver, an unset reference."""


class Session:
    """An open connection: ``rows(query)`` streams one statement's result, once."""

    def __init__(self, source: Source, engine: Any, conn: Any, seconds: float) -> None:
        self.source = source
        self.engine = engine
        self.conn = conn
        self.raw = conn.connection.dbapi_connection
        self.seconds = seconds
        self.secrets = secrets(source)
        self.timed_out = False
        self.errors: tuple[type[BaseException], ...] = _errors(engine)
        self._timer: threading.Timer | None = None
        self._open_stream = False

    def rows(self, query: str) -> tuple[list[str], Iterator[list[tuple[Any, ...]]]]:
        """The result's column names and its rows in batches; QueryError when it fails."""
        self._timer = threading.Timer(self.seconds, self.expire)
        self._timer.daemon = True
        self._timer.start()
        try:
            columns, first, rest = self._start(query)
        except self.errors as exc:
            raise self.error(exc) from None
        if not columns:
            raise QueryError("the statement returned no result set; extract needs a SELECT")
        self._open_stream = True
        return columns, self._batches(first, rest)

    def _start(self, query: str) -> tuple[list[str], list[tuple[Any, ...]], Iterator[Any]]:
        cur = self.raw.cursor()
        if self.source.engine == "postgresql":
            if self.raw.info.transaction_status != 0:  # not idle: begin afresh
                self.raw.rollback()
            cur.execute("SET TRANSACTION READ ONLY")
            cur.execute(f"SET LOCAL statement_timeout = {_ms(self.seconds)}")
            stream = iter(cur.stream(query, size=BATCH_ROWS))
            first = list(islice(stream, BATCH_ROWS))
            return _names(cur.description), first, stream
        cur.execute(query)
        names = _names(cur.description)
        return names, list(cur.fetchmany(BATCH_ROWS)) if names else [], _fetch(cur)

    def _batches(
        self, first: list[tuple[Any, ...]], rest: Iterator[Any]
    ) -> Iterator[list[tuple[Any, ...]]]:
        try:
            if first:
                yield [tuple(r) for r in first]
            while True:
                batch = [tuple(r) for r in islice(rest, BATCH_ROWS)]
                if not batch:
                    break
                yield batch
            self._open_stream = False
        except self.errors as exc:
            raise self.error(exc) from None

    def error(self, exc: BaseException) -> QueryError:
        if self.timed_out:
            return QueryError(
                f"the query ran past the phase's budget of {self.seconds:g} s and was cancelled; "
                "make it cheaper (filter, aggregate, LIMIT) or raise the phase's timeout"
            )
        return QueryError(f"SQL error: {self.clean(exc)}")

    def clean(self, exc: BaseException) -> str:
        """The database's own words for ``exc``, without SQLAlchemy's trailer, secrets masked."""
        inner = getattr(exc, "orig", None) or exc
        text = str(inner).strip() or type(inner).__name__
        lines = [ln for ln in text.splitlines() if not ln.startswith(("[SQL:", "(Background"))]
        return redact("\n".join(lines).strip()[:2_000], self.secrets)

    def expire(self) -> None:
        """The budget ran out (the timer's thread): stop the running statement."""
        self.timed_out = True
        self.interrupt()

    def interrupt(self) -> None:
        try:
            if self.source.engine == "postgresql":
                self.raw.cancel_safe(timeout=5)
            else:
                self.raw.interrupt()
        except Exception:  # a cancel that fails leaves the timeout to the server
            pass

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._open_stream:  # stopped early (a cap): never wait for the rest of the result
            # a server blocked on sending rows acts on a cancel only once they are read, so
            # the connection is dropped, not rolled back: the server ends the query with it
            self.interrupt()
            self.conn.invalidate()
        for step in (self.conn.rollback, self.conn.close, self.engine.dispose):
            try:
                step()
            except Exception:  # closing after a cancel may report it again
                pass

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_session(
    source: Source,
    root: Path,
    *,
    seconds: float,
    scratch: Path,
    tables: Mapping[str, Path] | None = None,
) -> Session:
    """Connect to ``source`` (files relative to flow folder ``root``) for at most ``seconds``.

    ``tables`` (DuckDB only): view name -> host file, each a copy made for this extract.
    ``scratch`` is a private host folder for DuckDB's spill and its empty database.
    """
    import sqlalchemy

    missing = missing_driver(source)
    if missing:
        raise Unavailable(f"database {source.shown}: {missing}")
    tables = tables or {}
    engine = _engine(source, root, seconds, scratch)
    try:
        conn = engine.connect()
    except ImportError as exc:
        engine.dispose()
        raise Unavailable(f"database {source.shown}: {exc}") from None
    except sqlalchemy.exc.SQLAlchemyError as exc:
        engine.dispose()
        text = redact(str(getattr(exc, "orig", None) or exc).strip(), secrets(source))
        raise Unavailable(f"database {source.shown} cannot be opened: {text[:1_000]}") from None
    session = Session(source, engine, conn, seconds)
    if source.engine == "duckdb":
        try:
            _views(session.raw, tables)
        except session.errors as exc:
            session.close()
            why = session.clean(exc)
            raise Unavailable(f"the phase's files cannot be read as tables: {why}") from None
    return session


def _engine(source: Source, root: Path, seconds: float, scratch: Path) -> Any:
    import sqlalchemy
    from sqlalchemy.pool import NullPool

    if source.engine == "sqlite":
        uri = _file(root, source).as_uri() + "?mode=ro"

        def creator() -> sqlite3.Connection:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            conn.execute("PRAGMA query_only = ON")
            conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
            return conn

        return sqlalchemy.create_engine("sqlite://", creator=creator, poolclass=NullPool)
    if source.engine == "duckdb":
        if source.path == MEMORY:  # the phase's files alone: an empty database, read-only
            path = scratch / "files.duckdb"
            if not path.exists():
                import duckdb

                duckdb.connect(str(path)).close()
        else:
            path = _file(root, source)
        (scratch / "spill").mkdir(exist_ok=True)
        config = {
            "threads": 1,
            "memory_limit": DUCKDB_MEMORY,
            "temp_directory": str(scratch / "spill"),
            "max_temp_directory_size": DUCKDB_SPILL,
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
        }
        url = sqlalchemy.engine.URL.create("duckdb", database=str(path))
        args = {"read_only": True, "config": config}
        return sqlalchemy.create_engine(url, connect_args=args, poolclass=NullPool)
    try:
        url = resolved_url(source).set(drivername="postgresql+psycopg")
    except ValueError as exc:  # BadSource: an unset reference
        raise Unavailable(f"database {exc}") from None
    options = f"-c default_transaction_read_only=on -c statement_timeout={_ms(seconds)}"
    args = {
        "options": options,
        "connect_timeout": max(1, min(CONNECT_SECONDS, math.ceil(seconds))),
        "application_name": "praxis extract",
    }
    return sqlalchemy.create_engine(url, connect_args=args, poolclass=NullPool)


def _file(root: Path, source: Source) -> Path:
    """A file engine's database on the host: inside the flow folder, unless written absolute."""
    assert source.path is not None
    written = Path(source.path)
    try:
        path = written if written.is_absolute() else confined(root, source.path)
    except SandboxError as exc:
        raise Unavailable(f"database {source.shown!r}: {exc}") from None
    if not path.is_file():
        raise Unavailable(f"database {source.shown!r}: {source.path} is not a file")
    return path.resolve()


def _views(raw: Any, tables: Mapping[str, Path]) -> None:
    """Each input a temporary view named by its workspace name; then only those files are
    readable, and the configuration is locked so no query can loosen it."""
    cur = raw.cursor()
    cur.execute("SET enable_progress_bar = false")  # it would print on praxis's terminal
    for name, path in tables.items():
        reader = "read_parquet" if name.lower().endswith(".parquet") else "read_csv"
        extra = ", delim = '\\t'" if name.lower().endswith(".tsv") else ""
        cur.execute(
            f"CREATE TEMP VIEW {_ident(name)} AS SELECT * FROM {reader}({_text(str(path))}{extra})"
        )
    allowed = ", ".join(_text(str(p)) for p in tables.values())
    cur.execute(f"SET allowed_paths = [{allowed}]")
    cur.execute("SET enable_external_access = false")
    cur.execute("SET lock_configuration = true")


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _names(description: Any) -> list[str]:
    return [str(d[0]) for d in description or ()]


def _fetch(cur: Any) -> Iterator[Any]:
    while True:
        batch = cur.fetchmany(BATCH_ROWS)
        if not batch:
            return
        yield from batch


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def _errors(engine: Any) -> tuple[type[BaseException], ...]:
    import sqlalchemy

    found: list[type[BaseException]] = [sqlalchemy.exc.SQLAlchemyError, sqlite3.Error]
    dbapi = getattr(engine.dialect, "loaded_dbapi", None)
    error = getattr(dbapi, "Error", None)
    if isinstance(error, type) and issubclass(error, BaseException):
        found.append(error)
    if engine.dialect.name == "duckdb":
        import duckdb

        found.append(duckdb.Error)
    return tuple(found)
