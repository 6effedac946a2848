"""flow.yaml ``checks:``: what a declared table must satisfy, after its phase and after every
edit at a Gate.

```yaml
checks:
  review.csv: {columns: [order_id, action], unique: [order_id], not_null: [action],
               values: {action: [keep, drop]}, min_rows: 1, max_rows: 100000,
               dtype: {amount: number}, script: checks/review.py, same_columns: true}
```

``dtype`` is one of ``integer``, ``number``, ``bool``, ``date``, ``string``; an empty cell is
left to ``not_null``. ``script`` is a flow file run with the table's name as ``sys.argv[1]``
and the table in its working directory; it fails the check by raising (or exiting non-zero)
with a message. After a phase it runs in a fresh kernel of the run's sandbox; at a Gate in a
local Python process, in a temporary folder holding only a copy of the table.
``same_columns`` (default true): at a Gate, an edited table keeps the header the phase wrote.

flow.yaml's ``checks:`` are read and validated by ``check_spec``; this module evaluates them.
A table at a Gate must still parse: every row as many fields as the header, no quote left
open. Every check reads at most ``MAX_BYTES``; a larger table fails its checks saying so.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from sandbox.paths import confined

from .check_spec import CHECK_KEYS, DTYPES, TABULAR, validate
from .digest import sha256_of
from .model import Flow, Phase

# flow.yaml's part is in check_spec, a file's sha256 in digest
__all__ = ["CHECK_KEYS", "DTYPES", "TABULAR", "sha256_of", "validate"]

MAX_BYTES = 256 * 1024 * 1024
MAX_SHOWN_ROWS = 5
SCRIPT_TIMEOUT = 120.0
BOOLS = {"true", "false", "0", "1", "yes", "no", "t", "f", "y", "n"}


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


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)  # where each data row starts (1-based)


class Unreadable(Exception):
    """A table that does not parse (or is too large to check)."""


# --- reading a table -------------------------------------------------------------------------


def parse(data: bytes, name: str) -> Table:
    """The rows of a .csv/.tsv: strict, every row as wide as the header; else Unreadable."""
    if len(data) > MAX_BYTES:
        raise Unreadable(f"{name} is {len(data):,} bytes, over the {MAX_BYTES:,} checks read")
    text = data.decode("utf-8-sig", errors="replace")
    delimiter = TABULAR.get(Path(name).suffix.lower(), ",")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    rows: list[list[str]] = []
    starts: list[int] = []
    try:
        while True:
            start = reader.line_num + 1  # a quoted field may span lines: the row starts here
            try:
                row = next(reader)
            except StopIteration:
                break
            if row:
                rows.append(row)
                starts.append(start)
    except csv.Error as exc:
        raise Unreadable(f"{name} does not parse near line {reader.line_num}: {exc}") from None
    if not rows:
        return Table(header=[])
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
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        return fh.read(MAX_BYTES + 1)


# --- evaluating ------------------------------------------------------------------------------


def evaluate(
    name: str, spec: dict[str, Any], data: bytes, *, original: bytes | None = None
) -> list[Failure]:
    """The declarative checks of ``spec`` on table ``data`` (not ``script``). With
    ``original`` (the phase's version, at a Gate) the table must parse and, unless
    ``same_columns: false``, keep its header."""
    tabular = Path(name).suffix.lower() in TABULAR
    if not tabular or (len(data) > MAX_BYTES and not spec):
        return []  # a table too large to read whole is checked only where flow.yaml asks
    try:
        table = parse(data, name)
    except Unreadable as exc:
        return [Failure(name, "parse", str(exc))]
    failures: list[Failure] = []
    if original is not None and spec.get("same_columns", True):
        try:
            before = parse(original, name).header
        except Unreadable:
            before = table.header
        if before != table.header:
            failures.append(
                Failure(name, "same_columns", f"the columns were {before}, now {table.header}")
            )
    failures += _declared(name, spec, table)
    return failures


def _declared(name: str, spec: dict[str, Any], t: Table) -> list[Failure]:
    out: list[Failure] = []
    if "columns" in spec:
        missing = [c for c in spec["columns"] if c not in t.header]
        if missing:
            out.append(Failure(name, "columns", f"missing column(s) {missing}; has {t.header}"))
    index = {c: i for i, c in enumerate(t.header)}

    def col(check: str, column: str) -> int | None:
        if column not in index:
            out.append(Failure(name, check, "no such column", column=column))
            return None
        return index[column]

    for column in spec.get("unique", []):
        i = col("unique", column)
        if i is not None:
            seen: set[str] = set()
            bad = []
            for n, row in enumerate(t.rows, start=1):
                if row[i] in seen:
                    bad.append(n)
                seen.add(row[i])
            _add(out, t, name, "unique", column, bad, "repeated values")
    for column in spec.get("not_null", []):
        i = col("not_null", column)
        if i is not None:
            bad = [n for n, row in enumerate(t.rows, start=1) if not row[i].strip()]
            _add(out, t, name, "not_null", column, bad, "empty cells")
    for column, allowed in spec.get("values", {}).items():
        i = col("values", column)
        if i is not None:
            ok = set(allowed)
            bad = [n for n, row in enumerate(t.rows, start=1) if row[i] not in ok]
            _add(out, t, name, "values", column, bad, f"values not in {allowed}")
    for column, kind in spec.get("dtype", {}).items():
        i = col("dtype", column)
        if i is not None:
            bad = [
                n
                for n, row in enumerate(t.rows, start=1)
                if row[i].strip() and not _is(kind, row[i].strip())
            ]
            _add(out, t, name, "dtype", column, bad, f"values that are not {kind}")
    if "min_rows" in spec and len(t.rows) < spec["min_rows"]:
        out.append(Failure(name, "min_rows", f"{len(t.rows)} rows, at least {spec['min_rows']}"))
    if "max_rows" in spec and len(t.rows) > spec["max_rows"]:
        out.append(Failure(name, "max_rows", f"{len(t.rows)} rows, at most {spec['max_rows']}"))
    return out


def _add(
    out: list[Failure], t: Table, name: str, check: str, column: str, bad: list[int], what: str
) -> None:
    if bad:
        shown = bad[:MAX_SHOWN_ROWS]
        out.append(
            Failure(
                name,
                check,
                f"{len(bad)} row(s) with {what}",
                column=column,
                rows=tuple(shown),
                count=len(bad),
                lines=tuple(t.lines[n - 1] for n in shown if n - 1 < len(t.lines)),
            )
        )


def _is(kind: str, value: str) -> bool:
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


# --- scripts ---------------------------------------------------------------------------------


def script_locally(flow: Flow, name: str, script: str, data: bytes) -> list[Failure]:
    """Run a ``script:`` check in a local Python process, in a temp folder holding ``name``."""
    import shutil  # a process and a folder only for a script check: `praxis check` needs none
    import subprocess
    import sys
    import tempfile

    code = confined(flow.root, script)
    with tempfile.TemporaryDirectory(prefix="praxis-check-") as tmp:
        (Path(tmp) / Path(name).name).write_bytes(data)
        shutil.copyfile(code, Path(tmp) / ".check.py")
        try:
            done = subprocess.run(
                [sys.executable, "-I", ".check.py", Path(name).name],
                cwd=tmp,
                capture_output=True,
                timeout=SCRIPT_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return [Failure(name, "script", f"{script} took over {SCRIPT_TIMEOUT:.0f} s")]
    if done.returncode == 0:
        return []
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines() or ["(no message)"]
    return [Failure(name, "script", f"{script}: {lines[-1][:500]}")]


def script_in_kernel(sandbox: Any, flow: Flow, name: str, script: str) -> list[Failure]:
    """Run a ``script:`` check in a fresh kernel of the run's sandbox (the table is in its
    working directory, as the phase left it)."""
    text = confined(flow.root, script).read_text(encoding="utf-8", errors="replace")
    setup = f"import sys\nsys.argv = [{script!r}, {name!r}]\n"
    kernel = sandbox.kernel()
    try:
        result = kernel.execute(setup + text, timeout=SCRIPT_TIMEOUT)
    finally:
        kernel.shutdown()
    if getattr(result, "status", "ok") == "ok":
        return []
    message = f"{result.ename}: {result.evalue}" if result.evalue else str(result.ename)
    return [Failure(name, "script", f"{script}: {message[:500]}")]


# --- where checks run ------------------------------------------------------------------------


def after_phase(run: Any, phase: Phase, sandbox: Any = None) -> None:
    """Every check of ``phase``'s outputs, as the phase wrote them; PhaseError on the first
    that fails (naming the check, the column and up to 5 rows)."""
    from .context import PhaseError

    failures: list[Failure] = []
    for name, spec in phase.checks.items():
        path = run.paths.out(name)
        failures += evaluate(name, spec, read(path))
        if not failures and "script" in spec and sandbox is not None:
            failures += script_in_kernel(sandbox, run.flow, name, spec["script"])
    if failures:
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        raise PhaseError(f"{failures[0]}{more}")


def check_data(
    flow: Flow, phase: Phase, name: str, data: bytes, original: bytes | None
) -> list[Failure]:
    """The checks an edit of output ``name`` at the Gate after ``phase`` must pass."""
    spec = phase.checks.get(name, {})
    failures = evaluate(name, spec, data, original=original)
    if not failures and "script" in spec:
        failures += script_locally(flow, name, spec["script"], data)
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
        if sha and sha == sha256_of(path):
            continue  # as the phase wrote it: it passed its checks after the phase
        original = None
        if sha and (run.paths.objects / sha).is_file():
            original = read(run.paths.objects / sha)
        spec = phase.checks.get(name, {})
        data = read(path)
        found = evaluate(name, spec, data, original=original)
        if not found and scripts and "script" in spec:
            found = script_locally(run.flow, name, spec["script"], data)
        failures += found
    return failures


def summary(failures: list[Failure]) -> str:
    return "; ".join(str(f) for f in failures[:3]) + (
        f" (and {len(failures) - 3} more)" if len(failures) > 3 else ""
    )


def dumps(failures: list[Failure]) -> str:
    return json.dumps([f.to_dict() for f in failures])
