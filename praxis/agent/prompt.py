"""Everything the model sees: the system rules and the phase's task message.

The task message holds, in order: the task (the phase's prompt file), what the flow and the
phase are for (their ``description``), the reviewer's note when a Gate reopened the phase,
what the previous attempt left (its outputs, profiled or clipped like inputs, and a summary
of its tool calls) when the phase runs again, the run parameters, the declared outputs, the
working inputs (tabular ones as pandas profiles), the reference inputs (clipped at 20,000
characters with a marker), the prepared scripts and queries by name, and the limits. Files are
read on the host: a flow file from the flow folder, an earlier phase's output from the run's
``output/``.
"""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from praxis import parquet
from praxis.flows.definition import flow_files
from praxis.flows.engine.context import PhaseContext, PhaseError
from praxis.flows.model.events import PhaseStarted, ToolCalled
from praxis.flows.store.event_log import EventLog, EventLogCorrupt
from praxis.flows.store.layout import RunPaths
from sandbox import SandboxError
from sandbox.files import confined

from .extract import data_of, describe
from .spec import AgentSpec
from .tableprofile import profile as table_profile  # a row, byte and time budget

REFERENCE_CHARS = 20_000
PREVIOUS_CHARS = 5_000  # of each text output of the previous attempt
MAX_CALLS_SHOWN = 30
SCRIPT_CHARS = 4_000
SAMPLE_ROWS = 5
PROFILE_MAX_BYTES = 200 * 1024 * 1024
TABULAR = (".csv", ".tsv", ".parquet")

SYSTEM = """\
You are one phase of a praxis data flow. You work in a Jupyter kernel whose working \
directory holds the working inputs; files you write there (by relative name) are collected \
after your turn.

Tools:
- run_prepared(name): run a prepared script (no approval needed).
- run_python(code): run Python in the kernel. Code that is not exactly a prepared script \
waits for a person's approval and may be refused.
- extract_prepared(query_name, name): run a prepared SQL query on the phase's data (the \
task says which) and save the result as file `name` in the workspace (.csv, .tsv or .parquet).
- extract(query, name): the same with your own SQL (needs approval).
- write_output(name, text): write a declared text output (a summary, a report). It refuses \
names that code or an extract wrote: data is produced by code, never transcribed.

Produce every declared output. Prefer prepared scripts and queries. When you are done, \
answer with a short summary and no tool call."""


def build_messages(ctx: PhaseContext) -> list[BaseMessage]:
    """The two opening messages of the turn: the rules, then the task."""
    return [SystemMessage(SYSTEM), HumanMessage(task_message(ctx))]


def task_message(ctx: PhaseContext) -> str:
    sections = [
        _task(ctx),
        _about(ctx),
        _note(ctx),
        _previous(ctx),
        _params(ctx),
        _outputs(ctx),
        _working(ctx),
        _reference(ctx),
        _prepared(ctx),
        _data(ctx),
        _limits(ctx),
    ]
    return "\n\n".join(s for s in sections if s)


def host_path(ctx: PhaseContext, name: str) -> Path:
    """Where input ``name`` is on the host: an earlier phase's output, else a flow file."""
    producer = ctx.flow.producer(name)
    base = RunPaths(ctx.run_dir).output if producer is not None else ctx.flow.root
    try:
        return confined(base, name)
    except SandboxError as exc:
        raise PhaseError(f"{ctx.phase.id}: input {exc}; check flow.yaml") from exc


def clip(text: str, limit: int, what: str = "characters") -> str:
    """``text`` cut at ``limit`` characters, with a visible marker saying how much was cut."""
    if len(text) <= limit:
        return text
    return (
        text[:limit] + f"\n[... clipped: showing the first {limit:,} of {len(text):,} {what} ...]"
    )


def _task(ctx: PhaseContext) -> str:
    text = _read_text(ctx, ctx.phase.spec_as(AgentSpec).prompt, ctx.flow.root)
    return f"# Task (phase `{ctx.phase.id}`)\n\n{text.strip()}"


def _note(ctx: PhaseContext) -> str:
    if not ctx.note:
        return ""
    return (
        "# Reviewer's note\n\nA reviewer reopened this phase with this note; address it:\n\n"
        + ctx.note.strip()
    )


def _about(ctx: PhaseContext) -> str:
    parts = []
    if ctx.flow.description.strip():
        parts.append(f"The flow `{ctx.flow.name}`: {ctx.flow.description.strip()}")
    if ctx.phase.description.strip():
        parts.append(f"This phase `{ctx.phase.id}`: {ctx.phase.description.strip()}")
    return "# What this is for\n\n" + "\n\n".join(parts) if parts else ""


def _previous(ctx: PhaseContext) -> str:
    """The previous attempt's outputs and tool calls, when this phase runs again."""
    if ctx.attempt <= 1:
        return ""
    n = ctx.attempt - 1
    folder = RunPaths(ctx.run_dir).archived(ctx.phase.id, n)
    parts = [
        f"# Your previous attempt ({n})\n\nThis phase ran before; a reviewer or a re-run "
        "sent it back. What that attempt produced and did:"
    ]
    for name in ctx.phase.outputs:
        try:
            path = confined(folder, name)
        except SandboxError:
            continue
        if name.lower().endswith(TABULAR):
            parts.append(f"## `{name}` (attempt {n})\n\n{profile(path)}")
        else:
            text = path.read_text(encoding="utf-8", errors="replace")
            parts.append(f"## `{name}` (attempt {n})\n\n{clip(text, PREVIOUS_CHARS)}")
    calls = _tool_calls(ctx, n)
    if calls:
        parts.append("## Tool calls of that attempt\n\n" + "\n".join(calls))
    return "\n\n".join(parts) if len(parts) > 1 else ""


