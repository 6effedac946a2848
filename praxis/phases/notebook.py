"""``kind: notebook``: the phase's .ipynb runs cell by cell in a fresh kernel.

Markdown and raw cells go to the record as they are; code cells run in order and the record
shows each with its outputs, its own metadata kept, and ``metadata.praxis`` giving its number,
status (``ok``, ``error``, ``allowed-error``, ``exit``, ``not-run``) and start/end times.
Papermill style, the run's values are injected in a cell tagged ``injected-parameters`` right
after the first code cell tagged ``parameters`` (at the top when there is none): ``inputs``
(working input names), ``outputs`` (declared output names), ``run_id``, ``phase_id``, each
run parameter by its name, and ``params``/``note``. The record lists them under
``metadata.praxis.parameters``.

The notebook's own code cells are numbered from 1 (markdown cells and the injected cell do
not count), so "cell 3" is the third code cell a person sees in the notebook. Success is the
kernel's word: the first cell whose reply is an error stops the phase with
``<notebook> cell N: Error: message``, unless the cell is tagged ``raises-exception``. The
failing cell is marked where it is, with a link to it at the top of the record, and the cells
after it are kept without outputs. ``sys.exit()`` / ``sys.exit(0)`` ends the phase cleanly at
that cell; another exit code fails it. The record is saved as cells run (``checkpoints``),
so it can be read while a long phase runs.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import nbformat
from nbformat import NotebookNode

from praxis.flows import notebook_check
from praxis.flows.context import PhaseContext, PhaseError
from praxis.flows.events import CodeRan
from praxis.flows.layout import run_paths
from sandbox import ExecResult, ExecTimeout, SandboxError

from .checkpoints import Checkpoints

PARAMETERS = "parameters"
INJECTED = "injected-parameters"
RAISES = "raises-exception"  # nbclient's tag: this cell is expected to fail
ERROR_CELL = "praxis-error-cell"  # the record's own markers of the failing cell
STALE_MARKERS = (ERROR_CELL, "papermill-error-cell-tag")  # dropped when a record runs again
ANCHOR = "praxis-failed-cell"


@dataclass(frozen=True)
class Step:
    """One cell to put in the record: ``number`` is set for the notebook's own code cells."""

    cell: NotebookNode
    number: int | None = None
    injected: bool = False

    @property
    def label(self) -> str:
        return "injected parameters" if self.injected else f"cell {self.number}"


def run(ctx: PhaseContext) -> None:
    assert ctx.phase.script is not None
    nb = read_notebook(ctx)
    values = parameter_values(ctx)
    steps = plan(nb, parameters_source(values))
    ctx.record.adopt(dict(nb.metadata))
    ctx.record.metadata["parameters"] = values
    total = sum(1 for s in steps if s.number is not None)
    saves = Checkpoints(ctx.record, run_paths(ctx.flow.root, ctx.run_id).record(ctx.phase.id))
    for index, step in enumerate(steps):
        if step.cell.cell_type != "code":
            ctx.record.copy(step.cell)
            continue
        try:
            exited = run_cell(ctx, step, total, saves)
        except BaseException:
            _keep_rest(ctx, steps[index + 1 :])
            raise
        if exited:
            _keep_rest(ctx, steps[index + 1 :])
            break
    saves.save()  # the last cell's outputs, before the runner collects files


def read_notebook(ctx: PhaseContext) -> NotebookNode:
    try:
        return notebook_check.read(ctx.flow.root / str(ctx.phase.script))
    except notebook_check.NotebookProblem as exc:
        raise PhaseError(f"{ctx.phase.script}: {exc}") from exc


def parameter_values(ctx: PhaseContext) -> dict[str, Any]:
    """What the injected cell sets: the run's names, then each run parameter by name."""
    params = run_params(ctx)
    values: dict[str, Any] = {
        "inputs": list(ctx.phase.working),
        "outputs": list(ctx.phase.outputs),
        "run_id": ctx.run_id,
        "phase_id": ctx.phase.id,
    }
    for name, value in params.items():
        if name.isidentifier() and name not in values and not name.startswith("_"):
            values[name] = value
    values["params"] = params
    values["note"] = ctx.note
    return values


def run_params(ctx: PhaseContext) -> dict[str, Any]:
    """The run's parameters: the runner's (``ctx.params``) if it has them, else flow.yaml's."""
    for source in (getattr(ctx, "params", None), getattr(ctx.flow, "params", None)):
        if isinstance(source, Mapping):
            return {str(k): _literal_value(v) for k, v in source.items()}
    return {}


def parameters_source(values: Mapping[str, Any]) -> str:
    """The injected cell's code: the run's values as Python literals."""
    lines = ["# Parameters injected by praxis"]
    lines += [f"{name} = {value!r}" for name, value in values.items()]
    return "\n".join(lines) + "\n"


