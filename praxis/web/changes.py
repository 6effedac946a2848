"""What changed in a run's outputs: the reviewer's edits, and each re-run against the last.

The phase's version of a file is the one it wrote, found by the sha256 its ``phase_done``
event recorded: in the flow's content store ``.praxis/objects/<sha256>``, or, for a run without
one, in the copy this server keeps before the first edit at a Gate
(``runs/<run>/edits/<phase>/<attempt>/<name>``, read-only). Tables are compared cell by cell (rows
changed, added, removed), other text as a unified diff. Both are bounded: a diff of files
larger than ``MAX_DIFF_BYTES`` or with more than ``MAX_SHOWN`` entries says so.
"""

from __future__ import annotations

import difflib
import shutil
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TypeVar

from praxis.flows.definition.digest import sha256_of
from praxis.flows.model.events import PhaseDone
from praxis.flows.store.event_log import EventLog, EventLogCorrupt
from praxis.flows.store.handle import RunHandle
from sandbox.files import nofollow_opener, replace_file

from . import csvedit, tables

MAX_DIFF_BYTES = 64 * 1024 * 1024
MAX_SHOWN = 500
MAX_TEXT_LINES = 2000

_T = TypeVar("_T")


@dataclass
class CellChange:
    row: int  # 1-based data row in the newer file
    cells: list[tuple[str, str, str]]  # (column, old, new)


@dataclass
class TableDiff:
    columns_before: list[str]
    columns_after: list[str]
    changed: list[CellChange] = field(default_factory=list)
    added: list[tuple[int, list[str]]] = field(default_factory=list)  # (row in newer, fields)
    removed: list[tuple[int, list[str]]] = field(default_factory=list)  # (row in older, fields)
    counts: dict[str, int] = field(default_factory=lambda: {"changed": 0, "added": 0, "removed": 0})

    @property
    def empty(self) -> bool:
        return not any(self.counts.values()) and self.columns_before == self.columns_after


@dataclass
class FileDiff:
    name: str
    before: str  # where the older version is, for a person
    after: str
    table: TableDiff | None = None
    text: list[str] | None = None  # unified diff lines
    problem: str | None = None  # why no diff is shown
    same: bool = False


# --- keeping the phase's version ---------------------------------------------------------


def edits_dir(run: RunHandle, phase: str, attempt: int) -> Path:
    return run.paths.kept(phase, attempt)


def phase_hash(run: RunHandle, phase: str, attempt: int, name: str) -> str | None:
    """The sha256 the phase recorded for output ``name`` when attempt ``attempt`` finished."""
    try:
        events = EventLog(run.paths.events).read()
    except EventLogCorrupt:
        return None
    for ev in reversed(events):
        if isinstance(ev, PhaseDone) and ev.phase == phase and ev.attempt == attempt:
            value = ev.hashes.get(name)
            return str(value) if value else None
    return None


def keep_original(run: RunHandle, name: str) -> None:
    """Before the first edit of ``name`` at this Gate: keep the phase's bytes (read-only)."""
    gate = run.state.gate
    if gate is None:
        return
    attempt = run.state.phase(gate).attempt
    dest = edits_dir(run, gate, attempt) / name
    src = run.paths.out(name)
    if dest.exists() or not src.is_file() or src.is_symlink():
        return
    recorded = phase_hash(run, gate, attempt, name)
    if recorded and run.paths.object(recorded).is_file():
        return  # the run's content store keeps the phase's version already
    if sha256_of(src) != recorded:
        return  # already changed (by hand, or through another tool): not the phase's version
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(src, "rb", opener=nofollow_opener) as fh:
        replace_file(dest, partial(shutil.copyfileobj, fh), mode=0o444, durable=False)


def phase_version(run: RunHandle, phase: str, attempt: int, name: str) -> Path | None:
    """A file holding the bytes phase ``phase`` wrote as ``name`` in ``attempt``, if kept."""
    kept = edits_dir(run, phase, attempt) / name
    if kept.is_file() and not kept.is_symlink():
        return kept
    digest = phase_hash(run, phase, attempt, name)
    if digest:
        stored = run.paths.object(digest)
        if stored.is_file() and not stored.is_symlink():
            return stored
    return None


# --- diffs -------------------------------------------------------------------------------


def diff_files(name: str, old: Path, new: Path, before: str, after: str) -> FileDiff:
    result = FileDiff(name, before, after)
    try:
        sizes = old.stat().st_size, new.stat().st_size
    except OSError as exc:
        result.problem = f"cannot be read: {exc.strerror}"
        return result
    if max(sizes) > MAX_DIFF_BYTES:
        result.problem = f"is larger than {MAX_DIFF_BYTES // 2**20} MB: not compared here"
        return result
    if old.read_bytes() == new.read_bytes():
        result.same = True
        return result
    if tables.is_table(name):
        try:
            result.table = diff_tables(old, new)
            return result
        except (csvedit.NotATable, csvedit.BadRow, UnicodeError):
            pass  # compared as text below
    result.text = diff_text(old, new, before, after)
    return result


