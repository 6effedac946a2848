"""The Gate's declared checks of an edited table, from those of the version before it.

An edit by hand or on the page changes a few cells of a big table; the rows before and after
them are bytes both versions share (``shared_bytes``). When the edit keeps every row where it
was (as many rows, each starting on the same line), the checks of the new version are the
old version's with the changed rows taken out and put back as they are now: a cell rule
(``not_null``, ``values``, ``dtype``) is tested on those rows only; ``unique`` and ``key``,
``columns``, ``same_columns``, ``min_rows`` and ``max_rows`` say what they said, as long as
the edit left the columns of ``unique`` and ``key`` alone.

``updated`` gives exactly what a whole pass (``checks.evaluate``) would, or ``None`` when it
cannot: rows added, removed or moved to other lines, a ``unique`` or ``key`` column changed,
a version that did not parse, a failure whose first rows are not known without the rows
nobody kept. The caller then makes the whole pass.
"""

from __future__ import annotations

from typing import Any

from ..model import check_rules as rules
from ..model.check_rules import MAX_SHOWN_ROWS, Failure
from ..store import csvread
from ..store.csvread import Unreadable
from .shared_bytes import shared

ROW_COUNT = ("min_rows", "max_rows")


def updated(
    name: str, spec: dict[str, Any], old: bytes, new: bytes, failures: list[Failure]
) -> list[Failure] | None:
    """The failures of ``spec`` on table ``new``, given ``failures``, those on ``old``."""
    if any(f.check == "parse" for f in failures):
        return None
    if old == new:
        return list(failures)
    head, tail, offset = shared(old, new)
    first = old.find(b"\n") + 1
    if head < first or first <= 0 or _blank(old, head):
        return None  # no shared header, or blank lines before the edit (rows not counted)
    a_bytes, b_bytes = old[head : len(old) - tail], new[head : len(new) - tail]
    if a_bytes.count(b"\n") != b_bytes.count(b"\n"):
        return None  # the rows after the edit start on other lines
    # the lines before the edit: the header's and a line a row (no blank one, no quote)
    quoted = old.find(b'"', first, head) >= 0
    before = old.count(b"\n", 0, head) if quoted else offset + 1
    try:
        changed = _changed(old[:first], a_bytes, b_bytes, name, offset, before)
    except Unreadable:
        return None
    if changed is None:
        return None
    header, rows, a_rows, b_rows, lines = changed
    index = {c: i for i, c in enumerate(header)}
    fixed = [index[c] for c in [*spec.get("unique", []), *spec.get("key", [])] if c in index]
    if any(ra[i] != rb[i] for ra, rb in zip(a_rows, b_rows, strict=True) for i in fixed):
        return None  # a repeat is found over every row: the whole pass
    counted = {(f.check, f.column): f for f in failures if f.count}
    rules_of = [(r.check, r.column) for r in rules.cell_rules(spec)]
    if len(counted) < sum(1 for f in failures if f.count) or len(set(rules_of)) < len(rules_of):
        return None  # a check declared twice: the whole pass lists each
    tests: list[Failure] = []
    for rule in rules.cell_rules(spec):
        if rule.column not in index:
            continue
        i = index[rule.column]
        bad_a = [r for r, row in zip(rows, a_rows, strict=True) if rule.failing(row[i])]
        bad_b = [r for r, row in zip(rows, b_rows, strict=True) if rule.failing(row[i])]
        was = counted.pop((rule.check, rule.column), None)
        try:
            found = _moved(name, rule, was, bad_a, bad_b, lines)
        except _Unknown:
            return None
        if found is not None:
            tests.append(found)
    for column in [*spec.get("unique", [])] + (["+".join(spec["key"])] if "key" in spec else []):
        check = "unique" if column in spec.get("unique", []) else "key"
        kept = counted.pop((check, column), None)
        if kept is not None:
            tests.append(kept)
    if counted:
        return None  # a failure none of the checks accounts for: not this spec's
    tests.sort(key=lambda f: rules.ORDER.index(f.check))
    pre = [f for f in failures if not f.count and f.check not in ROW_COUNT]
    post = [f for f in failures if f.check in ROW_COUNT]
    return pre + tests + post


