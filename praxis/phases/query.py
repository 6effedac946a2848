"""``kind: query``: the phase's prepared ``.sql`` file run against its database into its one
declared table output (DESIGN.md §18).

The database is the phase's ``database:`` or else the flow's: a connection of the person's
profile, or a database file inside the flow folder (copied privately, by descriptor, no link
followed). The run's parameters are bound as SQL parameters (``:start``), never formatted
into the text. The query runs on the host in a worker process (``praxis.sources.running``),
read-only by the database itself, within the phase's timeout and an extract's row, byte and
memory caps; no model. With a DuckDB database the phase's CSV, TSV and Parquet working
inputs are tables too, by their workspace names. The result is staged as the output; the
record shows the query, the values bound and the first rows.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from praxis.flows.definition import connections, flow_files
from praxis.flows.engine.context import PhaseContext, PhaseError
from praxis.flows.model.events import CodeRan
from praxis.sources import running
from praxis.sources.params import names
from praxis.sources.source import missing_driver
from sandbox.errors import SandboxError

from .query_kind import QuerySpec

TABULAR = (".csv", ".tsv", ".parquet")


def run(ctx: PhaseContext) -> None:
    spec = ctx.phase.spec_as(QuerySpec)
    where = f"{ctx.phase.id}: query {spec.query}"
    output = _output(ctx)
    try:
        text = flow_files.text(ctx.flow.root, spec.query)  # by descriptor, no link
    except flow_files.PathRefused as exc:
        raise PhaseError(f"{where} {exc}; check flow.yaml") from exc
    database = spec.database or ctx.flow.database
    if not database:
        raise PhaseError(
            f"{ctx.phase.id}: a query phase needs a database: write `database: NAME` (a "
            "connection of your profile) or `database: data/FILE.duckdb` in flow.yaml"
        )
    try:
        target = connections.target_for(connections.source_of(database))
    except connections.Unusable as exc:
        raise PhaseError(f"{ctx.phase.id}: {exc}") from None
    missing = missing_driver(target.engine)
    if missing:
        raise PhaseError(f"{ctx.phase.id}: database {database}: {missing}")
    bound = {n: ctx.params[n] for n in names(text) if n in ctx.params}
    ctx.on_message(f"querying {database} ({spec.query})")
    ctx.record.markdown(f"```sql\n{text}\n```", source_file=spec.query)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="praxis-query-") as tmp:
        dest = Path(tmp) / f"result{Path(output).suffix.lower()}"
        try:
            got = running.run(
                target, text, dest, root=ctx.flow.root, seconds=ctx.timeout,
                params=ctx.params, tables=lambda folder: _tables(ctx, folder),
            )  # fmt: skip
        except running.RunFailed as exc:
            seconds = time.monotonic() - started
            ctx.emit(CodeRan(phase=ctx.phase.id, label="query", status="error", seconds=seconds))
            raise PhaseError(f"{where}: {exc}") from None
        staged = ctx.staging / output
        staged.parent.mkdir(parents=True, exist_ok=True)
        dest.replace(staged)
    seconds = time.monotonic() - started
    ctx.emit(CodeRan(phase=ctx.phase.id, label="query", status="ok", seconds=seconds))
    shown = json.dumps(bound, default=str)
    ctx.record.markdown(
        f"**query** `{spec.query}` on `{database}`, parameters bound: `{shown}`\n\n"
        f"wrote `{output}`: {got.rows:,} rows, columns {', '.join(got.columns)}"
        + _table(got.columns, got.sample),
        query=spec.query,
        rows=got.rows,
    )


def _table(columns: list[str], sample: list[tuple[object, ...]]) -> str:
    if not sample:
        return ""
    rows = "\n".join("| " + " | ".join(map(str, r)) + " |" for r in sample)
    return f"\n\n| {' | '.join(columns)} |\n|{'---|' * len(columns)}\n{rows}"


def _output(ctx: PhaseContext) -> str:
    outputs = ctx.phase.outputs
    if len(outputs) != 1 or not outputs[0].lower().endswith(TABULAR):
        raise PhaseError(
            f"{ctx.phase.id}: a query phase declares one table output (outputs: [NAME.csv] or "
            f"[NAME.parquet]), not {list(outputs)}"
        )
    return outputs[0]


def _tables(ctx: PhaseContext, folder: Path) -> dict[str, Path]:
    """A host copy of each tabular working input, for a DuckDB query to read by its name."""
    copies: dict[str, Path] = {}
    names_ = [n for n in ctx.phase.working if n.lower().endswith(TABULAR)]
    for i, name in enumerate(names_):
        dest = folder / f"{i}{Path(name).suffix.lower()}"
        try:
            ctx.sandbox.fetch(name, dest)
        except (SandboxError, OSError) as exc:
            raise running.RunFailed(f"working input {name} cannot be read: {exc}") from None
        copies[name] = dest
    return copies
