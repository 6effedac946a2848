"""What the run page says of ``publish:`` (DESIGN.md §18): at the last Gate, which outputs a
person's approval will have written where; afterwards, what was written (rows, digest, when)
or why not, and the command that publishes what is pending."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from praxis.argv import flow_text
from praxis.command_line import Command
from praxis.flows.model import publishing
from praxis.flows.model.events import Event, Published, PublishFailed
from praxis.flows.store.event_log import EventLogCorrupt
from praxis.flows.store.handle import RunHandle


@dataclass(frozen=True)
class Row:
    output: str
    connection: str
    table: str
    how: str  # replace | upsert by KEY, ...
    state: str  # to publish | published | failed
    detail: str = ""  # rows and digest, or the error
    at: float | None = None


@dataclass(frozen=True)
class Publishing:
    rows: list[Row]
    at_last_gate: bool  # the run waits at the Gate whose approval allows publishing
    command: str | None  # the line that publishes what is pending (a done run)
    blocked: str | None  # why nothing may be published yet, once done


def of(run: RunHandle) -> Publishing | None:
    """The page's publishing section of ``run``; None for a flow that publishes nothing."""
    flow, state = run.flow, run.state
    if not flow.publish:
        return None
    try:
        events: list[Event] = run.log.read() if run.paths.events.is_file() else []
    except (OSError, EventLogCorrupt):
        events = []
    rows = [_row(run, entry, events) for entry in flow.publish]
    pending = publishing.pending(flow, state, events)
    blocked = publishing.approval(flow, events) if pending else None
    command = None
    if pending and blocked is None:
        command = Command("publish", flow_text(flow), run=run.id).line()
    gate = publishing.last_gate(flow)
    return Publishing(rows, state.waiting == "gate" and state.gate == gate, command, blocked)


def _row(run: RunHandle, entry: Any, events: list[Event]) -> Row:
    how = f"upsert by {', '.join(entry.key)}" if entry.mode == "upsert" else entry.mode
    base = {"output": entry.output, "connection": entry.connection, "table": entry.table}
    done = publishing.done(run.flow, run.state, entry, events)
    if done is not None:
        detail = f"{done.rows:,} rows, sha256 {done.sha256[:12]}…"
        return Row(**base, how=how, state="published", detail=detail, at=done.at)
    failed = [
        e for e in events
        if isinstance(e, PublishFailed) and (e.output, e.table) == (entry.output, entry.table)
    ]  # fmt: skip
    older = [
        e for e in events
        if isinstance(e, Published) and (e.output, e.table) == (entry.output, entry.table)
    ]  # fmt: skip
    last = max([*failed, *older], key=lambda e: e.at, default=None)
    if isinstance(last, PublishFailed):
        return Row(**base, how=how, state="failed", detail=last.error, at=last.at)
    return Row(**base, how=how, state="to publish")
