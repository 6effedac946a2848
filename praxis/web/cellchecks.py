"""flow.yaml's declared checks of a cell-level save, without parsing the table again.

A cell save changes cells only: the header, the row count and every other row stay. So the
table about to be written is the columnar copy of the file as it is (``columnar``) with the
edited cells replaced, and the declared checks (``unique``, ``not_null``, ``values``,
``dtype``, ``columns``, ``min_rows``, ``max_rows``) run over it column by column, with the
messages ``checks`` gives. ``None`` when this cannot stand in for ``checks.evaluate``: a
``script:`` check (it reads the file), a table too wide for a copy, or a checked column
holding a cell longer than the copy keeps; the caller then checks the whole staged file.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from praxis.flows import checks

from . import columnar, csvedit, find

ROW_CHECKS = ("unique", "not_null", "values", "dtype")


def check_cells(
    idx: csvedit.Index, name: str, spec: dict[str, Any], edits: dict[int, dict[int, str]]
) -> list[checks.Failure] | None:
    """The failures of ``spec`` on ``idx``'s file with ``edits`` ({row: {column: value}})."""
    if "script" in spec or len(csvedit.header(idx)) > columnar.MAX_COLUMNS:
        return None
    copy = columnar.copy_of(idx)
    header = copy.header
    checked = {header.index(c) for key in ROW_CHECKS for c in _columns(spec, key) if c in header}
    for c in checked:
        longest = pc.max(pc.utf8_length(copy.column(c))).as_py() or 0
        if longest >= columnar.FIELD_CAP:
            return None
    edited = _with_edits(copy, edits, checked)
    failures = checks._declared(name, {k: v for k, v in spec.items() if k == "columns"},
                                checks.Table(header))  # fmt: skip
    for key in ROW_CHECKS:
        for column in _columns(spec, key):
            if column not in header:
                failures.append(checks.Failure(name, key, "no such column", column=column))
    for flag in find.flagged(edited, spec):
        rows = tuple(r + 1 for r in flag.rows.slice(0, checks.MAX_SHOWN_ROWS).to_pylist())
        failures.append(
            checks.Failure(name, flag.check, flag.message, flag.column, rows, len(flag.rows))
        )
    n = copy.rows
    if "min_rows" in spec and n < spec["min_rows"]:
        failures.append(checks.Failure(name, "min_rows", f"{n} rows, at least {spec['min_rows']}"))
    if "max_rows" in spec and n > spec["max_rows"]:
        failures.append(checks.Failure(name, "max_rows", f"{n} rows, at most {spec['max_rows']}"))
    return failures


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
    return columnar.Copy(copy.key + "+edits", copy.header, table, copy.rows)
