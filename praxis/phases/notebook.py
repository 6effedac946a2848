"""``kind: notebook``: the phase's .ipynb runs cell by cell in a fresh kernel.

Markdown and raw cells go to the record as they are; code cells run in order and the record
shows each with its outputs. Papermill style, the run's values are injected in a cell tagged
``injected-parameters`` right after the first code cell tagged ``parameters`` (at the top
when there is none): ``inputs`` (working input names), ``outputs`` (declared output names),
``run_id`` and ``phase_id``.

The notebook's own code cells are numbered from 1 (markdown cells and the injected cell do
not count), so "cell 3" is the third code cell a person sees in the notebook. The first
error stops the phase with ``<notebook> cell N: Error: message``; the cells after it are kept
in the record without outputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import nbformat
from nbformat import NotebookNode

from praxis.flows.context import PhaseContext, PhaseError, PhaseOutcome
from praxis.flows.events import CodeRan
from sandbox import ExecTimeout, SandboxError

PARAMETERS = "parameters"
INJECTED = "injected-parameters"


@dataclass(frozen=True)
class Step:
    """One cell to put in the record: ``number`` is set for the notebook's own code cells."""

    cell: NotebookNode
    number: int | None = None
    injected: bool = False

    @property
    def label(self) -> str:
        return "injected parameters" if self.injected else f"cell {self.number}"


def run(ctx: PhaseContext) -> PhaseOutcome:
    assert ctx.phase.script is not None
    nb = read_notebook(ctx)
    steps = plan(nb, parameters_source(ctx))
    total = sum(1 for s in steps if s.number is not None)
    for index, step in enumerate(steps):
        if step.cell.cell_type != "code":
            ctx.record.copy(step.cell)
            continue
        try:
            run_cell(ctx, step, total)
        except BaseException:
            _keep_rest(ctx, steps[index + 1 :])
            raise
    return PhaseOutcome(protected=set(ctx.phase.outputs))


def read_notebook(ctx: PhaseContext) -> NotebookNode:
    path = ctx.flow.root / str(ctx.phase.script)
    try:
        return nbformat.read(path, as_version=4)
    except (OSError, ValueError) as exc:  # nbformat raises ValueError subclasses for bad JSON
        raise PhaseError(
            f"{ctx.phase.script}: cannot read the notebook ({exc}); "
            "open it in Jupyter and save it again"
        ) from exc


def parameters_source(ctx: PhaseContext) -> str:
    """The injected cell's code: the run's values as Python literals."""
    values = {
        "inputs": list(ctx.phase.working),
        "outputs": list(ctx.phase.outputs),
        "run_id": ctx.run_id,
        "phase_id": ctx.phase.id,
    }
    lines = ["# Parameters injected by praxis"]
    lines += [f"{name} = {value!r}" for name, value in values.items()]
    return "\n".join(lines) + "\n"


def plan(nb: NotebookNode, injected_source: str) -> list[Step]:
    """The notebook's cells in order, code cells numbered, the injected cell in place."""
    injected = Step(nbformat.v4.new_code_cell(injected_source), injected=True)
    injected.cell.metadata["tags"] = [INJECTED]
    steps: list[Step] = []
    number = 0
    placed = False
    for cell in nb.cells:
        if INJECTED in _tags(cell):
            continue  # an executed copy (a record, papermill output): inject afresh
        if cell.cell_type != "code":
            steps.append(Step(cell))
            continue
        number += 1
        steps.append(Step(cell, number))
        if not placed and PARAMETERS in _tags(cell):
            steps.append(injected)
            placed = True
    if not placed:
        steps.insert(0, injected)
    return steps


def run_cell(ctx: PhaseContext, step: Step, total: int) -> None:
    """Run one code cell; its record cell is appended first, so a timeout still shows it."""
    source = _text(step.cell.source)
    meta: dict[str, object] = {} if step.number is None else {"cell": step.number}
    cell = ctx.record.code(source, None, tags=_tags(step.cell) or None, **meta)
    if step.number is not None:
        ctx.progress(f"{ctx.phase.script}: cell {step.number} of {total}")
    try:
        result = ctx.kernel.execute(source, timeout=ctx.timeout)
    except SandboxError as exc:
        ctx.emit(CodeRan(phase=ctx.phase.id, label=step.label, status="error", seconds=0.0))
        raise PhaseError(f"{ctx.phase.script} {step.label}: {_describe(exc)}") from exc
    ctx.record.outputs(cell, result)
    ctx.emit(
        CodeRan(phase=ctx.phase.id, label=step.label, status=result.status, seconds=result.wall)
    )
    if not result.ok:
        raise PhaseError(
            f"{ctx.phase.script} {step.label}: {result.ename}: {result.evalue}",
            detail="\n".join(result.traceback),
        )


def _keep_rest(ctx: PhaseContext, rest: list[Step]) -> None:
    """Cells after the one that failed go to the record as they are, without outputs."""
    for step in rest:
        if step.injected:
            ctx.record.code(_text(step.cell.source), tags=[INJECTED])
        else:
            copied = ctx.record.copy(step.cell)
            if step.number is not None:
                copied.metadata.setdefault("praxis", {}).update(cell=step.number, ran=False)


def _describe(exc: SandboxError) -> str:
    if isinstance(exc, ExecTimeout):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _tags(cell: NotebookNode) -> list[str]:
    tags = cell.get("metadata", {}).get("tags", [])
    return [str(t) for t in tags] if isinstance(tags, list) else []


def _text(source: str | list[str]) -> str:
    return "".join(source) if isinstance(source, list) else str(source)
