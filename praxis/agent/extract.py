"""Run SQL on the host against the phase's data and save the result in the workspace.

The data is the flow's ``database:`` (a SQLite file, or a SQLite, DuckDB or PostgreSQL URL:
``praxis.sources``). With no database, or a DuckDB one, the phase's CSV, TSV and Parquet
working inputs are tables too, named as the workspace names them (``SELECT * FROM
'sales.parquet'``): DuckDB reads copies of them, taken from the workspace by descriptor. The
query runs on the host, never in the sandbox, read-only, within the phase's timeout; only
the result enters the workspace, as CSV, TSV or Parquet by the name's extension.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from praxis.flows.engine.context import PhaseContext
from praxis.sources import sink
from praxis.sources.connect import QueryError, Unavailable, open_session
from praxis.sources.source import BadSource, Source, parse
from sandbox.errors import SandboxError

TABULAR = (".csv", ".tsv", ".parquet")
FILES_ONLY = "duckdb:///:memory:"
DEFAULT_SECONDS = 600.0

Fetch = Callable[[str, Path], object]  # copy workspace file ``name`` to a host path
Upload = Callable[[Path, str], object]  # place a host file at workspace ``name``


class ExtractError(Exception):
    """The query could not run (bad SQL, a refused write, a cap); the message is for the model."""


class SourceUnavailable(ExtractError):
    """The phase has no usable data source (none declared, a missing file or driver)."""


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


@dataclass(frozen=True)
class Data:
    """What one phase's extracts may read: the flow's database and the phase's tables."""

    database: str | None  # flow.yaml's ``database:`` as written
    root: Path  # the flow folder (relative database files live there)
    inputs: Sequence[str] = ()  # the phase's working inputs (workspace names)
    fetch: Fetch | None = None  # how to copy an input out of the workspace
    seconds: float = DEFAULT_SECONDS  # the phase's budget for one extract

    def source(self) -> Source:
        tables = self.tables()
        if not self.database:
            if not tables:
                raise SourceUnavailable(
                    "this flow declares no 'database' in flow.yaml, and this phase has no "
                    "CSV, TSV or Parquet working input to query"
                )
            return parse(FILES_ONLY)
        try:
            return parse(self.database)
        except BadSource as exc:
            raise SourceUnavailable(f"database: {exc}") from None

    def tables(self) -> list[str]:
        """The working inputs an extract may query as tables (a DuckDB source only)."""
        return [n for n in self.inputs if n.lower().endswith(TABULAR)]


def data_of(ctx: PhaseContext) -> Data:
    """What this phase's extracts read: the flow's database and the phase's working inputs."""
    return Data(
        database=ctx.flow.database,
        root=ctx.flow.root,
        inputs=ctx.phase.working,
        fetch=ctx.sandbox.fetch,
        seconds=ctx.timeout,
    )


def run_query(data: Data, query: str, dest: Path) -> Extracted:
    """Run ``query`` and write its result to host file ``dest`` (format by its extension)."""
    problem = sink.format_problem(dest.name)
    if problem:
        raise ExtractError(problem)
    source = data.source()
    with tempfile.TemporaryDirectory(prefix="praxis-query-") as tmp:
        scratch = Path(tmp)
        tables = _copies(data, scratch) if source.engine == "duckdb" else {}
        try:
            with open_session(
                source, data.root, seconds=data.seconds, scratch=scratch, tables=tables
            ) as session:
                columns, batches = session.rows(query)
                (scratch / "spool").mkdir()
                written = sink.write(dest, columns, batches, scratch / "spool")
        except Unavailable as exc:
            _discard(dest)
            raise SourceUnavailable(str(exc)) from None
        except (QueryError, sink.CapReached) as exc:
            _discard(dest)
            raise ExtractError(str(exc)) from None
    return Extracted(dest.name, columns, written.rows, written.sample)


def _copies(data: Data, scratch: Path) -> dict[str, Path]:
    """A host copy of each tabular input, by a name of praxis's own choosing."""
    names = data.tables()
    if names and data.fetch is None:
        raise SourceUnavailable("this phase's files cannot be copied for a query")
    folder = scratch / "inputs"
    folder.mkdir()
    copies: dict[str, Path] = {}
    for i, name in enumerate(names):
        dest = folder / f"{i}{Path(name).suffix.lower()}"
        try:
            assert data.fetch is not None
            data.fetch(name, dest)
        except (SandboxError, OSError) as exc:  # refused or missing: the model is told
            raise SourceUnavailable(f"working input {name} cannot be read: {exc}") from None
        copies[name] = dest
    return copies


def _discard(dest: Path) -> None:
    dest.unlink(missing_ok=True)


def extract_to_workspace(data: Data, query: str, upload: Upload, name: str) -> Extracted:
    """Run the query into a temporary file and ``upload(path, name)`` it into the workspace."""
    with tempfile.TemporaryDirectory(prefix="praxis-extract-") as tmp:
        dest = Path(tmp) / f"result{Path(name).suffix.lower()}"
        result = run_query(data, query, dest)
        upload(dest, name)
    return Extracted(name, result.columns, result.rows, result.sample)


def describe(data: Data) -> str:
    """What the prompt tells the model of its extracts: the engine, and the files as tables."""
    try:
        source = data.source()
    except SourceUnavailable:
        return ""
    tables = ", ".join(f"'{n}'" for n in data.tables()) if source.engine == "duckdb" else ""
    lines = [f"extract and extract_prepared run read-only SQL on {_engine(source)}."]
    if tables:
        lines.append(f"These working inputs are tables there, by their names: {tables} "
                     f"(for example SELECT * FROM {tables.split(', ')[0]}).")  # fmt: skip
    lines.append(
        "The result is written as CSV, TSV or Parquet by the extension of `name`; one extract "
        f"keeps at most {sink.MAX_ROWS:,} rows and {sink.MAX_BYTES // 2**20} MiB."
    )
    return " ".join(lines)


def _engine(source: Source) -> str:
    if source.text == FILES_ONLY:
        return "DuckDB"
    return {"sqlite": "the flow's SQLite database", "duckdb": "the flow's DuckDB database",
            "postgresql": "the flow's PostgreSQL database"}[source.engine]  # fmt: skip
