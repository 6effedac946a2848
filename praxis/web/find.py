"""Finding rows of a big table at a Gate: filters, a search, a sort, the flagged rows.

Everything runs on the table's columnar copy (``columnar``), built once per file version;
a query gives the matching data rows (0-based, in the order asked) and the page reads a
page of them from the file by their byte spans.

Filters, per column: ``eq`` (equals), ``contains`` (case-insensitive), ``empty``,
``notempty`` (a cell of spaces is empty), ``range`` (numbers from ``value`` to ``upto``,
either bound may be left out; a cell that is not a number is outside every range).
A search finds the text in any column (case-insensitive). A sort orders by one column,
as numbers when every non-empty cell of it is one, else as text; ties keep file order.
Flagged rows are the rows flow.yaml's declared checks (``unique``, ``not_null``,
``values``, ``dtype``) find failing in the file as it is now, every one of them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from praxis.flows.model import check_rules as rules

from . import columnar, csvedit

OPS = ("eq", "contains", "empty", "notempty", "range")
NUMBER = r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$"
MAX_FILTERS = 8
MAX_VALUE = 1000


class BadQuery(csvedit.BadRow):
    """Raised when a filter names a column or an operation the table does not have."""


@dataclass(frozen=True)
class Filter:
    column: int
    op: str
    value: str = ""
    upto: str = ""


@dataclass(frozen=True)
class Query:
    filters: tuple[Filter, ...] = ()
    search: str = ""
    sort: int | None = None
    desc: bool = False
    flagged: bool = False  # only the rows a declared check flags
    check: int | None = None  # only the rows failing check number ``check``

    @property
    def empty(self) -> bool:
        return self == Query()


@dataclass
class Flag:
    """One declared check failing on the file now, with every row it names."""

    check: str
    column: str
    message: str
    rows: pa.Array  # 0-based data rows

    def to_dict(self) -> dict[str, Any]:
        first = [r + 1 for r in self.rows.slice(0, 5).to_pylist()]
        return {"check": self.check, "column": self.column, "message": self.message,
                "count": len(self.rows), "first": first}  # fmt: skip


@dataclass
class Found:
    rows: pa.Array  # matching data rows, in order
    flags: list[Flag] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.rows)


def parse_query(params: dict[str, str], width: int) -> Query:
    """A query from the /rows parameters: ``f<k>`` column, ``op<k>``, ``v<k>``, ``to<k>``
    for filter k = 0..7; ``q`` search; ``sort`` column and ``desc``; ``flagged``; ``check``."""
    filters = []
    for k in range(MAX_FILTERS):
        col, op = params.get(f"f{k}", ""), params.get(f"op{k}", "")
        if not col and not op:
            continue
        if not col.isdigit() or int(col) >= width:
            raise BadQuery(f"filter {k + 1}: the table has no column {col!r}")
        if op not in OPS:
            raise BadQuery(f"filter {k + 1}: {op!r} is not one of {', '.join(OPS)}")
        value, upto = params.get(f"v{k}", "")[:MAX_VALUE], params.get(f"to{k}", "")[:MAX_VALUE]
        if op == "range":
            for bound in (value, upto):
                if bound.strip() and not _number(bound):
                    raise BadQuery(f"filter {k + 1}: {bound!r} is not a number")
        filters.append(Filter(int(col), op, value, upto))
    sort = params.get("sort", "")
    if sort and (not sort.isdigit() or int(sort) >= width):
        raise BadQuery(f"sort: the table has no column {sort!r}")
    check = params.get("check", "")
    return Query(
        filters=tuple(filters),
        search=params.get("q", "")[:MAX_VALUE],
        sort=int(sort) if sort else None,
        desc=params.get("desc", "") == "1",
        flagged=params.get("flagged", "") == "1",
        check=int(check) if check.isdigit() else None,
    )


def find(copy: columnar.Copy, query: Query, spec: dict[str, Any] | None = None) -> Found:
    """The rows of ``copy`` that ``query`` keeps, in its order; ``spec`` is flow.yaml's
    checks of the table (for the flagged rows)."""
    mask: pa.ChunkedArray | pa.Array | None = None
    for f in query.filters:
        mask = _and(mask, _filter(copy.column(f.column), f))
    if query.search:
        hits = None
        for c in range(len(copy.header)):
            hit = pc.match_substring(copy.column(c), query.search, ignore_case=True)
            hits = hit if hits is None else pc.or_(hits, hit)
        mask = _and(mask, hits)
    flags: list[Flag] = []
    if query.flagged or query.check is not None:
        flags = flagged(copy, spec or {})
        chosen = flags if query.check is None else flags[query.check : query.check + 1]
        rows = _union([f.rows for f in chosen])
        marked = pc.is_in(pa.array(range(copy.rows), pa.int64()), value_set=rows)
        mask = _and(mask, marked)
    if query.sort is not None:
        order = sort_order(copy, query.sort, query.desc)
        if mask is not None:
            order = pc.filter(order, pc.take(mask, order))
        return Found(order, flags)
    if mask is None:
        return Found(pa.array(range(copy.rows), pa.int64()), flags)
    return Found(pc.indices_nonzero(mask).cast(pa.int64()), flags)


def _and(mask: Any, more: Any) -> Any:
    return more if mask is None else pc.and_(mask, more)


def _filter(col: pa.ChunkedArray, f: Filter) -> Any:
    if f.op == "eq":
        return pc.equal(col, f.value)
    if f.op == "contains":
        return pc.match_substring(col, f.value, ignore_case=True)
    blank = pc.equal(pc.utf8_trim_whitespace(col), "")
    if f.op == "empty":
        return blank
    if f.op == "notempty":
        return pc.invert(blank)
    values = numbers(col)
    keep = pc.is_valid(values)
    if f.value.strip():
        keep = pc.and_(keep, pc.greater_equal(values, float(f.value)))
    if f.upto.strip():
        keep = pc.and_(keep, pc.less_equal(values, float(f.upto)))
    return pc.fill_null(keep, False)


def numbers(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """The column as float64: null where a cell is not a number."""
    ok = pc.match_substring_regex(col, NUMBER)
    trimmed = pc.utf8_trim_whitespace(col)
    kept = pc.if_else(ok, trimmed, pa.scalar(None, pa.string()))
    return pc.cast(pc.utf8_ltrim(kept, characters="+"), pa.float64())


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


_orders: OrderedDict[tuple[str, int, bool], pa.Array] = OrderedDict()
_orders_lock = threading.Lock()
KEEP_ORDERS = 8


def sort_order(copy: columnar.Copy, column: int, desc: bool) -> pa.Array:
    """Every data row in the column's order (cached per copy, column and direction)."""
    key = (copy.key, column, desc)
    with _orders_lock:
        if key in _orders:
            _orders.move_to_end(key)
            return _orders[key]
    col = copy.column(column)
    blank = pc.equal(pc.utf8_trim_whitespace(col), "")
    values = numbers(col)
    numeric = pc.sum(pc.and_(pc.invert(blank), pc.is_null(values))).as_py() in (0, None)
    by = values if numeric else pc.if_else(blank, pa.scalar(None, pa.string()), col)
    table = pa.table({"k": by})
    way = "descending" if desc else "ascending"
    order = pc.sort_indices(table, sort_keys=[("k", way)]).cast(pa.int64())  # nulls last
    with _orders_lock:
        _orders[key] = order
        while len(_orders) > KEEP_ORDERS:
            _orders.popitem(last=False)
    return order


