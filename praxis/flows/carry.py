"""``--keep-edits``: a reviewer's Gate edit of a table, re-applied to the phase's new output.

A re-run or a reopen that would replace outputs edited at a Gate needs a choice: discard the
edits (they stay in the record, under ``attempts/`` and ``edits/``), or keep them. Kept, the
cell-level diff between the table as the phase wrote it and as the reviewer left it is
re-applied by row key (the check's ``key:`` columns, else its first ``unique`` column) when
the phase next reaches its Gate:

* a changed cell is applied to the row of the same key when the new output still has the
  value the reviewer saw there (or has the edited value already); a row that is gone, a
  column that is gone, or a value the phase now writes differently is reported, not applied;
* a changed key (the reviewer corrected only the key cells of a row) is found by the old
  key and applied unless another row of the new output has the new key;
* a removed row is removed by its key; an added row is added unless its key is there.

Every edit that no longer applies is reported with the row's key.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .check_spec import TABULAR
from .checks import Table, Unreadable, parse
from .model import Flow, Phase


@dataclass
class Outcome:
    """The new output with the edits applied (``data``), and what was and was not applied."""

    data: bytes
    applied: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def key_of(phase: Phase, name: str) -> list[str] | None:
    """The columns that identify a row of output ``name``: ``key:``, else the first
    ``unique`` column; None when it is not a table or declares neither."""
    if Path(name).suffix.lower() not in TABULAR:
        return None
    spec = phase.checks.get(name, {})
    if spec.get("key"):
        return list(spec["key"])
    if spec.get("unique"):
        return [spec["unique"][0]]
    return None


def at_risk(state: Any, from_phase: str) -> list[tuple[str, str]]:
    """(output, phase) of the outputs edited at a Gate that going back to ``from_phase`` may
    replace: those of that phase and every later one."""
    index = state.index(from_phase)
    return [(n, p.id) for p in state.phases[index:] for n in sorted(p.edited)]


def keyless(flow: Flow, found: Sequence[tuple[str, str]]) -> list[str]:
    """Of ``found`` (output, phase), the outputs ``--keep-edits`` cannot re-apply (not a
    table, or no key)."""
    return [n for n, p in found if key_of(flow.phase(p), n) is None]


def reapply(name: str, key: list[str], wrote: bytes, edited: bytes, new: bytes) -> Outcome:
    """Re-apply the edit ``wrote`` -> ``edited`` of table ``name`` to ``new`` by ``key``."""
    try:
        a, b, c = parse(wrote, name), parse(edited, name), parse(new, name)
    except Unreadable as exc:
        return Outcome(new, skipped=[f"{name}: {exc}: no edit applied"])
    for label, t in (("as the phase wrote it", a), ("as edited", b), ("new", c)):
        missing = [k for k in key if k not in t.header]
        if missing:
            return Outcome(new, skipped=[f"{name}: the {label} table has no key column(s) "
                                         f"{missing}: no edit applied"])  # fmt: skip
    edits = _edits(a, b, key)
    if not edits:
        return Outcome(new)
    out = Outcome(new)
    rows = [list(r) for r in c.rows]
    where = _index(c, key)
    removed: set[int] = set()
    for old_key, before, after in edits:
        _one(name, c.header, key, rows, where, removed, old_key, before, after, out)
    kept = [r for i, r in enumerate(rows) if i not in removed]
    if kept != c.rows:
        out.data = _write(name, c.header, kept, new)
    return out


Row = dict[str, str]
Edit = tuple[tuple[str, ...], Row | None, Row | None]  # (key, row before, row after)


def _edits(a: Table, b: Table, key: list[str]) -> list[Edit]:
    """The rows the reviewer changed, removed or added, by key; a row whose key itself was
    changed is the row at the same place that matches no key on either side and differs
    from it in its key columns only."""
    before = [dict(zip(a.header, r, strict=True)) for r in a.rows]
    after = [dict(zip(b.header, r, strict=True)) for r in b.rows]
    ka = [tuple(r[k] for k in key) for r in before]
    kb = [tuple(r[k] for k in key) for r in after]
    in_a, in_b = set(ka), set(kb)
    by_b = {k: r for k, r in zip(kb, after, strict=True)}
    found: list[Edit] = []
    lone_b = {i for i, k in enumerate(kb) if k not in in_a}
    for i, (k, row) in enumerate(zip(ka, before, strict=True)):
        if k in in_b:
            if by_b[k] != row:
                found.append((k, row, by_b[k]))
        elif i in lone_b and _only_key(row, after[i], key):  # the key itself was edited
            found.append((k, row, after[i]))
            lone_b.discard(i)
        else:
            found.append((k, row, None))
    found += [(kb[i], None, after[i]) for i in sorted(lone_b)]
    return found


def _only_key(before: Row, after: Row, key: list[str]) -> bool:
    """The rows differ in their key columns only."""
    return all(after.get(c) == v for c, v in before.items() if c not in key and c in after)


def _index(t: Table, key: list[str]) -> dict[tuple[str, ...], int | None]:
    """Key -> row number in ``t`` (None for a key two rows share)."""
    at = [t.header.index(k) for k in key]
    where: dict[tuple[str, ...], int | None] = {}
    for n, r in enumerate(t.rows):
        k = tuple(r[i] for i in at)
        where[k] = None if k in where else n
    return where


def _one(
    name: str,
    header: list[str],
    key: list[str],
    rows: list[list[str]],
    where: dict[tuple[str, ...], int | None],
    removed: set[int],
    old_key: tuple[str, ...],
    before: Row | None,
    after: Row | None,
    out: Outcome,
) -> None:
    label = f"{name} row " + ", ".join(f"{k}={v!r}" for k, v in zip(key, old_key, strict=True))
    found = old_key in where
    n = where.get(old_key)
    if found and n is None:
        out.skipped.append(f"{label}: two rows of the new output have this key: not applied")
        return
    if after is None:  # removed by the reviewer
        if n is None:
            out.skipped.append(f"{label}: removed at the Gate; not in the new output")
        else:
            removed.add(n)
            out.applied.append(f"{label}: removed")
        return
    if before is None:  # added by the reviewer
        if found:
            out.skipped.append(f"{label}: added at the Gate; the new output has this key")
        else:
            rows.append([after.get(c, "") for c in header])
            out.applied.append(f"{label}: added")
        return
    if n is None:
        out.skipped.append(f"{label} is not in the new output: its edit is not applied")
        return
    new_key = tuple(after.get(k, "") for k in key)
    if new_key != old_key and new_key in where:
        out.skipped.append(f"{label}: the new output has a row with key {new_key}: not applied")
        return
    row = rows[n]
    for column in header:
        if column not in before or column not in after or before[column] == after[column]:
            continue
        i = header.index(column)
        was, want = before[column], after[column]
        if row[i] in (was, want):
            row[i] = want
            out.applied.append(f"{label}: {column} {was!r} -> {want!r}")
        else:
            out.skipped.append(
                f"{label}: {column} is now {row[i]!r} (the edit changed {was!r} to "
                f"{want!r}): not applied"
            )
    for column in set(before) - set(header):
        if before[column] != after.get(column):
            out.skipped.append(f"{label}: column {column!r} is not in the new output")


def _write(name: str, header: list[str], rows: list[list[str]], like: bytes) -> bytes:
    """The table in the dialect of ``like`` (its delimiter and line ends)."""
    first = like.split(b"\n", 1)[0]
    ending = "\r\n" if first.endswith(b"\r") else "\n"
    delimiter = TABULAR.get(Path(name).suffix.lower(), ",")
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=delimiter, lineterminator=ending)
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue().encode("utf-8")


# --- on a run ----------------------------------------------------------------------------


def carry_over(run: Any, phase: Phase) -> list[tuple[str, Outcome]]:
    """Re-apply the edits the run carries for ``phase`` (``PhaseState.carry``) to its new
    outputs, writing each changed file in place (the caller records them as edits once the
    run is at the Gate). (output, outcome) for each edit carried."""
    from .atomic import write_atomic

    done = []
    for name, (wrote_sha, edited_sha) in sorted(run.state.phase(phase.id).carry.items()):
        path = run.paths.out(name)
        key = key_of(phase, name)
        objects = run.paths.objects
        if key is None or not path.is_file():
            done.append((name, Outcome(b"", skipped=[f"{name}: not re-applied (no key)"])))
            continue
        try:
            wrote, edited = (objects / wrote_sha).read_bytes(), (objects / edited_sha).read_bytes()
        except OSError:
            done.append((name, Outcome(b"", skipped=[f"{name}: the edit is not in the record"])))
            continue
        new = path.read_bytes()
        outcome = reapply(name, key, wrote, edited, new)
        if outcome.data != new:
            write_atomic(path, outcome.data, mode=0o644)
        done.append((name, outcome))
    return done
