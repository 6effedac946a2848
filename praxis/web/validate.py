"""Every save from the reviewer's page passes here before it is written.

``check_save`` turns the submitted edit into the bytes to write, or refuses it with a reason
a person can act on (their draft stays on the page). Today it checks that a table still is
one: it parses in the file's own dialect, with the same header and as many fields in each
row. Then the checks flow.yaml declares for the output (``checks:``) run on the bytes about
to be written, so a save that breaks them is refused the same way.
"""

from __future__ import annotations

from pathlib import Path

from praxis.flows.engine import checks
from praxis.flows.store.handle import RunHandle

from . import cellchecks, changes, csvedit, tables


def text_save(path: Path, text: str) -> bytes:
    """The bytes of a whole-file text edit of ``path``; BadEdit when it may not be saved."""
    if path.name.lower().endswith(".parquet"):
        raise tables.BadEdit(f"{path.name} is Parquet: it is read-only here; change it by hand")
    if tables.is_table(path.name):
        return tables.check_text(path, text)
    data = text.replace("\r\n", "\n")
    if _crlf(path):
        data = data.replace("\n", "\r\n")
    return data.encode("utf-8")


def stage_cells(
    run: RunHandle, path: Path, cells: dict[tuple[int, int], str], version: str
) -> tables.Staged:
    """A cell-level table edit streamed into a new file beside the run's outputs, checked
    against flow.yaml's checks (``check_cells``), for ``runner.edit``."""
    staged = tables.stage_cells(path, cells, run.root, version)
    try:
        check_cells(run, path, staged.path, cells)
    except BaseException:
        staged.path.unlink(missing_ok=True)
        raise
    return staged


def check_cells(
    run: RunHandle, path: Path, staged: Path, cells: dict[tuple[int, int], str]
) -> None:
    """``check_save`` for a cell edit: over the table's columnar copy with the cells
    replaced when the checks allow (``cellchecks``), else on the staged file's bytes."""
    gate = run.state.gate
    if gate is None or path.name not in run.flow.phase(gate).checks:
        return
    spec = run.flow.phase(gate).checks[path.name]
    idx = csvedit.index(path)
    failures = cellchecks.check_cells(idx, path.name, spec, tables.edits_of(cells))
    if failures is None:
        check_save(run, path.name, checks.read(staged))
    elif failures:
        raise tables.BadEdit(
            f"the edit breaks the checks flow.yaml declares: {checks.summary(failures)}"
        )


def check_save(run: RunHandle, name: str, data: bytes) -> None:
    """flow.yaml's ``checks:`` for output ``name`` of the Gate's phase, on the bytes about to
    be written; BadEdit naming the failed checks refuses the save (the draft stays)."""
    gate = run.state.gate
    if gate is None:
        return
    phase = run.flow.phase(gate)
    if name not in phase.checks:
        return
    kept = changes.phase_version(run, gate, run.state.phase(gate).attempt, name)
    original = kept.read_bytes() if kept is not None else None
    failures = checks.check_data(run.flow, phase, name, data, original)
    if failures:
        raise tables.BadEdit(
            f"the edit breaks the checks flow.yaml declares: {checks.summary(failures)}"
        )


def _crlf(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(65536)
    except OSError:
        return False
    return b"\r\n" in head