def _rows(path: Path) -> tuple[list[str], list[bytes], csvedit.Dialect]:
    """The header's fields, every data row's raw bytes (no line ending), the dialect."""
    idx = csvedit.build_index(path)
    data = path.read_bytes()[len(idx.dialect.bom) :]
    raws, pos = [], 0
    while pos < len(data):
        end, _ = csvedit.record_ends(data, pos, len(data))
        raws.append(data[pos:end].rstrip(b"\r\n"))
        pos = end
    head = _fields(raws[0], idx.dialect) if raws else []
    return head, raws[1:], idx.dialect


def _fields(raw: bytes, dialect: csvedit.Dialect) -> list[str]:
    try:
        return csvedit.parse_record(raw, dialect).fields
    except (csvedit.BadRow, UnicodeError):
        return [raw.decode(dialect.encoding, errors="replace")]


def diff_tables(old: Path, new: Path) -> TableDiff:
    head_a, raw_a, da = _rows(old)
    head_b, raw_b, db = _rows(new)
    diff = TableDiff(head_a, head_b)

    def changed(i: int, j: int) -> None:
        _changed(diff, head_b, _fields(raw_a[i], da), _fields(raw_b[j], db), j)

    # the common head and tail are equal rows; only the middle is aligned (an edit in place
    # of a million-row file aligns one row)
    lo, hi = 0, 0
    while lo < min(len(raw_a), len(raw_b)) and raw_a[lo] == raw_b[lo]:
        lo += 1
    while hi < min(len(raw_a), len(raw_b)) - lo and raw_a[-1 - hi] == raw_b[-1 - hi]:
        hi += 1
    matcher = difflib.SequenceMatcher(
        None, raw_a[lo : len(raw_a) - hi], raw_b[lo : len(raw_b) - hi], autojunk=False
    )
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op == "equal":
            continue
        a1, a2, b1, b2 = a1 + lo, a2 + lo, b1 + lo, b2 + lo
        paired = min(a2 - a1, b2 - b1) if op == "replace" else 0
        for k in range(paired):
            changed(a1 + k, b1 + k)
        for i in range(a1 + paired, a2):
            _count(diff, "removed", diff.removed, (i + 1, _fields(raw_a[i], da)))
        for j in range(b1 + paired, b2):
            _count(diff, "added", diff.added, (j + 1, _fields(raw_b[j], db)))
    return diff


def _changed(diff: TableDiff, head: list[str], a: list[str], b: list[str], row: int) -> None:
    cells = []
    for c in range(max(len(a), len(b))):
        old = a[c] if c < len(a) else ""
        new = b[c] if c < len(b) else ""
        if old != new:
            cells.append((head[c] if c < len(head) else f"column {c + 1}", old, new))
    _count(diff, "changed", diff.changed, CellChange(row + 1, cells))


def _count(diff: TableDiff, key: str, bucket: list[_T], item: _T) -> None:
    diff.counts[key] += 1
    if len(bucket) < MAX_SHOWN:
        bucket.append(item)


def diff_text(old: Path, new: Path, before: str, after: str) -> list[str]:
    a = old.read_bytes().decode("utf-8", errors="replace").splitlines()
    b = new.read_bytes().decode("utf-8", errors="replace").splitlines()
    lines = list(difflib.unified_diff(a, b, before, after, lineterm="", n=2))
    if len(lines) > MAX_TEXT_LINES:
        more = len(lines) - MAX_TEXT_LINES
        lines = lines[:MAX_TEXT_LINES] + [f"... {more} more lines of diff not shown"]
    return lines


# --- what a run page's Changes view lists --------------------------------------------------


@dataclass
class Changes:
    edits: list[FileDiff]
    reruns: list[FileDiff]
    notes: list[str]  # edited files whose phase version was not kept


def run_changes(run: RunHandle) -> Changes:
    out = Changes([], [], [])
    for p in run.state.phases:
        if p.attempt == 0:
            continue
        step = run.flow.phase(p.id)
        for attempt in range(1, p.attempt + 1):
            current = attempt == p.attempt
            for name in step.outputs:
                now = run.paths.out(name) if current else _archived(run, p.id, attempt, name)
                if now is None or not now.is_file():
                    continue
                recorded = phase_hash(run, p.id, attempt, name)
                kept = phase_version(run, p.id, attempt, name)
                label = f"{p.id} attempt {attempt}"
                if kept is not None:
                    after = f"{name} now" if current else f"{name} as reviewed after {label}"
                    d = diff_files(name, kept, now, f"{name} as {label} wrote it", after)
                    if not d.same:
                        out.edits.append(d)
                elif recorded and sha256_of(now) != recorded:
                    out.notes.append(
                        f"{name} ({label}) was changed after the phase wrote it, but the "
                        "phase's version was not kept, so the cells cannot be compared"
                    )
        for attempt in range(1, p.attempt):
            for name in step.outputs:
                older = _archived(run, p.id, attempt, name)
                newer = (
                    run.paths.out(name)
                    if attempt + 1 == p.attempt
                    else _archived(run, p.id, attempt + 1, name)
                )
                if older is None or newer is None or not newer.is_file():
                    continue
                out.reruns.append(
                    diff_files(
                        name,
                        older,
                        newer,
                        f"{name} of {p.id} attempt {attempt}",
                        f"{name} of {p.id} attempt {attempt + 1}",
                    )
                )
    return out


def _archived(run: RunHandle, phase: str, attempt: int, name: str) -> Path | None:
    path = run.paths.archived(phase, attempt) / name
    return path if path.is_file() and not path.is_symlink() else None