def _tool_calls(ctx: PhaseContext, attempt: int) -> list[str]:
    """One line per tool call of ``attempt`` of this phase, from the run's events."""

    lines: list[str] = []
    current = False
    try:
        for ev in EventLog(RunPaths(ctx.run_dir).events).iter():
            if isinstance(ev, PhaseStarted) and ev.phase == ctx.phase.id:
                current = ev.attempt == attempt
            elif current and isinstance(ev, ToolCalled) and ev.phase == ctx.phase.id:
                files = f"; wrote {', '.join(ev.files[:5])}" if ev.files else ""
                detail = " ".join(ev.detail.split())[:200]
                lines.append(
                    f"- {ev.tool}: {ev.status}{files}" + (f" ({detail})" if detail else "")
                )
    except (OSError, EventLogCorrupt):
        return lines
    return lines[-MAX_CALLS_SHOWN:]


def _params(ctx: PhaseContext) -> str:
    if not ctx.params:
        return ""
    lines = [f"- {name} = {value!r}" for name, value in sorted(ctx.params.items())]
    return (
        "# Run parameters\n\nThis run's parameters (also the variable `params` in the "
        "kernel):\n" + "\n".join(lines)
    )


def _outputs(ctx: PhaseContext) -> str:
    lines = [f"- `{name}`" for name in ctx.phase.outputs]
    empty = ", ".join(f"`{n}`" for n in ctx.phase.may_be_empty)
    text = "# Outputs to produce\n\n" + ("\n".join(lines) or "(none declared)")
    if empty:
        text += f"\n\nThese may be header-only: {empty}. Other CSV/TSV outputs need rows."
    return text


def _working(ctx: PhaseContext) -> str:
    if not ctx.phase.working:
        return ""
    parts = ["# Working inputs (in the kernel's working directory)"]
    for name in ctx.phase.working:
        path = host_path(ctx, name)
        if name.lower().endswith(TABULAR):
            parts.append(f"## `{name}`\n\n{profile(path)}")
        else:
            parts.append(f"## `{name}`\n\n{path.stat().st_size:,} bytes")
    return "\n\n".join(parts)


def profile(path: Path) -> str:
    """A profile of a tabular file: rows, columns, dtypes, nulls and sample rows, read within
    a budget (Parquet: its footer and first rows; CSV/TSV: ``tableprofile``)."""
    size = path.stat().st_size
    if size > PROFILE_MAX_BYTES:
        return f"{size:,} bytes: too large to profile here; inspect it with code."
    if path.suffix.lower() == ".parquet":  # from its metadata and first rows: bounded
        return parquet.profile(path, SAMPLE_ROWS)

    return table_profile(path, SAMPLE_ROWS)


def _reference(ctx: PhaseContext) -> str:
    if not ctx.phase.reference:
        return ""
    parts = ["# Reference (for reading; not in the working directory)"]
    for name in ctx.phase.reference:
        text = _read_text(ctx, name)
        parts.append(f"## `{name}`\n\n{clip(text, REFERENCE_CHARS)}")
    return "\n\n".join(parts)


def _prepared(ctx: PhaseContext) -> str:
    parts = []
    spec = ctx.phase.spec_as(AgentSpec)
    if spec.scripts:
        parts.append("# Prepared scripts (run_prepared, no approval needed)")
        for rel in spec.scripts:
            text = clip(_read_text(ctx, rel, ctx.flow.root), SCRIPT_CHARS)
            parts.append(f"## `{Path(rel).stem}` ({rel})\n\n```python\n{text.rstrip()}\n```")
    if spec.queries:
        parts.append("# Prepared queries (extract_prepared, no approval needed)")
        for rel in spec.queries:
            text = clip(_read_text(ctx, rel, ctx.flow.root), SCRIPT_CHARS)
            parts.append(f"## `{Path(rel).stem}` ({rel})\n\n```sql\n{text.rstrip()}\n```")
    return "\n\n".join(parts)


def _data(ctx: PhaseContext) -> str:
    text = describe(data_of(ctx))
    return f"# Data for extracts\n\n{text}" if text else ""


def _limits(ctx: PhaseContext) -> str:
    calls = limit(ctx, "model_calls")
    runs = limit(ctx, "run_python")
    return (
        f"# Limits\n\nAt most {calls} model calls in this turn (going over fails the phase) "
        f"and at most {runs} run_python runs."
    )


def limit(ctx: PhaseContext, key: str) -> int:
    return ctx.phase.spec_as(AgentSpec).limit(key)


def _read_text(ctx: PhaseContext, name: str, base: Path | None = None) -> str:
    try:
        if base is not None:  # a flow file: by descriptor, no link followed
            return flow_files.text(base, name)
        path = host_path(ctx, name)
    except SandboxError as exc:
        raise PhaseError(f"{ctx.phase.id}: {exc}; check flow.yaml") from exc
    return path.read_text(encoding="utf-8", errors="replace")
