"""`praxis params`: a notebook's parameters (its cell tagged ``parameters``), papermill style.

Each top-level assignment in that cell is a parameter: ``threshold: float = 5.0  # note``
gives name, type (the annotation, else the type of a literal default), default (as written)
and help (the line's comment). Flow parameters (flow.yaml ``params:``) that the notebook does
not declare are reported: the injected cell still sets them, but the notebook never says it
reads them.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass
from typing import Any

from praxis.flows.definition import flow_files, notebook_check
from praxis.flows.model.flow import Flow, Phase
from sandbox.errors import SandboxError

from .kinds import NotebookSpec, ScriptSpec

TAG = "parameters"
INJECTED_NAMES = ("inputs", "outputs", "run_id", "phase_id", "params", "note")


@dataclass(frozen=True)
class Parameter:
    name: str
    type: str
    default: str
    help: str = ""

    def line(self) -> str:
        text = f"  {self.name}: {self.type} (default {self.default})"
        return f"{text}  {self.help}" if self.help else text


@dataclass(frozen=True)
class NotebookParameters:
    """What one notebook phase declares; ``cell`` is None when no cell is tagged."""

    phase: Phase
    cell: int | None  # the code cell's number (1-based), as praxis names cells
    parameters: tuple[Parameter, ...]
    problem: str | None = None  # the cell could not be read as Python

    @property
    def names(self) -> set[str]:
        return {p.name for p in self.parameters}


def of_phase(flow: Flow, phase: Phase) -> NotebookParameters:
    """The parameters of a notebook phase; NotebookProblem when the file cannot be run."""
    nb = notebook_check.read_flow(flow.root, phase.spec_as(NotebookSpec).script)
    number = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        number += 1
        tags = cell.get("metadata", {}).get("tags", [])
        if isinstance(tags, list) and TAG in tags:
            source = "".join(cell.source) if isinstance(cell.source, list) else cell.source
            try:
                found = tuple(parse(source))
            except SyntaxError as exc:
                return NotebookParameters(phase, number, (), f"cannot parse it: {exc.msg}")
            return NotebookParameters(phase, number, found)
    return NotebookParameters(phase, None, ())


def parse(source: str) -> list[Parameter]:
    """The top-level assignments of ``source`` as parameters, in order."""
    tree = ast.parse(source)
    comments = _comments(source)
    found: list[Parameter] = []
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names, value = [node.target.id], node.value
            kind = ast.get_source_segment(source, node.annotation) or "?"
        elif isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            names, value = [t.id for t in node.targets if isinstance(t, ast.Name)], node.value
            kind = _type_of(value)
        else:
            continue
        default = ast.get_source_segment(source, value) if value is not None else None
        default = " ".join(default.split()) if default and "\n" in default else default
        note = comments.get(getattr(node, "end_lineno", node.lineno) or node.lineno, "")
        for name in names:
            found.append(Parameter(name, kind, default or "none", note))
    return found


def flow_params(flow: Flow) -> dict[str, Any]:
    """flow.yaml ``params:`` (empty when the flow has none, or this version reads none)."""
    params = getattr(flow, "params", None)
    return dict(params) if isinstance(params, dict) else {}


def report(flow: Flow, phase_id: str | None = None) -> tuple[list[str], list[str]]:
    """(lines, warnings) for `praxis params`: every notebook phase, or the one named."""
    phases = [flow.phase(phase_id)] if phase_id else [p for p in flow.phases]
    notebooks = [p for p in phases if p.kind == "notebook"]
    if phase_id and not notebooks:
        raise ValueError(
            f"phase {phase_id!r} is a {phases[0].kind} phase; only notebook phases have "
            "a parameters cell"
        )
    if not notebooks:
        return [f"{flow.name}: no notebook phases"], []
    wanted = flow_params(flow)
    lines: list[str] = []
    warnings: list[str] = []
    for phase in notebooks:
        found = of_phase(flow, phase)
        where = f"{phase.spec_as(NotebookSpec).script} (phase {phase.id})"
        if found.cell is None:
            lines.append(f"{where}: no cell tagged 'parameters'; values are injected at the top")
        elif found.problem:
            lines.append(f"{where}: cell {found.cell} is tagged 'parameters' but {found.problem}")
        else:
            lines.append(f"{where}: parameters of cell {found.cell}")
            lines += [p.line() for p in found.parameters] or ["  (none: the cell assigns nothing)"]
        lines.append(f"  praxis also sets: {', '.join(INJECTED_NAMES)}")
    for name in unread(flow, wanted):
        warnings.append(
            f"warning: flow parameter {name!r} is read by no phase (no script, notebook or "
            f"prompt names it); read it as params[{name!r}], or add `{name} = {wanted[name]!r}` "
            "to a notebook's parameters cell"
        )
    return lines, warnings


def unread(flow: Flow, names: dict[str, Any]) -> list[str]:
    """The flow parameters no phase names. Python sources (scripts, notebooks' code cells)
    read a name that appears in them as a name or a string; an agent's prompt is given every
    parameter, so a flow with an agent phase reads them all."""
    left = dict.fromkeys(names)
    for phase in flow.phases:
        if not left:
            break
        if phase.kind == "agent":
            return []
        for name in _named_in(flow, phase) & left.keys():
            del left[name]
    return list(left)


def _named_in(flow: Flow, phase: Phase) -> set[str]:
    """Names and string literals of a script or notebook phase's code (empty if unreadable)."""
    try:
        if isinstance(phase.spec, NotebookSpec):
            nb = notebook_check.read_flow(flow.root, phase.spec.script)
            sources = [_text(c.source) for c in nb.cells if c.cell_type == "code"]
        elif isinstance(phase.spec, ScriptSpec):
            sources = [_read_script(flow, phase.spec.script)]
        else:
            return set()  # a plug-in kind's code: its own to say
    except (OSError, ValueError, SandboxError, notebook_check.NotebookProblem):
        return set()  # `praxis check` says why it cannot be read
    found: set[str] = set()
    for source in sources:
        found |= _tokens(source)
    return found


def _read_script(flow: Flow, name: str) -> str:
    return flow_files.read(flow.root, name, notebook_check.MAX_BYTES).decode("utf-8", "replace")


def _text(source: Any) -> str:
    return "".join(source) if isinstance(source, list) else str(source)


def _tokens(source: str) -> set[str]:
    found: set[str] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.NAME:
                found.add(tok.string)
            elif tok.type == tokenize.STRING:
                try:
                    value = ast.literal_eval(tok.string)
                except (ValueError, SyntaxError, MemoryError, RecursionError):
                    continue
                if isinstance(value, str):
                    found.add(value)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass  # IPython magics, or a cell cut short: what was read so far counts
    return found


def _type_of(value: ast.expr | None) -> str:
    try:
        literal = ast.literal_eval(value) if value is not None else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return "?"
    return "None" if literal is None else type(literal).__name__


def _comments(source: str) -> dict[int, str]:
    """Line number -> the text of a comment that ends that line."""
    found: dict[int, str] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                found[tok.start[0]] = tok.string.lstrip("#").strip()
    except (tokenize.TokenError, SyntaxError):
        pass
    return found
