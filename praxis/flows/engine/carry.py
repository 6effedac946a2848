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

Every edit that no longer applies is reported with the row's key. Edits are matched to
columns by name, so a table whose header repeats a name is refused: up front, when the
table as the phase wrote it or as edited repeats one (``repeated_columns``), and again at
the Gate when the new output does; no fix is ever written into another column.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandbox.files import open_nofollow, replace_file

from ..model.check_spec import TABULAR
from ..model.flow import Flow, Phase
from ..store import intact
from .checks import Table, Unreadable, parse
from .shared_bytes import shared as _shared


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


HEADER_BYTES = 1 << 20  # read of a recorded table to find its header


def repeated(header: Sequence[str]) -> str | None:
    """The first name ``header`` holds twice, or None."""
    seen: set[str] = set()
    for column in header:
        if column in seen:
            return column
        seen.add(column)
    return None


def refusal(name: str, column: str) -> str:
    """Why ``--keep-edits`` refuses table ``name``, and what to do instead."""
    return (
        f"{name}: its header repeats the column {column!r} and --keep-edits matches edits to "
        "columns by name: choose --discard-edits, or give the columns distinct names in the "
        "phase"
    )


def repeated_columns(run: Any, found: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Of ``found`` (output, phase), the tables whose header, as the phase wrote it (in the
    flow's store) or as the reviewer left it (the run's output), repeats a name: (output,
    that name)."""
    refused = []
    for name, phase in found:
        wrote = run.state.phase(phase).edited.get(name)
        for path in (run.paths.objects / wrote if wrote else None, run.paths.out(name)):
            column = repeated(_recorded_header(path, name) if path else [])
            if column is not None:
                refused.append((name, column))
                break
    return refused


def _recorded_header(path: Path, name: str) -> list[str]:
    """The header of a recorded table (its first ``HEADER_BYTES``); [] when unreadable."""
    try:
        fd = open_nofollow(path)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as fh:
        head = fh.read(HEADER_BYTES)
    try:
        return _header(name, head)
    except Unreadable:
        return []


def reapply(name: str, key: list[str], wrote: bytes, edited: bytes, new: bytes) -> Outcome:
    """Re-apply the edit ``wrote`` -> ``edited`` of table ``name`` to ``new`` by ``key``.

    Only the rows between the bytes ``wrote`` and ``edited`` share at the start and the end
    are compared (an edit of a few cells compares a few rows); ``new`` is read twice as a
    stream of records, keeping only the rows the edits name, and every other record is
    written back byte for byte."""
    try:
        a, b = _edited_region(name, wrote, edited)
        header = _header(name, new)
    except Unreadable as exc:
        return Outcome(new, skipped=[f"{name}: {exc}: no edit applied"])
    for label, cols in (("the table as the phase wrote it", a.header),
                        ("the table as edited", b.header), ("the new table", header)):  # fmt: skip
        twice = repeated(cols)
        if twice is not None:
            return Outcome(new, skipped=[f"{refusal(name, twice)} (in {label}): no edit "
                                         "applied"])  # fmt: skip
        missing = [k for k in key if k not in cols]
        if missing:
            return Outcome(new, skipped=[f"{name}: {label} has no key column(s) "
                                         f"{missing}: no edit applied"])  # fmt: skip
    edits = _edits(a, b, key)
    if not edits:
        return Outcome(new)
    needed = {k for k, _, _ in edits}
    needed |= {tuple(after.get(c, "") for c in key) for _, _, after in edits if after}
    try:
        rows, where = _find(name, new, header, key, needed)
    except Unreadable as exc:
        return Outcome(new, skipped=[f"{name}: {exc}: no edit applied"])
    out = Outcome(new)
    change = Change(rows=rows, where=where)
    for old_key, before, after in edits:
        _one(name, header, key, change, old_key, before, after, out)
    if change.changed or change.removed or change.added:
        out.data = _rewrite(name, new, change)
    return out


def changes_by_key(name: str, key: list[str], old: bytes, new: bytes) -> list[Edit]:
    """The rows of table ``name`` changed, removed and added from ``old`` to ``new``, by
    ``key``: (key, row before or None, row after or None); only the rows between the bytes
    both share at the start and the end are compared. Unreadable when either does not parse
    or lacks a key column."""
    a, b = _edited_region(name, old, new)
    for label, cols in (("earlier", a.header), ("later", b.header)):
        missing = [k for k in key if k not in cols]
        if missing:
            raise Unreadable(f"the {label} {name} has no key column(s) {missing}")
    return _edits(a, b, key)


@dataclass
class Change:
    """What re-applying does to the new table: its rows the edits name (by record number),
    where each needed key is (None: two rows share it), and the rows changed, removed and
    added."""

    rows: dict[int, list[str]]
    where: dict[tuple[str, ...], int | None]
    changed: set[int] = field(default_factory=set)
    removed: set[int] = field(default_factory=set)
    added: list[list[str]] = field(default_factory=list)


def _edited_region(name: str, wrote: bytes, edited: bytes) -> tuple[Table, Table]:
    """The two versions, cut to the rows between what they share at the start and the end
    (with the header)."""

    head, tail, _ = _shared(wrote, edited)
    if head:
        first = wrote.find(b"\n") + 1
        wrote = wrote[:first] + wrote[head : len(wrote) - tail]
        edited = edited[:first] + edited[head : len(edited) - tail]
    return parse(wrote, name), parse(edited, name)


def _records(name: str, data: bytes) -> Iterator[tuple[str, list[str]]]:
    """(the record as written, its fields), the header first; Unreadable if it does not
    parse. Bytes that are not UTF-8 come back as they were (surrogateescape)."""
    text = data.decode("utf-8", "surrogateescape")
    lines = iter(io.StringIO(text, newline=""))
    held: list[str] = []

    def feed() -> Iterator[str]:
        for line in lines:
            held.append(line)
            yield line

    delimiter = TABULAR.get(Path(name).suffix.lower(), ",")
    reader = csv.reader(feed(), delimiter=delimiter, strict=True)
    try:
        for fields in reader:
            raw = "".join(held)
            held.clear()
            if fields:
                yield raw, fields
    except csv.Error as exc:
        raise Unreadable(f"does not parse near line {reader.line_num}: {exc}") from None


def _header(name: str, data: bytes) -> list[str]:
    for _, fields in _records(name, data):
        return [f.lstrip("\ufeff") if i == 0 else f for i, f in enumerate(fields)]
    raise Unreadable("it is empty")


def _find(
    name: str, data: bytes, header: list[str], key: list[str], needed: set[tuple[str, ...]]
) -> tuple[dict[int, list[str]], dict[tuple[str, ...], int | None]]:
    """The rows of ``data`` whose key is ``needed`` (by data row number), and where each is."""
    at = [header.index(k) for k in key]
    rows: dict[int, list[str]] = {}
    where: dict[tuple[str, ...], int | None] = {}
    for n, (_, fields) in enumerate(_records(name, data), start=-1):
        if n < 0:
            continue
        if len(fields) != len(header):
            raise Unreadable(f"data row {n + 1} has {len(fields)} fields, the header {len(header)}")
        k = tuple(fields[i] for i in at)
        if k in needed:
            where[k] = None if k in where else n
            rows[n] = fields
    return rows, where


def _rewrite(name: str, data: bytes, change: Change) -> bytes:
    """``data`` with the changed rows written anew, the removed ones left out and the added
    ones at the end; every other record as it was."""
    delimiter = TABULAR.get(Path(name).suffix.lower(), ",")
    out: list[str] = []
    ending = "\n"
    for n, (raw, _fields) in enumerate(_records(name, data), start=-1):
        ending = "\r\n" if raw.endswith("\r\n") else "\n"
        if n in change.removed:
            continue
        out.append(_line(change.rows[n], delimiter, ending) if n in change.changed else raw)
    if out and not out[-1].endswith(("\n", "\r")):
        out[-1] += ending
    out += [_line(row, delimiter, ending) for row in change.added]
    return "".join(out).encode("utf-8", "surrogateescape")


def _line(fields: list[str], delimiter: str, ending: str) -> str:
    buf = io.StringIO()
    csv.writer(buf, delimiter=delimiter, lineterminator=ending).writerow(fields)
    return buf.getvalue()


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


def _one(
    name: str,
    header: list[str],
    key: list[str],
    change: Change,
    old_key: tuple[str, ...],
    before: Row | None,
    after: Row | None,
    out: Outcome,
) -> None:
    where = change.where
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
            change.removed.add(n)
            out.applied.append(f"{label}: removed")
        return
    if before is None:  # added by the reviewer
        if found:
            out.skipped.append(f"{label}: added at the Gate; the new output has this key")
        else:
            change.added.append([after.get(c, "") for c in header])
            where[old_key] = -1  # a second add of the key finds it
            out.applied.append(f"{label}: added")
        return
    if n is None:
        out.skipped.append(f"{label} is not in the new output: its edit is not applied")
        return
    new_key = tuple(after.get(k, "") for k in key)
    if new_key != old_key and new_key in where:
        out.skipped.append(f"{label}: the new output has a row with key {new_key}: not applied")
        return
    row = change.rows[n]
    for column in header:
        if column not in before or column not in after or before[column] == after[column]:
            continue
        i = header.index(column)
        was, want = before[column], after[column]
        if row[i] in (was, want):
            if row[i] != want:
                row[i] = want
                change.changed.add(n)
            out.applied.append(f"{label}: {column} {was!r} -> {want!r}")
        else:
            out.skipped.append(
                f"{label}: {column} is now {row[i]!r} (the edit changed {was!r} to "
                f"{want!r}): not applied"
            )
    for column in set(before) - set(header):
        if before[column] != after.get(column):
            out.skipped.append(f"{label}: column {column!r} is not in the new output")


# --- on a run ----------------------------------------------------------------------------


def carry_over(run: Any, phase: Phase) -> list[tuple[str, Outcome]]:
    """Re-apply the edits the run carries for ``phase`` (``PhaseState.carry``) to its new
    outputs, writing each changed file in place (the caller records them as edits once the
    run is at the Gate). (output, outcome) for each edit carried."""

    done = []
    for name, (wrote_sha, edited_sha) in sorted(run.state.phase(phase.id).carry.items()):
        path = run.paths.out(name)
        key = key_of(phase, name)
        objects = run.paths.objects
        if key is None or not path.is_file():
            done.append((name, Outcome(b"", skipped=[f"{name}: not re-applied (no key)"])))
            continue
        try:  # each as its name says, or the edit is not carried
            wrote = intact.read(objects / wrote_sha, wrote_sha, f"{name} as {phase.id} wrote it")
            edited = intact.read(objects / edited_sha, edited_sha, f"{name} as edited")
        except (OSError, intact.ObjectTampered) as exc:
            why = f"not re-applied ({exc})" if isinstance(exc, intact.ObjectTampered) else ""
            done.append(
                (name, Outcome(b"", skipped=[f"{name}: {why or 'the edit is not in the record'}"]))
            )
            continue
        new = path.read_bytes()
        outcome = reapply(name, key, wrote, edited, new)
        if outcome.data != new:
            replace_file(path, outcome.data, mode=0o644)
        done.append((name, outcome))
    return done