class _Unknown(Exception):
    """The first rows a failure names are not known without a whole pass."""


def _blank(data: bytes, end: int) -> bool:
    """Whether ``data`` holds a blank line before ``end`` (one ``csvread`` does not count)."""
    return data.find(b"\n\n", 0, end) >= 0 or data.find(b"\n\r\n", 0, end) >= 0


Changed = tuple[list[str], list[int], list[list[str]], list[list[str]], dict[int, int]]


def _changed(
    head: bytes, a: bytes, b: bytes, name: str, offset: int, before: int
) -> Changed | None:
    """(header, the rows that differ, as they were, as they are, the line each starts on) of
    the regions ``a`` and ``b`` that two versions do not share (``head``: the header line;
    ``offset``: the data rows before them, on ``before`` lines). Without quotes a line is a
    row: only the lines that differ are parsed (an edit at row 10 and one at row 900,000
    compare the lines between, without parsing them). None when the rows do not stay where
    they were; Unreadable when a region does not parse."""
    if a.find(b'"') < 0 and b.find(b'"') < 0:
        a_lines, b_lines = a.split(b"\n"), b.split(b"\n")
        if any(line in (b"", b"\r") for line in (*a_lines[:-1], *b_lines[:-1])):
            return None  # a blank line is no row
        at = [j for j, (x, y) in enumerate(zip(a_lines, b_lines, strict=True)) if x != y]
        header, a_rows, a_at = _region(head + b"\n".join(a_lines[j] for j in at), name)
        _, b_rows, b_at = _region(head + b"\n".join(b_lines[j] for j in at), name)
        if len(a_rows) != len(at) or len(b_rows) != len(at):
            return None
        rows = [offset + j + 1 for j in at]
        return (
            header,
            rows,
            a_rows,
            b_rows,
            {r: before + j + 1 for r, j in zip(rows, at, strict=True)},
        )
    header, a_rows, a_at = _region(head + a, name)
    _, b_rows, b_at = _region(head + b, name)
    if len(a_rows) != len(b_rows) or a_at != b_at:
        return None
    rows = list(range(offset + 1, offset + len(a_rows) + 1))
    return (
        header,
        rows,
        a_rows,
        b_rows,
        {r: ln + before - 1 for r, ln in zip(rows, b_at, strict=True)},
    )


def _region(data: bytes, name: str) -> tuple[list[str], list[list[str]], list[int]]:
    """The header, the data rows and the line each starts on of ``data`` (the header and
    the rows an edit changed); Unreadable when it does not parse or a row is not as wide."""
    with csvread.opened(data) as fh:
        found = list(csvread.numbered(fh, name))
    if not found:
        raise Unreadable(f"{name} is empty")
    header = found[0][1]
    if any(len(row) != len(header) for _, row in found[1:]):
        raise Unreadable(f"{name}: a row is not as wide as the header")
    return header, [row for _, row in found[1:]], [line for line, _ in found[1:]]


def _moved(
    name: str,
    rule: rules.CellRule,
    was: Failure | None,
    bad_a: list[int],
    bad_b: list[int],
    lines: dict[int, int],
) -> Failure | None:
    """The failure of cell rule ``rule`` once the changed rows (``lines``: the line each
    starts on) failing it went from ``bad_a`` to ``bad_b``: None when it passes; _Unknown
    when its first rows are not known."""
    count = (was.count if was else 0) - len(bad_a) + len(bad_b)
    shown_before = list(was.rows) if was else []
    if count < 0 or (was and len(was.lines) != len(was.rows)):
        raise _Unknown
    if count == 0:
        return None
    pairs = zip(shown_before, was.lines if was else (), strict=True)  # as long: checked above
    known = {r: ln for r, ln in pairs if r not in lines}
    known.update({r: lines[r] for r in bad_b})
    order = sorted(known)
    if was and was.count > len(was.rows):  # rows past the last one shown are not known
        order = [r for r in order if r <= max(was.rows)]
        if len(order) < min(count, MAX_SHOWN_ROWS):
            raise _Unknown
    shown = order[:MAX_SHOWN_ROWS]
    return rules.rows_failure(
        name, rule.check, rule.column, rule.what, shown, count, [known[r] for r in shown]
    )
