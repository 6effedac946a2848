"""The rules of flow.yaml's declarative table checks, once: what fails each check and what
its failure says. Pure (no file is read here): the engine's streamed pass over a table
(``engine.checks``) and the reviewer's page over a table's columnar copy (``web.find``,
``web.cellchecks``) both evaluate these rules, so a check marks the same cells and says the
same words wherever it runs.

- a cell rule (``not_null``, ``values``, ``dtype``) is a test of one cell's text
  (``CellRule.failing``): the engine calls it on each row, the page on each distinct value
  of a ``dtype`` column, and with the Arrow kernels that compute the same test on a whole
  column for ``not_null`` (a blank cell: what ``str.strip`` removes, Arrow's
  ``utf8_trim_whitespace`` too, for every code point) and ``values`` (``allowed``): the tests
  of ``tests/web/test_check_rules.py`` hold them equal;
- ``unique`` and ``key`` name each row whose value (or key) an earlier row holds;
- ``columns``, a named column the table lacks, ``min_rows`` and ``max_rows`` are said by
  ``missing_columns``, ``no_such_column`` and ``row_count``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from functools import partial
from typing import Any

MAX_SHOWN_ROWS = 5  # rows a failure names
BOOLS = {"true", "false", "0", "1", "yes", "no", "t", "f", "y", "n"}
ORDER = ("unique", "not_null", "values", "dtype", "key")  # the order failures are listed in
REPEATED = "repeated values"  # what a unique check finds
BAD_KEY = "a repeated or empty key"  # what a key check finds


@dataclass(frozen=True)
class Failure:
    """One failed check: on which table, which check, which column, which data rows."""

    output: str
    check: str
    message: str
    column: str | None = None
    rows: tuple[int, ...] = ()  # 1-based data rows (the header is row 0), at most 5
    count: int = 0  # offending rows in all
    lines: tuple[int, ...] = ()  # the line where each of ``rows`` starts, as an editor counts

    def _row(self, i: int, row: int) -> str:
        return f"{row} (line {self.lines[i]})" if i < len(self.lines) else str(row)

    def __str__(self) -> str:
        where = f" on column {self.column!r}" if self.column else ""
        rows = ""
        if self.rows:
            more = f" (of {self.count})" if self.count > len(self.rows) else ""
            shown = ", ".join(self._row(i, r) for i, r in enumerate(self.rows))
            rows = f"; data row{'s' if len(self.rows) > 1 else ''} {shown}{more}"
        return f"{self.output}: check {self.check} failed{where}: {self.message}{rows}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "check": self.check,
            "column": self.column,
            "rows": list(self.rows),
            "lines": list(self.lines),
            "count": self.count,
            "message": self.message,
        }


def rows_message(count: int, what: str) -> str:
    """What a check failing on ``count`` rows says: ``3 row(s) with empty cells``."""
    return f"{count} row(s) with {what}"


def rows_failure(
    output: str, check: str, column: str, what: str, rows: list[int], count: int, lines: Any = ()
) -> Failure:
    """The failure of a check on ``count`` rows, the first ``MAX_SHOWN_ROWS`` of ``rows``
    (1-based) named, with the line each starts at when known."""
    return Failure(
        output, check, rows_message(count, what), column=column,
        rows=tuple(rows[:MAX_SHOWN_ROWS]), count=count, lines=tuple(lines)[:MAX_SHOWN_ROWS],
    )  # fmt: skip


@dataclass(frozen=True)
class CellRule:
    """A check of single cells on one column: ``failing(text)`` says a cell fails it."""

    check: str  # not_null | values | dtype
    column: str
    what: str  # what the failing cells are: "empty cells"
    failing: Callable[[str], bool]
    allowed: frozenset[str] = frozenset()  # of ``values``: the cells that pass


def cell_rules(spec: dict[str, Any]) -> list[CellRule]:
    """The cell rules of a table's ``checks:`` entry, in the order they are declared by kind
    (``not_null``, ``values``, ``dtype``)."""
    rules = [CellRule("not_null", c, "empty cells", _empty) for c in spec.get("not_null", [])]
    for column, allowed in spec.get("values", {}).items():
        ok = frozenset(str(v) for v in allowed)
        what = f"values not in {allowed}"
        rules.append(CellRule("values", column, what, partial(_not_in, ok), ok))
    for column, kind in spec.get("dtype", {}).items():
        what = f"values that are not {kind}"
        rules.append(CellRule("dtype", column, what, partial(_not_of, kind)))
    return rules


def _empty(value: str) -> bool:
    return not value.strip()


def _not_in(allowed: frozenset[str], value: str) -> bool:
    return value not in allowed


def _not_of(kind: str, value: str) -> bool:
    """An empty cell is left to ``not_null``."""
    return bool(value.strip()) and not is_kind(kind, value.strip())


def is_kind(kind: str, value: str) -> bool:
    """Whether ``value`` reads as ``kind`` (``integer``, ``number``, ``bool``, ``date``,
    ``string``)."""
    try:
        if kind == "integer":
            int(value)
        elif kind == "number":
            float(value)
        elif kind == "bool":
            return value.lower() in BOOLS
        elif kind == "date":
            date.fromisoformat(value[:10])
    except ValueError:
        return False
    return True


def missing_columns(output: str, spec: dict[str, Any], header: list[str]) -> list[Failure]:
    """``columns``: the declared columns the header lacks."""
    missing = [c for c in spec.get("columns", []) if c not in header]
    if not missing:
        return []
    return [Failure(output, "columns", f"missing column(s) {missing}; has {header}")]


def no_such_column(output: str, check: str, column: str) -> Failure:
    """A check names a column the table does not have."""
    return Failure(output, check, "no such column", column=column)


def row_count(output: str, spec: dict[str, Any], rows: int) -> list[Failure]:
    """``min_rows`` and ``max_rows`` on a table of ``rows`` data rows."""
    out = []
    if "min_rows" in spec and rows < spec["min_rows"]:
        out.append(Failure(output, "min_rows", f"{rows} rows, at least {spec['min_rows']}"))
    if "max_rows" in spec and rows > spec["max_rows"]:
        out.append(Failure(output, "max_rows", f"{rows} rows, at most {spec['max_rows']}"))
    return out
