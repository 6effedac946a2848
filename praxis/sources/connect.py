"""One read-only, time-bounded connection to a data source, through its own driver.

It runs in the extract's worker process (``worker``), never in the runner. Each engine is held
to read-only by the database itself, never by looking at the SQL:

- SQLite: the file opened ``mode=ro``, ``PRAGMA query_only``, no ATTACH, no value longer
  than the extract's byte cap;
- DuckDB: the file opened ``read_only=True``; the phase's tabular inputs are temporary views
  on copies, the only files the connection may read (``allowed_paths``, external access off,
  the configuration locked); bounded by ``memory_limit``, one thread and a spill cap;
- PostgreSQL: libpq receives the profile's keywords only; every transaction read-only
  (``default_transaction_read_only`` and ``SET TRANSACTION READ ONLY``), ``statement_timeout``
  from the phase's budget; a role that is a superuser or may read or write server files or
  run programs is refused unless the profile says ``allow_superuser: true``.

A timer cancels the query at the budget on every engine (``cancel_safe`` / ``interrupt``), so
a slow fetch cannot outlast it either. Rows are streamed in batches (PostgreSQL: psycopg's
``Cursor.stream``), never held whole. Error text is shown with secrets masked.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from itertools import chain, islice
from pathlib import Path
from typing import Any

from .source import Target, redact

BATCH_ROWS = 1_000
BATCH_BYTES = 8 << 20  # a batch of wide rows holds fewer of them
DUCKDB_MEMORY = "256MB"
DUCKDB_SPILL = "1GB"
CONNECT_SECONDS = 30
SERVER_RIGHTS = ("pg_read_server_files", "pg_write_server_files", "pg_execute_server_program")


class QueryError(Exception):
    """The query could not run (bad SQL, a refused write, the timeout); shown to the model."""


class Unavailable(QueryError):
    """The source cannot be opened: a bad file, the server refused, a role with too much power."""


class Session:
    """An open connection: ``rows(query)`` streams one statement's result, once."""

    def __init__(self, target: Target, raw: Any, seconds: float) -> None:
        self.engine = target.engine
        self.raw = raw
        self.seconds = seconds
        self.secrets = target.secrets
        self.timed_out = False
        self.errors: tuple[type[BaseException], ...] = errors_of(target.engine)
        self._timer: threading.Timer | None = None
        self._open_stream = False
        self._row_bytes = 1  # the widest row of the last fetch, bytes (about)

    def start_timer(self) -> None:
        self._timer = threading.Timer(self.seconds, self.expire)
        self._timer.daemon = True
        self._timer.start()

    def rows(
        self, query: str, params: Mapping[str, Any] | None = None
    ) -> tuple[list[str], Iterator[list[tuple[Any, ...]]]]:
        """The result's column names and its rows in batches; QueryError when it fails.
        ``params``: the values ``query``'s placeholders bind (``params.bind``), never text."""
        if self._timer is None:
            self.start_timer()
        try:
            columns, first, rest = self._start(query, dict(params) if params else None)
        except self.errors as exc:
            raise self.error(exc) from None
        if not columns:
            raise QueryError("the statement returned no result set; extract needs a SELECT")
        self._open_stream = True
        return columns, self._batches(first, rest)

    def _start(
        self, query: str, params: dict[str, Any] | None
    ) -> tuple[list[str], list[tuple[Any, ...]], Iterator[Any]]:
        # DuckDB's cursor() is another connection, which would not see the temporary views
        cur = self.raw if self.engine == "duckdb" else self.raw.cursor()
        if self.engine == "postgresql":
            if self.raw.info.transaction_status != 0:  # not idle: begin afresh
                self.raw.rollback()
            cur.execute("SET TRANSACTION READ ONLY")
            cur.execute(f"SET LOCAL statement_timeout = {_ms(self.seconds)}")
            stream = iter(cur.stream(query, params, size=BATCH_ROWS))  # row by row from libpq
            first = list(islice(stream, 1))
            return _names(cur.description), first, stream
        if params is None:
            cur.execute(query)
        else:
            cur.execute(query, params)
        names = _names(cur.description)
        first = list(cur.fetchmany(1)) if names else []
        self._row_bytes = _size(first[0]) if first else 1
        return names, first, self._fetch(cur)

    def _fetch(self, cur: Any) -> Iterator[Any]:
        """The rest of the rows, fetched a few at a time: as many as make ``BATCH_BYTES`` at
        the width of the widest row seen last (the driver builds a whole fetch at once)."""
        while True:
            count = max(1, min(BATCH_ROWS, BATCH_BYTES // max(1, self._row_bytes)))
            batch = cur.fetchmany(count)
            if not batch:
                return
            self._row_bytes = max(_size(r) for r in batch)
            yield from batch

    def _batches(
        self, first: list[tuple[Any, ...]], rest: Iterator[Any]
    ) -> Iterator[list[tuple[Any, ...]]]:
        """Rows in batches of at most ``BATCH_ROWS`` rows and about ``BATCH_BYTES`` bytes."""
        try:
            batch: list[tuple[Any, ...]] = []
            size = 0
            for row in chain(first, rest):
                batch.append(tuple(row))
                size += _size(row)
                if len(batch) >= BATCH_ROWS or size >= BATCH_BYTES:
                    yield batch
                    batch, size = [], 0
            if batch:
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
        """The database's own words for ``exc``, secrets masked."""
        text = str(exc).strip() or type(exc).__name__
        return redact(text[:2_000], self.secrets)

    def expire(self) -> None:
        """The budget ran out (the timer's thread): stop the running statement."""
        self.timed_out = True
        self.interrupt()

    def interrupt(self) -> None:
        try:
            if self.engine == "postgresql":
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
        try:
            self.raw.close()
        except Exception:  # closing after a cancel may report it again
            pass

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_session(
    target: Target,
    database: Path | None,
    *,
    seconds: float,
    max_value: int,
    scratch: Path,
    tables: Mapping[str, Path] | None = None,
) -> Session:
    """Connect to ``target`` (a file engine: host file ``database``) for at most ``seconds``.

    ``tables`` (DuckDB only): view name -> host file, each a copy made for this extract.
    ``scratch`` is a private host folder for DuckDB's spill.
    """
    errors = errors_of(target.engine)
    try:
        raw = _connect(target, database, seconds, max_value, scratch)
    except errors as exc:
        text = redact(str(exc).strip(), target.secrets)[:1_000]
        raise Unavailable(f"database {_named(target)} cannot be opened: {text}") from None
    session = Session(target, raw, seconds)
    try:
        if target.engine == "postgresql" and not target.allow_superuser:
            refuse_power(session, target)
        if target.engine == "duckdb":
            _views(raw, tables or {})
    except errors as exc:
        session.close()
        why = session.clean(exc)
        raise Unavailable(f"database {_named(target)} cannot be prepared: {why}") from None
    except Unavailable:
        session.close()
        raise
    return session


def _named(target: Target) -> str:
    if target.connection:
        return f"{target.connection!r} (your profile's connection)"
    return repr(target.flow_file or target.file or "")


def _connect(
    target: Target, database: Path | None, seconds: float, max_value: int, scratch: Path
) -> Any:
    if target.engine == "sqlite":
        assert database is not None
        conn = sqlite3.connect(database.as_uri() + "?mode=ro", uri=True, check_same_thread=False)
        conn.execute("PRAGMA query_only = ON")
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(1_000, min(max_value, 2**31 - 1)))
        return conn
    if target.engine == "duckdb":
        import duckdb

        assert database is not None
        spill = scratch / "spill"
        spill.mkdir(exist_ok=True)
        config: dict[str, str | bool | int | float | list[str]] = {
            "threads": 1,
            "memory_limit": DUCKDB_MEMORY,
            "temp_directory": str(spill),
            "max_temp_directory_size": DUCKDB_SPILL,
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
        }
        return duckdb.connect(str(database), read_only=True, config=config)
    import psycopg
    from psycopg.conninfo import make_conninfo

    params = dict(target.params)
    params.update(
        options=f"-c default_transaction_read_only=on -c statement_timeout={_ms(seconds)}",
        connect_timeout=str(max(1, min(CONNECT_SECONDS, math.ceil(seconds)))),
        application_name="praxis extract",
    )
    return psycopg.connect(make_conninfo("", **params))


def refuse_power(session: Session, target: Target) -> None:
    """Unavailable when the login role is, or may become, a superuser or a holder of the
    server's file and program rights (a READ ONLY transaction does not stop those)."""
    cur = session.raw.cursor()
    cur.execute(
        "SELECT session_user, rolname, rolsuper FROM pg_roles "
        "WHERE (rolsuper OR rolname = ANY(%s)) AND pg_has_role(session_user, oid, 'MEMBER') "
        "ORDER BY rolsuper DESC, rolname",
        (list(SERVER_RIGHTS),),
    )
    found = cur.fetchall()
    session.raw.rollback()
    if not found:
        return
    user = found[0][0]
    rights = "a superuser" if found[0][2] else "a member of " + ", ".join(r[1] for r in found)
    raise Unavailable(
        f"database {target.connection!r}: role {user!r} is {rights}, which may read server "
        "files and run programs even in a read-only transaction; connect as a role without "
        f"them, or write `allow_superuser: true` under connections.{target.connection} in "
        f"{target.where}"
    )


def _views(raw: Any, tables: Mapping[str, Path]) -> None:
    """Each input a temporary view named by its workspace name; then only those files are
    readable, and the configuration is locked so no query can loosen it."""
    cur = raw
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


def _size(row: Any) -> int:
    """About how many bytes ``row``'s values hold (text and bytes by length)."""
    return sum(len(v) if isinstance(v, str | bytes | bytearray) else 16 for v in row)


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def errors_of(engine: str) -> tuple[type[BaseException], ...]:
    if engine == "sqlite":
        return (sqlite3.Error,)
    if engine == "duckdb":
        import duckdb

        return (duckdb.Error,)
    import psycopg

    return (psycopg.Error,)
