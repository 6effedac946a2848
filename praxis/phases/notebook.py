"""``kind: notebook``: the phase's .ipynb runs cell by cell in a fresh kernel, as nbclient runs it.

Markdown and raw cells go to the record as they are; code cells run in order and the record
shows each with its outputs as Jupyter keeps them (``sandbox.collector``: nbclient's handling
of every message, a display updated in a later cell updated where it is shown), the kernel's
execution count, nbclient's ``metadata.execution`` timings, its own metadata kept, and
``metadata.praxis`` giving its number, status (``ok``, ``error``, ``allowed-error``, ``exit``,
``stopped``, ``skipped``, ``not-run``) and start/end times. As in nbclient, a blank cell and a
cell tagged ``skip-execution`` are not sent to the kernel and take no number.
Papermill style, the run's values are injected in a cell tagged ``injected-parameters`` right
after the first code cell tagged ``parameters`` (at the top when there is none): ``inputs``
(working input names), ``outputs`` (declared output names), ``run_id``, ``phase_id``, each
run parameter by its name, and ``params``/``note``. The record lists them under
``metadata.praxis.parameters``. The injected cell takes no execution count, so the notebook's
cells are numbered as Jupyter numbers them.

One number names a cell everywhere: ``cell 3`` in an error, ``In [3]`` in the record and on
the page (anchor ``#cell-3``), ``Cell In[3]`` in its traceback: the execution count. Success
is the kernel's word: the first cell whose reply is an error stops the phase with
``<notebook> cell N: Error: message``, unless the cell is tagged ``raises-exception`` or the
phase says ``notebook: {allow_errors: true}`` (nbclient's and papermill's ``allow_errors``).
The failing cell is marked where it is, with a link to it at the top of the record, and the
cells after it are kept without outputs. A cell stopped by the phase's timeout, a cancel,
Ctrl-C or the kernel's death keeps what it printed so far, and an error output says what
stopped it. ``sys.exit()`` / ``sys.exit(0)`` ends the phase cleanly at that cell; another exit
code fails it. The record is saved as cells run (``checkpoints``), so it can be read while a
long phase runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import nbformat
from nbformat import NotebookNode

from praxis.flows.definition import notebook_check
from praxis.flows.engine.context import PhaseContext, PhaseError
from praxis.flows.model.events import CodeRan
from praxis.flows.store.layout import run_paths
from praxis.terminal import received_signal
from sandbox import ExecResult, ExecTimeout, KernelDied, SandboxError

from .checkpoints import Checkpoints
from .kinds import NotebookSpec

log = logging.getLogger("praxis")

PARAMETERS = "parameters"
INJECTED = "injected-parameters"
RAISES = "raises-exception"  # nbclient's tag: this cell is expected to fail
SKIP = "skip-execution"  # nbclient's tag: this cell is not run
ERROR_CELL = "praxis-error-cell"  # the record's own markers of the failing cell
STALE_MARKERS = (ERROR_CELL, "papermill-error-cell-tag")  # dropped when a record runs again


@dataclass(frozen=True)
class Step:
    """One cell to put in the record. ``number`` is the execution count a code cell the
    notebook runs will take; ``skip`` says why a code cell is not run (``blank``,
    ``skip-execution``)."""

    cell: NotebookNode
    number: int | None = None
    injected: bool = False
    skip: str | None = None

    @property
    def label(self) -> str:
        return "injected parameters" if self.injected else f"cell {self.number}"


def anchor(number: int | None) -> str:
    """The record page's anchor of a code cell: ``cell-N`` by its execution count."""
    return f"cell-{number}" if number is not None else INJECTED


def run(ctx: PhaseContext) -> None:
    nb = read_notebook(ctx)
    values = parameter_values(ctx)
    steps = plan(nb, parameters_source(values))
    ctx.record.adopt(dict(nb.metadata))
    ctx.record.metadata["parameters"] = values
    total = sum(1 for s in steps if s.number is not None)
    saves = Checkpoints(ctx.record, run_paths(ctx.flow.root, ctx.run_id).record(ctx.phase.id))
    for index, step in enumerate(steps):
        if step.cell.cell_type != "code" or step.skip:
            copied = ctx.record.copy(step.cell)
            if step.skip:
                copied.metadata["praxis"] = {"status": "skipped", "skipped": step.skip}
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


def _spec(ctx: PhaseContext) -> NotebookSpec:
    return ctx.phase.spec_as(NotebookSpec)


