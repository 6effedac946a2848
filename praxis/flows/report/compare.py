"""Two runs of a flow side by side: what changed between them ("what changed since last
month's run?").

Per parameter, its value in each run; per phase, whether it ran or was reused (and whether
its definition changed); per output, whether it differs, and for a table the rows added,
removed and changed: by row key when its checks declare one (``key:``, else its first
``unique`` column: the diff that carries a reviewer's edits across a re-run, given only the
rows the two versions do not share byte for byte), else the cell-level diff a Gate's edits
are recorded with (rows aligned by content, up to ``MAX_UNKEYED``). Reads only; each table
read is bounded as checks read one (``checks.MAX_BYTES``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..definition.digest import sha256_of
from ..engine import carry, checks, edits
from ..model.check_spec import TABULAR
from ..model.state import PhaseState
from ..store.handle import RunHandle

MAX_CELLS = edits.MAX_CELLS  # changed cells, and added or removed rows, listed per table
# a table without a key is aligned row by row (difflib): past this size it is not compared
MAX_UNKEYED = 16 << 20


@dataclass
class ParamChange:
    name: str
    before: Any
    after: Any
    missing: str = ""  # "before" | "after": the run without this parameter

    @property
    def same(self) -> bool:
        return not self.missing and self.before == self.after


@dataclass
class PhaseChange:
    phase: str
    before: str  # ran | reused | failed | ... | absent (the flow had no such phase)
    after: str
    definition_changed: bool = False
    seconds: tuple[float | None, float | None] = (None, None)


@dataclass
class OutputChange:
    phase: str
    name: str
    state: str  # same | differs | only before | only after | absent
    key: list[str] | None = None
    added: int = 0
    removed: int = 0
    changed: int = 0
    cells: list[dict[str, str]] = field(default_factory=list)  # row, column, old, new
    rows: list[dict[str, str]] = field(default_factory=list)  # row, change (added | removed)
    problem: str | None = None  # why a table's rows were not compared


@dataclass
class Comparison:
    flow: str
    before: str  # run ids
    after: str
    params: list[ParamChange]
    phases: list[PhaseChange]
    outputs: list[OutputChange]

    def to_dict(self) -> dict[str, Any]:
        return {
            "flow": self.flow,
            "before": self.before,
            "after": self.after,
            "params": [p.__dict__ | {"same": p.same} for p in self.params],
            "phases": [p.__dict__ for p in self.phases],
            "outputs": [o.__dict__ for o in self.outputs],
        }


def compare(before: RunHandle, after: RunHandle) -> Comparison:
    """What changed from run ``before`` to run ``after`` (two runs of one flow)."""
    return Comparison(
        flow=after.flow.name,
        before=before.id,
        after=after.id,
        params=param_changes(before.state.params, after.state.params),
        phases=phase_changes(before, after),
        outputs=output_changes(before, after),
    )


def param_changes(before: dict[str, Any], after: dict[str, Any]) -> list[ParamChange]:
    found = []
    for name in sorted(set(before) | set(after)):
        missing = "before" if name not in before else ("after" if name not in after else "")
        found.append(ParamChange(name, before.get(name), after.get(name), missing))
    return found


def how_it_ran(p: PhaseState | None) -> str:
    if p is None:
        return "absent"
    if p.status == "done":
        return "reused" if p.reused else "ran"
    return p.status


def phase_changes(before: RunHandle, after: RunHandle) -> list[PhaseChange]:
    found = []
    for phase in _phase_ids(before, after):
        a, b = _phase(before, phase), _phase(after, phase)
        definitions = [p.digests.get("definition") if p else None for p in (a, b)]
        found.append(
            PhaseChange(
                phase,
                how_it_ran(a),
                how_it_ran(b),
                definition_changed=None not in definitions and definitions[0] != definitions[1],
                seconds=(a.seconds if a else None, b.seconds if b else None),
            )
        )
    return found


def output_changes(before: RunHandle, after: RunHandle) -> list[OutputChange]:
    found = []
    for phase in _phase_ids(before, after):
        names = _outputs(before, phase) + [
            n for n in _outputs(after, phase) if n not in _outputs(before, phase)
        ]
        for name in names:
            found.append(_output(before, after, phase, name))
    return found


def _output(before: RunHandle, after: RunHandle, phase: str, name: str) -> OutputChange:
    old, new = _digest(before, name), _digest(after, name)
    if old is None or new is None:
        state = {(True, True): "absent", (True, False): "only after", (False, True): "only before"}
        return OutputChange(phase, name, state[(old is None, new is None)])
    if old == new:
        return OutputChange(phase, name, "same")
    change = OutputChange(phase, name, "differs")
    if name.lower().endswith(tuple(TABULAR)):
        _table(change, before, after)
    return change


def _table(change: OutputChange, before: RunHandle, after: RunHandle) -> None:
    """The rows of a table output added, removed and changed (by key when it has one)."""
    try:
        old = checks.read(before.paths.out(change.name))
        new = checks.read(after.paths.out(change.name))
        if max(len(old), len(new)) > checks.MAX_BYTES:
            raise checks.Unreadable(f"over the {checks.MAX_BYTES:,} bytes a table diff reads")
        key = _key(after, change.phase, change.name)
        if key is None:
            if max(len(old), len(new)) > MAX_UNKEYED:
                raise checks.Unreadable(
                    f"no key declared and over {MAX_UNKEYED >> 20} MiB: declare key: under its "
                    "checks in flow.yaml to compare its rows by key"
                )
            _by_row(change, edits.diff_tables(change.name, old, new))
        else:
            change.key = key
            old, new = unshared(old, new)
            _by_key(change, carry.changes_by_key(change.name, key, old, new))
    except (OSError, checks.Unreadable) as exc:
        change.problem = str(exc) or type(exc).__name__


def unshared(old: bytes, new: bytes) -> tuple[bytes, bytes]:
    """Both tables without the data rows the other holds byte for byte: a row both runs
    wrote alike is neither added, removed nor changed, so the keyed diff reads only the rest
    (a million-row table with a thousand changed rows parses two thousand). A table with a
    quote is left whole (a quoted field may hold a newline: its rows are not its lines)."""
    if b'"' in old or b'"' in new:
        return old, new
    a, b = old.split(b"\n"), new.split(b"\n")
    in_a, in_b = set(a[1:]), set(b[1:])
    in_a.discard(b"")
    in_b.discard(b"")
    rows_a = [r for r in a[1:] if r and r not in in_b]
    rows_b = [r for r in b[1:] if r and r not in in_a]
    return b"\n".join([a[0], *rows_a, b""]), b"\n".join([b[0], *rows_b, b""])


def _by_row(change: OutputChange, diff: dict[str, Any]) -> None:
    if "problem" in diff:
        change.problem = str(diff["problem"])
        return
    change.added, change.removed, change.changed = diff["added"], diff["removed"], diff["changed"]
    for cell in diff["cells"]:
        change.cells.append({"row": f"row {cell['row']}", **{k: cell[k] for k in CELL}})


CELL = ("column", "old", "new")


def _by_key(change: OutputChange, found: list[carry.Edit]) -> None:
    key = change.key or []
    for row_key, old, new in found:
        label = ", ".join(f"{k}={v}" for k, v in zip(key, row_key, strict=True))
        if old is None or new is None:
            kind = "added" if old is None else "removed"
            setattr(change, kind, getattr(change, kind) + 1)
            if len(change.rows) < MAX_CELLS:
                change.rows.append({"row": label, "change": kind})
            continue
        change.changed += 1
        for column, value in new.items():
            if old.get(column, "") != value and len(change.cells) < MAX_CELLS:
                change.cells.append(
                    {
                        "row": label,
                        "column": column,
                        "old": old.get(column, "")[:200],
                        "new": value[:200],
                    }  # fmt: skip
                )


def _key(run: RunHandle, phase: str, name: str) -> list[str] | None:
    try:
        return carry.key_of(run.flow.phase(phase), name)
    except KeyError:
        return None


def _phase_ids(before: RunHandle, after: RunHandle) -> list[str]:
    ids = [p.id for p in after.state.phases]
    return ids + [p.id for p in before.state.phases if p.id not in ids]


def _phase(run: RunHandle, phase: str) -> PhaseState | None:
    return next((p for p in run.state.phases if p.id == phase), None)


def _outputs(run: RunHandle, phase: str) -> list[str]:
    try:
        return list(run.flow.phase(phase).outputs)
    except KeyError:
        return []


def _digest(run: RunHandle, name: str) -> str | None:
    """The sha256 of the run's output ``name`` as it is now (None when it has none)."""
    try:
        return sha256_of(run.paths.out(name))
    except OSError:
        return None