def _union(parts: list[pa.Array]) -> pa.Array:
    if not parts:
        return pa.array([], pa.int64())
    return pc.unique(pa.concat_arrays([p.cast(pa.int64()) for p in parts]))


# --- flagged rows: flow.yaml's declared checks, over every row ------------------------------


def flagged(
    copy: columnar.Copy,
    spec: dict[str, Any],
    *,
    base: columnar.Copy | None = None,
    touched: frozenset[int] = frozenset(),
) -> list[Flag]:
    """Each declared check failing on the copy, with every row it names: the rules and words
    of ``check_rules``, as the engine's checks evaluate them (``unique`` names each repeat
    after the first). ``base``: the copy ``copy`` was made from by changing cells of the
    columns ``touched`` only; a ``unique`` column outside them finds what it found there."""
    index = {name: i for i, name in enumerate(copy.header)}
    flags: list[Flag] = []

    for column in spec.get("unique", []):
        if column in index:
            i = index[column]
            same = base is not None and i not in touched
            flags += _repeats(base if same and base is not None else copy, i, column)
    for rule in rules.cell_rules(spec):
        if rule.column in index:
            bad = _failing_cells(copy.column(index[rule.column]), rule)
            rows = pc.indices_nonzero(pc.fill_null(bad, False)).cast(pa.int64())
            if len(rows):
                message = rules.rows_message(len(rows), rule.what)
                flags.append(Flag(rule.check, rule.column, message, rows))
    return flags


def _failing_cells(col: pa.ChunkedArray, rule: rules.CellRule) -> Any:
    """The cells of ``col`` that fail ``rule``: its own test on each distinct value, or the
    Arrow kernel computing that test on the whole column (``check_rules`` says which)."""
    if rule.check == "not_null":
        return pc.equal(pc.utf8_trim_whitespace(col), "")
    if rule.check == "values":
        return pc.invert(pc.is_in(col, value_set=pa.array(sorted(rule.allowed), pa.string())))
    wrong = [v for v in pc.unique(col).to_pylist() if v is not None and rule.failing(v)]
    return pc.is_in(col, value_set=pa.array(wrong, pa.string()))


def _repeats(copy: columnar.Copy, i: int, column: str) -> list[Flag]:
    """Every row whose value an earlier row holds (hash-encoded, then the first row of each
    code kept): the rows ``checks`` names for ``unique``. Kept by the copy's version
    (``columnar.derived``): a column a save did not change is not hashed again."""
    kept = columnar.derived(copy.key, i, "repeats") if copy.kept else None
    if kept is None:
        kept = _repeated_rows(copy, i)
        if copy.kept:
            columnar.derive(copy.key, i, "repeats", kept)
    if not len(kept):
        return []
    return [Flag("unique", column, rules.rows_message(len(kept), rules.REPEATED), kept)]


def _repeated_rows(copy: columnar.Copy, i: int) -> pa.Array:
    encoded = copy.column(i).combine_chunks().dictionary_encode()
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    if len(codes) < 2:
        return pa.array([], pa.int64())
    # codes are handed out in order of first appearance: a row holds a new value when its
    # code is above every code before it (checked; else found by sorting)
    seen = np.maximum.accumulate(codes)
    repeat = np.ones(len(codes), dtype=bool)
    repeat[0] = False
    repeat[1:] = codes[1:] <= seen[:-1]
    if not np.array_equal(codes[~repeat], np.arange(len(encoded.dictionary))):
        _, first = np.unique(codes, return_index=True)
        repeat = np.ones(len(codes), dtype=bool)
        repeat[first] = False
    return pa.array(np.flatnonzero(repeat).astype(np.int64))