def read_notebook(ctx: PhaseContext) -> NotebookNode:
    try:
        return notebook_check.read_flow(ctx.flow.root, _spec(ctx).script)
    except notebook_check.NotebookProblem as exc:
        raise PhaseError(f"{_spec(ctx).script}: {exc}") from exc


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
    """The notebook's cells in order, the code cells that run numbered as the kernel will
    count them (blank and ``skip-execution`` cells are not run), the injected cell in place.

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
        skip = "blank" if not _text(cell.source).strip() else SKIP if SKIP in tags else None
        if skip:
            steps.append(Step(cell, skip=skip))
        else:
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
        ctx.on_message(f"{_spec(ctx).script}: cell {step.number} of {total}")
    allowed = _spec(ctx).allow_errors or RAISES in _tags(step.cell)
    started = time.time()
    try:
        with saves.around():
            result = ctx.kernel.execute(
                source,
                timeout=ctx.timeout,
                on_output=ctx.live,
                store_history=not step.injected,  # the injected cell takes no number
                stop_on_error=not allowed,
            )
    except SandboxError as exc:
        stopped(ctx, cell, step, meta, started, _stop_output(exc), "error")
        ctx.emit(CodeRan(phase=ctx.phase.id, label=label(cell, step), status="error", seconds=0.0))
        raise PhaseError(f"{_spec(ctx).script} {label(cell, step)}: {_describe(exc)}") from exc
    except BaseException:  # Ctrl-C, SIGTERM, SIGHUP in this process: recorded, and raised on
        stopped(ctx, cell, step, meta, started, _signal_output(), "stopped")
        raise
    ctx.record.outputs(cell, result, kernel_count=True)
    if step.injected:
        cell.execution_count = None  # it took no count: In [ ], as papermill's is not counted
    elif isinstance(cell.execution_count, int):
        meta["cell"] = cell.execution_count  # the kernel's count names the cell
    name = label(cell, step)
    ctx.emit(CodeRan(phase=ctx.phase.id, label=name, status=result.status, seconds=result.wall))
    if result.ok:
        _ended(meta, started, "ok")
        return False
    if _cancelled(ctx):
        cell.outputs.append(_error_output("Cancelled", "stopped by `praxis cancel`"))
        _ended(meta, started, "stopped")
        mark_failed(ctx, cell, step)
        raise PhaseError(f"{_spec(ctx).script} {name}: stopped by praxis cancel")
    if allowed:
        _ended(meta, started, "allowed-error")
        return False
    if clean_exit(result):
        _ended(meta, started, "exit")
        return True
    _ended(meta, started, "error")
    mark_failed(ctx, cell, step)
    raise PhaseError(f"{_spec(ctx).script} {name}: {error_text(result)}")


def label(cell: NotebookNode, step: Step) -> str:
    """How errors name a cell: by the execution count the record shows (``In [n]``)."""
    count = cell.get("execution_count")
    if step.injected or not isinstance(count, int):
        return step.label
    return f"cell {count}"


def stopped(
    ctx: PhaseContext,
    cell: NotebookNode,
    step: Step,
    meta: dict[str, Any],
    started: float,
    why: dict[str, Any],
    status: str,
) -> None:
    """A cell stopped before its reply: what it sent so far, then an error saying why."""
    try:
        partial = ctx.kernel.unfinished()
        if partial is not None:
            ctx.record.outputs(cell, partial, kernel_count=True)
        if step.injected:
            cell.execution_count = None
        elif cell.get("execution_count") is None:
            cell.execution_count = step.number  # the count it was given (In [n] agrees)
        cell.outputs.append(ctx.record.output(why))
        _ended(meta, started, status)
        mark_failed(ctx, cell, step)
    except Exception:  # the record of a stop must never hide the stop itself
        log.warning("the stopped cell's outputs are not all recorded", exc_info=True)


def _stop_output(exc: SandboxError) -> dict[str, Any]:
    """The error output saying what stopped a cell, named as nbclient names it."""
    if isinstance(exc, ExecTimeout):
        return _error_output("CellTimeoutError", f"{exc} (the phase's timeout)")
    if isinstance(exc, KernelDied):
        return _error_output("DeadKernelError", str(exc))
    return _error_output(type(exc).__name__, str(exc))


def _signal_output() -> dict[str, Any]:
    return _error_output("KeyboardInterrupt", f"stopped by {received_signal()} in the runner")


def _error_output(ename: str, evalue: str) -> dict[str, Any]:
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": [
        f"{ename}: {evalue}"]}  # fmt: skip


def _cancelled(ctx: PhaseContext) -> bool:
    return run_paths(ctx.flow.root, ctx.run_id).cancel_request.exists()


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
    """Mark the failing cell where it is, and link to it from the top of the record (the
    page's anchor of a cell is its number: ``#cell-3``)."""
    cells = ctx.record.cells
    name = label(cell, step)
    count = cell.get("execution_count")
    target = anchor(count if isinstance(count, int) and not step.injected else None)
    here = nbformat.v4.new_markdown_cell(f"**praxis: the phase failed in {name}, below.**")
    top = nbformat.v4.new_markdown_cell(
        f"**praxis: this phase failed in {name}**: [go to the failing cell](#{target})"
    )
    for marker in (here, top):
        marker.metadata["tags"] = [ERROR_CELL]
    cells.insert(next(i for i, c in enumerate(cells) if c is cell), here)
    cells.insert(0, top)


def _keep_rest(ctx: PhaseContext, rest: list[Step]) -> None:
    """Cells after the one that stopped the notebook go to the record as they are, not run."""
    for step in rest:
        copied = ctx.record.copy(step.cell)
        if step.cell.cell_type == "code":
            meta: dict[str, Any] = {"ran": False, "status": "not-run"}
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
