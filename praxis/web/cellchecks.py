"""flow.yaml's declared checks of a cell-level save, without parsing the table again.

A cell save changes cells only: the header, the row count and every other row stay. So the
table about to be written is the columnar copy of the file as it is (``columnar``) with the
edited cells replaced, and the declared checks (``unique``, ``not_null``, ``values``,
``dtype``, ``columns``, ``min_rows``, ``max_rows``) run over it column by column: the rules
and messages of ``check_rules``, which the engine's ``checks`` evaluates too. ``None`` when
this cannot stand in for ``checks.evaluate``: a ``script:`` or ``key`` check (read from the
staged file), a table too wide for a copy, or a checked column holding a cell longer than
the copy keeps; the caller then checks the whole staged file.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from praxis.flows.model import check_rules as rules

from . import columnar, csvedit, find

ROW_CHECKS = ("unique", "not_null", "values", "dtype")


def check_cells(
    idx: csvedit.Index, name: str, spec: dict[str, Any], edits: dict[int, dict[int, str]]
) -> list[rules.Failure] | None:
    """The failures of ``spec`` on ``idx``'s file with ``edits`` ({row: {column: value}})."""
    if "script" in spec or "key" in spec or len(csvedit.header(idx)) > columnar.MAX_COLUMNS:
        return None
    copy = columnar.copy_of(idx)
    header = copy.header
    checked = {header.index(c) for key in ROW_CHECKS for c in _columns(spec, key) if c in header}
    for c in checked:
        longest = pc.max(pc.utf8_length(copy.column(c))).as_py() or 0
        if longest >= columnar.FIELD_CAP:
            return None
    edited = _with_edits(copy, edits, checked)
    failures = rules.missing_columns(name, spec, list(header))
    for key in ROW_CHECKS:
        for column in _columns(spec, key):
            if column not in header:
                failures.append(rules.no_such_column(name, key, column))
    touched = frozenset(c for cells in edits.values() for c in cells)
    for flag in find.flagged(edited, spec, base=copy, touched=touched):
        shown = flag.rows.slice(0, rules.MAX_SHOWN_ROWS).to_pylist()
        failures.append(
            rules.Failure(
                name,
                flag.check,
                flag.message,
                flag.column,
                tuple(r + 1 for r in shown),
                len(flag.rows),
                lines_of(idx, copy, shown, edits),
            )  # fmt: skip
        )
    return failures + rules.row_count(name, spec, copy.rows)


def lines_of(
    idx: csvedit.Index, copy: columnar.Copy, rows: list[int], edits: dict[int, dict[int, str]]
) -> tuple[int, ...]:
    """The line (as an editor counts, 1-based) where each data row of ``rows`` starts in
    the file as saved: the newlines before it in the file now (counted in one pass up to
    the last of them), and those the edited cells before it add or take away."""
    starts = [a for a, _ in copy.spans(rows)]
    before = _newlines_before(idx, sorted(set(starts)))
    edited = sorted(edits)
    old = dict(zip(edited, csvedit.read_spans(idx, copy.spans(edited)), strict=True))
    grew = {}
    for r in edited:
        fields = old[r].fields
        grew[r] = sum(v.replace("\r\n", "\n").count("\n")
                      - (fields[c].count("\n") if c < len(fields) else 0)
                      for c, v in edits[r].items())  # fmt: skip
    return tuple(1 + before[s] + sum(g for e, g in grew.items() if e < r)
                 for r, s in zip(rows, starts, strict=True))  # fmt: skip


def _newlines_before(idx: csvedit.Index, offsets: list[int]) -> dict[int, int]:
    found: dict[int, int] = {}
    if not offsets:
        return found
    count, pos = 0, 0
    with open(idx.path, "rb") as fh:
        for target in offsets:
            while pos < target:
                chunk = fh.read(min(csvedit.CHUNK, target - pos))
                if not chunk:
                    break
                count += chunk.count(b"\n")
                pos += len(chunk)
            found[target] = count
    return found


def _columns(spec: dict[str, Any], key: str) -> list[str]:
    value = spec.get(key, [])
    return [str(c) for c in (value.keys() if isinstance(value, dict) else value)]


def _with_edits(
    copy: columnar.Copy, edits: dict[int, dict[int, str]], columns: set[int]
) -> columnar.Copy:
    """The copy with each edited cell of ``columns`` replaced by its new value."""
    table = copy.table
    for c in columns:
        rows = sorted(r for r, cells in edits.items() if c in cells)
        if not rows:
            continue
        mask = np.zeros(copy.rows, dtype=bool)
        mask[rows] = True
        values = pa.array([edits[r][c] for r in rows], pa.string())
        col = pc.replace_with_mask(copy.column(c).combine_chunks(), pa.array(mask), values)
        table = table.set_column(c, f"c{c}", col)
    return columnar.Copy(copy.key + "+edits", copy.header, table, copy.rows, kept=False)
