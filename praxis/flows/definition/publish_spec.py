"""flow.yaml's ``publish:``: which approved outputs are written to which tables.

```yaml
publish:
  - output: summary.csv
    to: {connection: sales_write, table: analytics.weekly_summary,
         mode: upsert, key: [region, week]}
```

``connection`` names a connection of the person's profile (the profile marks it
``write: true``: checked when publishing, ``connections.writer``); ``table`` is a table name,
optionally schema-qualified, never SQL; ``mode`` is ``replace`` (the table's rows become the
output's) or ``upsert`` (rows matched by ``key`` replaced, others added). The output is a
CSV, TSV or Parquet output of a phase.
"""

from __future__ import annotations

import re
from typing import Any

from ..model.flow import Phase, Publish
from .profile import ENTRY
from .yaml_values import ValueReader, describe, show

KEYS = ("output", "to")
TO_KEYS = ("connection", "table", "mode", "key")
MODES = ("replace", "upsert")
IDENT = r"[A-Za-z_][A-Za-z0-9_]{0,62}"
TABLE = re.compile(rf"{IDENT}(\.{IDENT})?")
COLUMN = re.compile(IDENT)
TABULAR = (".csv", ".tsv", ".parquet")


def read(reader: ValueReader, value: Any, phases: tuple[Phase, ...]) -> tuple[Publish, ...]:
    """The publish entries, each problem reported at its location."""
    if not isinstance(value, list):
        reader.error("publish", f"expected a list of {{output, to}} entries, got {describe(value)}")
        return ()
    outputs = {n for p in phases for n in p.outputs}
    found: list[Publish] = []
    for i, item in enumerate(value):
        entry = _entry(reader, item, f"publish[{i}]", outputs)
        if entry is not None:
            found.append(entry)
    targets = [(p.connection, p.table) for p in found]
    for i, t in enumerate(targets):
        if t in targets[:i]:
            reader.error(f"publish[{i}]", f"table {t[1]} of {t[0]} is published to twice")
    return tuple(found)


def _entry(reader: ValueReader, item: Any, loc: str, outputs: set[str]) -> Publish | None:
    raw = reader.mapping(item, loc, KEYS)
    if raw is None:
        return None
    for key in KEYS:
        if key not in raw:
            reader.error(loc, f"missing required key {key!r}")
    output = reader.string(raw.get("output"), f"{loc}.output") if "output" in raw else None
    if output is not None and output not in outputs:
        reader.error(f"{loc}.output", f"{show(output)} is not an output of a phase")
        output = None
    elif output is not None and not output.lower().endswith(TABULAR):
        reader.error(f"{loc}.output", f"{show(output)} is not a table (.csv, .tsv or .parquet)")
        output = None
    to = reader.mapping(raw.get("to"), f"{loc}.to", TO_KEYS) if "to" in raw else None
    if to is None or output is None:
        return None
    at = f"{loc}.to"
    conn = _matching(reader, to.get("connection"), f"{at}.connection", ENTRY,
                     "a connection of your profile, by name")  # fmt: skip
    table = _matching(reader, to.get("table"), f"{at}.table", TABLE, "a table: [schema.]name")
    mode = reader.choice(to.get("mode", "replace"), f"{at}.mode", MODES, "mode")
    columns = tuple(_columns(reader, to.get("key", []), f"{at}.key"))
    if mode == "upsert" and not columns:
        reader.error(at, "mode: upsert needs key: [COLUMN, ...] (the columns a row is found by)")
        return None
    if mode == "replace" and columns:
        reader.warn(f"{at}.key", "only upsert reads key: (replace writes every row)")
    if conn is None or table is None or mode is None:
        return None
    return Publish(output, conn, table, mode, columns)


def _matching(
    reader: ValueReader, value: Any, loc: str, pattern: re.Pattern[str], what: str
) -> str | None:
    if value is None:
        reader.error(loc, f"missing: {what}")
        return None
    text = reader.string(value, loc)
    if text is None:
        return None
    if not pattern.fullmatch(text):
        reader.error(loc, f"{show(text)} is not {what}")
        return None
    return text


def _columns(reader: ValueReader, value: Any, loc: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        reader.error(loc, f"expected a list of column names, got {describe(value)}")
        return []
    bad = [v for v in value if not COLUMN.fullmatch(v)]
    if bad:
        reader.error(loc, f"{show(bad[0])} is not a column name ({IDENT})")
        return []
    if len(set(value)) != len(value):
        reader.error(loc, "a column is listed twice")
        return []
    return list(value)