def plan(nb: NotebookNode, injected_source: str) -> list[Step]:
    """The notebook's cells in order, code cells numbered, the injected cell in place.

    Cells an earlier run added (an injected cell, error markers of praxis or papermill) are
    dropped, so a record or a papermill output notebook runs like its source.
    """
    injected = Step(nbformat.v4.new_code_cell(injected_source), injected=True)
    injected.cell.metadata["tags"] = [INJECTED]
    steps: list[Step] = []
    number = 0
    placed = False
    for cell in nb.cells:
        tags = _tags(cell)
        if INJECTED in tags or any(t in tags for t in STALE_MARKERS):
            continue
        if cell.cell_type != "code":
            steps.append(Step(cell))
            continue
        number += 1
        steps.append(Step(cell, number))
        if not placed and PARAMETERS in tags:
            steps.append(injected)
            placed = True
    if not placed:
        steps.insert(0, injected)
    return steps


def run_cell(ctx: PhaseContext, step: Step, total: int, saves: Checkpoints) -> bool:
    """Run one code cell; True when it ended the notebook with a clean ``sys.exit()``.

    Its record cell is appended first (and saved while it runs), so a timeout still shows it.
    """
    source = _text(step.cell.source)
    cell = ctx.record.copy(step.cell)
    cell.metadata["praxis"] = {} if step.number is None else {"cell": step.number}
    meta = cell.metadata["praxis"]  # the node stored (a NotebookNode copies what it is given)
    meta.update(status="running", started_at=_now())
    if step.number is not None:
        ctx.on_message(f"{ctx.phase.script}: cell {step.number} of {total}")
    started = time.time()
    try:
        with saves.around():
            result = ctx.kernel.execute(source, timeout=ctx.timeout, on_output=ctx.live)
    except SandboxError as exc:
        _ended(meta, started, "error")
        mark_failed(ctx, cell, step)
        ctx.emit(CodeRan(phase=ctx.phase.id, label=step.label, status="error", seconds=0.0))
        raise PhaseError(f"{ctx.phase.script} {step.label}: {_describe(exc)}") from exc
    ctx.record.outputs(cell, result)
    ctx.emit(
        CodeRan(phase=ctx.phase.id, label=step.label, status=result.status, seconds=result.wall)
    )
    if result.ok:
        _ended(meta, started, "ok")
        return False
    if RAISES in _tags(step.cell):
        _ended(meta, started, "allowed-error")
        return False
    if clean_exit(result):
        _ended(meta, started, "exit")
        return True
    _ended(meta, started, "error")
    mark_failed(ctx, cell, step)
    raise PhaseError(f"{ctx.phase.script} {step.label}: {error_text(result)}")


def clean_exit(result: ExecResult) -> bool:
    """``sys.exit()``, ``sys.exit(0)``, ``raise SystemExit``: the code chose to stop, and ok."""
    return result.ename == "SystemExit" and (result.evalue or "").strip() in ("", "0", "None")


def error_text(result: ExecResult) -> str:
    """``Name: message`` of a failed execute; a SystemExit names its exit code."""
    value = (result.evalue or "").strip()
    if result.ename == "SystemExit" and value.lstrip("-").isdigit():
        return f"SystemExit: exit code {value}"
    return f"{result.ename}: {result.evalue}"


def mark_failed(ctx: PhaseContext, cell: NotebookNode, step: Step) -> None:
    """Mark the failing cell where it is, and link to it from the top of the record."""
    cells = ctx.record.cells
    label = step.label
    anchor = nbformat.v4.new_markdown_cell(
        f'<span id="{ANCHOR}"></span>\n**praxis: the phase failed in {label}, below.**'
    )
    top = nbformat.v4.new_markdown_cell(
        f"**praxis: this phase failed in {label}**: [go to the failing cell](#{ANCHOR})"
    )
    for marker in (anchor, top):
        marker.metadata["tags"] = [ERROR_CELL]
    cells.insert(next(i for i, c in enumerate(cells) if c is cell), anchor)
    cells.insert(0, top)


def _keep_rest(ctx: PhaseContext, rest: list[Step]) -> None:
    """Cells after the one that stopped the notebook go to the record as they are, not run."""
    for step in rest:
        copied = ctx.record.copy(step.cell)
        if step.cell.cell_type == "code":
            meta = {"ran": False, "status": "not-run"}
            if step.number is not None:
                meta["cell"] = step.number
            copied.metadata["praxis"] = meta


def _ended(meta: dict[str, Any], started: float, status: str) -> None:
    meta.update(status=status, ended_at=_now(), seconds=round(time.time() - started, 3))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _describe(exc: SandboxError) -> str:
    if isinstance(exc, ExecTimeout):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _literal_value(value: Any) -> Any:
    """A value whose repr is a Python literal (a YAML date becomes its ISO text)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_literal_value(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _literal_value(v) for k, v in value.items()}
    return str(value)


def _tags(cell: NotebookNode) -> list[str]:
    tags = cell.get("metadata", {}).get("tags", [])
    return [str(t) for t in tags] if isinstance(tags, list) else []


def _text(source: str | list[str]) -> str:
    return "".join(source) if isinstance(source, list) else str(source)
