"""The ``query`` phase kind (``praxis.flows.definition.kinds.PhaseKind``), declared as an entry
point of ``praxis.phase_kinds`` in pyproject.toml: a prepared ``.sql`` file of the flow run
against a database, its result the phase's one declared table output (DESIGN.md §18).

```yaml
  - id: orders
    kind: query
    database: warehouse              # a profile connection, or a database file of the flow
    query: queries/orders.sql        # :start binds the run parameter start, never formatted in
    outputs: [orders.parquet]        # .csv, .tsv or .parquet (types kept)
    reuse: {within: 1h}              # default never: a database changes
```

No model: the query runs on the host in a worker process, read-only and bounded as an
agent's extracts are (``praxis.sources``); ``praxis.phases.query`` is its executor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from praxis.flows.definition.yaml_values import describe
from praxis.sources import source

from .kinds import Executed, entry_file

if TYPE_CHECKING:
    from praxis.flows.definition.kinds import Reader


@dataclass(frozen=True)
class QuerySpec:
    """A query phase's own keys: the .sql file and the database (None: the flow's)."""

    query: str  # relative to the flow folder
    database: str | None = None

    def files(self) -> list[str]:
        return [self.query]


@dataclass(frozen=True)
class QueryKind(Executed):
    """A phase that runs one prepared query of the flow (``query:``) into its output."""

    reusable: bool = True  # with reuse: {within: ...}; by default never (``reuse_default``)
    reads_reference: bool = False
    reuse_default: str = "never"  # a database changes under the same query

    def fit(self, raw: dict[str, Any], loc: str, reader: Reader) -> QuerySpec | None:
        self.screen(raw, loc, reader)
        if "query" not in raw:
            reader.error(loc, "missing required key 'query' (the .sql file a query phase runs)")
            return None
        query = entry_file(reader, raw["query"], f"{loc}.query", ".sql", "query")
        database = None
        if "database" in raw:
            database = _database(reader, raw["database"], f"{loc}.database")
        return QuerySpec(query, database) if query is not None else None


def _database(reader: Reader, value: Any, loc: str) -> str | None:
    if not isinstance(value, str):
        reader.error(loc, f"expected a connection name or a database file, got {describe(value)}")
        return None
    try:
        named = source.parse(value)
    except source.BadSource as exc:
        reader.error(loc, str(exc))
        return None
    if named.path not in (None, source.MEMORY):
        reader.flow_file(named.path or "", loc, streamed=True)
    return value


query = QueryKind("praxis.phases.query", "query")
