"""flow.yaml ``checks:``: what a declared table must satisfy, after its phase and after every
edit at a Gate.

```yaml
checks:
  review.csv: {columns: [order_id, action], unique: [order_id], not_null: [action],
               values: {action: [keep, drop]}, min_rows: 1, max_rows: 100000,
               dtype: {amount: number}, script: checks/review.py, same_columns: true,
               key: [order_id]}
```

``key`` names the columns that together identify a row (no two rows share them, none is
empty); ``rerun --keep-edits`` re-applies a Gate edit to the new output by it (without
``key``, by the first ``unique`` column).

``dtype`` is one of ``integer``, ``number``, ``bool``, ``date``, ``string``; an empty cell is
left to ``not_null``. ``script`` is a flow file run with the table's name as ``sys.argv[1]``
and the table in its working directory; it fails the check by raising (or exiting non-zero)
with a message. It never runs on the host: after a phase in a fresh kernel of the run's
sandbox, at a Gate in a fresh kernel of a sandbox opened for the check, holding only a copy
of the table (check_sandbox).
``same_columns`` (default true): at a Gate, an edited table keeps the header the phase wrote.

flow.yaml's ``checks:`` are read and validated by ``check_spec``; this module evaluates them.
A table at a Gate must still parse: every row as many fields as the header, no quote left
open. Every check reads at most ``MAX_BYTES``; a larger table fails its checks saying so.
A table is read as a stream (``csvread``: lines, records and fields bounded), in one pass.
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from sandbox.files import open_nofollow

from ..definition.digest import sha256_of
from ..model import check_rules as rules
from ..model.check_rules import MAX_SHOWN_ROWS, Failure
from ..model.check_spec import CHECK_KEYS, DTYPES, TABULAR, validate
from ..model.flow import Flow, Phase
from ..store import csvread
from ..store.csvread import Unreadable
from .check_sandbox import SCRIPT_TIMEOUT, prologue, run_at_gate, script_text
from .checked import evaluated  # its results, kept by the file's version
from .context import PhaseError

# flow.yaml's part is in check_spec, what fails a check and what it says in check_rules, a
# file's sha256 in digest
__all__ = [
    "CHECK_KEYS",
    "DTYPES",
    "MAX_SHOWN_ROWS",
    "TABULAR",
    "Failure",
    "Unreadable",
    "sha256_of",
    "validate",
]

MAX_BYTES = 256 * 1024 * 1024
MAX_UNIQUE_ROWS = 4_000_000  # rows a unique check hashes (8 bytes each, 3x while sorted)


# --- reading a table (streamed: csvread) -----------------------------------------------------


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)  # where each data row starts (1-based)


def parse(data: bytes, name: str) -> Table:
    """The rows of a .csv/.tsv, all held (an edit's changed region): strict, every row as
    wide as the header, lines and records bounded as ``csvread`` reads them; else Unreadable."""
    if len(data) > MAX_BYTES:
        raise Unreadable(f"{name} is {len(data):,} bytes, over the {MAX_BYTES:,} checks read")
    with csvread.opened(data) as fh:
        found = list(csvread.numbered(fh, name))
    if not found:
        return Table(header=[])
    starts, rows = [n for n, _ in found], [row for _, row in found]
    table = Table(header=rows[0], rows=rows[1:], lines=starts[1:])
    for i, row in enumerate(table.rows, start=1):
        if len(row) != len(table.header):
            raise Unreadable(
                f"{name}: data row {i} (line {table.lines[i - 1]}) has {len(row)} fields, "
                f"the header {len(table.header)}"
            )
    return table


def read(path: Path) -> bytes:
    """At most ``MAX_BYTES + 1`` bytes of ``path`` (never through a link)."""
    fd = open_nofollow(path)
    with os.fdopen(fd, "rb") as fh:
        return fh.read(MAX_BYTES + 1)


# --- evaluating ------------------------------------------------------------------------------


def evaluate(
    name: str,
    spec: dict[str, Any],
    data: bytes | Path,
    *,
    original: bytes | Path | None = None,
) -> list[Failure]:
    """The declarative checks of ``spec`` on table ``data`` (its bytes, or a host path read
    as a stream; not ``script``). With ``original`` (the phase's version, at a Gate) the
    table must parse and, unless ``same_columns: false``, keep its header."""
    tabular = Path(name).suffix.lower() in TABULAR
    size = csvread.size_of(data) if tabular else 0
    if not tabular or (size > MAX_BYTES and not spec):
        return []  # a table too large to read whole is checked only where flow.yaml asks
    if size > MAX_BYTES:
        too_large = f"{name} is {size:,} bytes, over the {MAX_BYTES:,} checks read"
        return [Failure(name, "parse", too_large)]
    try:
        with csvread.opened(data) as fh:
            header, found = _declared(name, spec, csvread.numbered(fh, name))
    except Unreadable as exc:
        return [Failure(name, "parse", str(exc))]
    failures: list[Failure] = []
    if original is not None and spec.get("same_columns", True):
        try:
            before = csvread.header(original, name)
        except Unreadable:
            before = header
        if before != header:
            failures.append(
                Failure(name, "same_columns", f"the columns were {before}, now {header}")
            )
    return failures + found


class _Bad:
    """Rows failing one check on one column: how many, and the first few."""

    def __init__(self, check: str, column: str, what: str) -> None:
        self.check, self.column, self.what = check, column, what
        self.count = 0
        self.rows: list[int] = []
        self.lines: list[int] = []  # where each of ``rows`` starts

    def add(self, n: int, line: int) -> None:
        self.count += 1
        if len(self.rows) < MAX_SHOWN_ROWS:
            self.rows.append(n)
            self.lines.append(line)


Test = tuple[int, _Bad, Callable[[str], bool]]


def _declared(
    name: str, spec: dict[str, Any], rows: Iterator[tuple[int, list[str]]]
) -> tuple[list[str], list[Failure]]:
    """The header and the failures of ``spec``'s checks, in one pass over ``rows`` ((line,
    record) pairs; memory: a counter a check, and for ``unique`` an 8-byte hash and the
    line of each row, at most MAX_UNIQUE_ROWS)."""
    header = next(rows, (0, []))[1]
    out: list[Failure] = rules.missing_columns(name, spec, header)
    index = {c: i for i, c in enumerate(header)}

    def col(check: str, column: str) -> int | None:
        if column not in index:
            out.append(rules.no_such_column(name, check, column))
            return None
        return index[column]

    unique = [
        (i, c, array("q")) for c in spec.get("unique", []) if (i := col("unique", c)) is not None
    ]
    tests = _tests(spec, col)
    key = [index[c] for c in spec.get("key", []) if c in index]
    if spec.get("key") and len(key) != len(spec["key"]):
        missing = [c for c in spec["key"] if c not in index]
        out.append(Failure(name, "key", f"no key column(s) {missing}"))
        key = []
    if key:
        unique.append((-1, "+".join(spec["key"]), array("q")))  # -1: the key's tuple
    empties = array("q")  # the rows whose key has an empty part
    starts = array("q")  # the line of each data row, for a unique check
    count = 0
    for count, (line, row) in enumerate(rows, start=1):
        if len(row) != len(header):
            raise Unreadable(
                f"{name}: data row {count} (line {line}) has {len(row)} fields, "
                f"the header {len(header)}"
            )
        for i, bad, failing in tests:
            if failing(row[i]):
                bad.add(count, line)
        if unique and count <= MAX_UNIQUE_ROWS:
            starts.append(line)
            for i, _column, hashes in unique:
                hashes.append(hash(tuple(row[k] for k in key)) if i < 0 else hash(row[i]))
            if key and not all(row[k].strip() for k in key):
                empties.append(count)
    for i, column, hashes in unique:
        check = "key" if i < 0 else "unique"
        if count > MAX_UNIQUE_ROWS:
            over = f"{count:,} rows, over the {MAX_UNIQUE_ROWS:,} a {check} check reads"
            out.append(Failure(name, check, over, column=column))
            continue
        if i < 0:  # a repeated key, or one with an empty part
            bad = _Bad("key", column, rules.BAD_KEY)
            for n in sorted({*empties, *_repeated(hashes)}):
                bad.add(n, starts[n - 1])
            tests.append((0, bad, bool))
            continue
        bad = _Bad("unique", column, rules.REPEATED)
        for n in _repeated(hashes):
            bad.add(n, starts[n - 1])
        tests.append((i, bad, bool))
    for _i, bad, _failing in sorted(tests, key=lambda t: rules.ORDER.index(t[1].check)):
        if bad.count:
            out.append(
                rules.rows_failure(
                    name, bad.check, bad.column, bad.what, bad.rows, bad.count, bad.lines
                )
            )
    return header, out + rules.row_count(name, spec, count)


def _tests(spec: dict[str, Any], col: Callable[[str, str], int | None]) -> list[Test]:
    """The cell rules of ``spec`` (``check_rules``): (column index, its failures, the test)."""
    tests: list[Test] = []
    for rule in rules.cell_rules(spec):
        if (i := col(rule.check, rule.column)) is not None:
            tests.append((i, _Bad(rule.check, rule.column, rule.what), rule.failing))
    return tests


def _repeated(hashes: array[int]) -> Iterator[int]:
    """The 1-based rows whose value an earlier row had (by 64-bit hash), in row order."""
    import numpy as np  # only for a unique check

    values = np.frombuffer(hashes, dtype=np.int64)
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    later = order[1:][ranked[1:] == ranked[:-1]]
    later.sort()
    for n in later:
        yield int(n) + 1


# --- scripts ---------------------------------------------------------------------------------


def script_at_gate(flow: Flow, name: str, script: str, data: bytes) -> list[Failure]:
    """Run a ``script:`` check on ``data`` in a sandbox opened for it (check_sandbox)."""
    why = run_at_gate(flow, name, script, data)
    return [] if why is None else [Failure(name, "script", why)]


def script_in_kernel(sandbox: Any, flow: Flow, name: str, script: str) -> list[Failure]:
    """Run a ``script:`` check in a fresh kernel of the run's sandbox (the table is in its
    working directory, as the phase left it)."""
    text = script_text(flow, script)
    kernel = sandbox.kernel()
    try:
        result = kernel.execute(prologue(script, name) + text, timeout=SCRIPT_TIMEOUT)
    finally:
        kernel.shutdown()
    if getattr(result, "status", "ok") == "ok":
        return []
    message = f"{result.ename}: {result.evalue}" if result.evalue else str(result.ename)
    return [Failure(name, "script", f"{script}: {message[:500]}")]


# --- where checks run ------------------------------------------------------------------------


def after_phase(run: Any, phase: Phase, sandbox: Any = None) -> None:
    """Every check of ``phase``'s outputs, as the phase wrote them; PhaseError naming every
    one that fails (each with its check, column and up to 5 rows), not only the first."""
    failures: list[Failure] = []
    for name, spec in phase.checks.items():
        path = run.paths.out(name)
        failures += evaluate(name, spec, path)
        if "script" in spec and sandbox is not None and not _unreadable(failures):
            failures += script_in_kernel(sandbox, run.flow, name, spec["script"])
    if failures:
        raise PhaseError(summary(failures))


def _unreadable(failures: list[Failure]) -> bool:
    """The table does not parse: a script check would only say so again."""
    return any(f.check == "parse" for f in failures)


def check_data(
    flow: Flow, phase: Phase, name: str, data: bytes, original: bytes | None
) -> list[Failure]:
    """The checks an edit of output ``name`` at the Gate after ``phase`` must pass."""
    spec = phase.checks.get(name, {})
    failures = evaluate(name, spec, data, original=original)
    if "script" in spec and not _unreadable(failures):
        failures += script_at_gate(flow, name, spec["script"], data)
    return failures


def gate_failures(run: Any, originals: dict[str, str], *, scripts: bool = True) -> list[Failure]:
    """The checks failing now on the writable outputs of the Gate the run waits at (an output
    as the phase wrote it passed them after the phase). ``originals``: output name -> sha256
    of the phase's version (its content is in objects/); ``scripts``: run script: checks."""
    state = run.state
    if state.waiting != "gate" or state.gate is None:
        return []
    phase = run.flow.phase(state.gate)
    failures: list[Failure] = []
    for name in phase.outputs:
        path = run.paths.out(name)
        if not path.is_file() or path.is_symlink():
            continue
        sha = originals.get(name)
        digest = partial(sha256_of, known=run.paths.hashes)
        if sha and sha == digest(path):
            continue  # as the phase wrote it: it passed its checks after the phase
        original = _stored(run, sha) if sha else None
        spec = phase.checks.get(name, {})
        found = evaluated(
            run.paths.checked,
            name,
            path,
            spec,
            sha,
            partial(evaluate, name, spec, path, original=original),
            digest=digest,
            stored=partial(_stored, run),
        )
        if scripts and "script" in spec and not _unreadable(found):
            found += script_at_gate(run.flow, name, spec["script"], read(path))
        failures += found
    return failures


def _stored(run: Any, sha: str) -> Path | None:
    """The path of version ``sha`` in the run's store, if it holds it."""
    try:
        path = run.paths.object(sha)
    except ValueError:
        return None
    return path if path.is_file() else None


def summary(failures: list[Failure]) -> str:
    """Every failure, each with its rows: "2 checks fail: (1) ...; (2) ..."."""
    if len(failures) == 1:
        return str(failures[0])
    items = "; ".join(f"({i}) {f}" for i, f in enumerate(failures, start=1))
    return f"{len(failures)} checks fail: {items}"


def dumps(failures: list[Failure]) -> str:
    return json.dumps([f.to_dict() for f in failures])
