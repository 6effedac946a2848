"""What the run page shows, computed from the run folder: timeline, events, files, the Gate.

Pure reads of a ``RunHandle``; the templates only lay these out.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from praxis.flows.events import Event, EventLog, EventLogCorrupt
from praxis.flows.handle import RunHandle
from praxis.flows.layout import writable_names
from praxis.flows.state import RunState

from . import tables

TEXT_SUFFIXES = (".md", ".txt", ".json", ".yaml", ".yml", ".sql", ".py", ".log", ".html", ".xml")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
MAX_TEXT_EDIT = 2 * 1024 * 1024
CHART_WIDTH = 600


@dataclass
class Bar:
    phase: str
    status: str
    attempt: int
    seconds: float | None
    x: float  # SVG units, 0..CHART_WIDTH
    width: float
    outputs: list[tuple[str, int | None]]  # (name, size in bytes or None when gone)
    error: str | None = None
    note: str | None = None


@dataclass
class Artifact:
    name: str
    kind: str  # table | text | image | binary
    size: int
    table: tables.TablePage | None = None
    text: str | None = None


@dataclass
class EventRow:
    at: str
    kind: str
    summary: str


@dataclass
class RunView:
    state: RunState
    bars: list[Bar]
    events: list[EventRow]
    events_problem: str | None
    files: list[tuple[str, int]]  # every file of the run folder a reviewer may open
    records: list[str]  # phases with a record notebook
    artifacts: list[Artifact] = field(default_factory=list)  # writable now (at a Gate)


def when(ts: float | None) -> str:
    if ts is None:
        return ""
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def timeline(run: RunHandle) -> list[Bar]:
    """One bar per phase, placed on a shared time axis from the first start to the last end."""
    phases = run.state.phases
    starts = [p.started for p in phases if p.started is not None]
    ends = [p.ended or p.started for p in phases if p.started is not None]
    t0 = min(starts) if starts else 0.0
    span = max((max(e for e in ends if e is not None) - t0) if ends else 0.0, 1e-6)
    bars = []
    for p in phases:
        x = width = 0.0
        if p.started is not None:
            end = p.ended if p.ended is not None else p.started + span * 0.02
            x = (p.started - t0) / span * CHART_WIDTH
            width = max((end - p.started) / span * CHART_WIDTH, 2.0)
        outs = []
        for name in run.flow.phase(p.id).outputs:
            path = run.paths.out(name)
            outs.append((name, path.stat().st_size if path.is_file() else None))
        bars.append(
            Bar(
                p.id,
                p.status,
                p.attempt,
                p.seconds,
                round(x, 1),
                round(width, 1),
                outs,
                p.error,
                p.note,
            )
        )
    return bars


def event_rows(run: RunHandle) -> tuple[list[EventRow], str | None]:
    try:
        events = EventLog(run.paths.events).read()
    except EventLogCorrupt as exc:
        return [], str(exc)
    return [_event_row(e) for e in events], None


def _event_row(ev: Event) -> EventRow:
    data = dataclasses.asdict(ev)
    data.pop("at", None)
    parts = []
    for key, value in data.items():
        text = str(value)
        parts.append(f"{key}={text[:117] + '...' if len(text) > 120 else text}")
    return EventRow(at=when(ev.at), kind=ev.kind, summary=", ".join(parts))


def run_files(run: RunHandle) -> list[tuple[str, int]]:
    """Regular files of output/, scratch/, records/, attempts/ (relative to the run folder)."""
    found = []
    root = run.root
    for top in ("output", "scratch", "records", "attempts"):
        base = root / top
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if path.is_file() and not path.is_symlink() and not path.name.startswith("."):
                found.append((path.relative_to(root).as_posix(), path.stat().st_size))
    found.append(("events.jsonl", run.paths.events.stat().st_size))
    found.append(("run.json", run.paths.state.stat().st_size))
    return found


def artifact(path: Path, page: int) -> Artifact:
    name = path.name
    size = path.stat().st_size if path.is_file() else 0
    lower = name.lower()
    if not path.is_file():
        return Artifact(name, "missing", 0)
    if tables.is_table(name):
        return Artifact(name, "table", size, table=tables.page_of(path, page))
    if lower.endswith(IMAGE_SUFFIXES):
        return Artifact(name, "image", size)
    if lower.endswith(TEXT_SUFFIXES) and size <= MAX_TEXT_EDIT:
        return Artifact(name, "text", size, text=path.read_text(encoding="utf-8", errors="replace"))
    return Artifact(name, "binary", size)


def run_view(run: RunHandle, pages: dict[str, int] | None = None) -> RunView:
    pages = pages or {}
    events, problem = event_rows(run)
    records = [p.id for p in run.state.phases if run.paths.record(p.id).is_file()]
    view = RunView(
        state=run.state,
        bars=timeline(run),
        events=events,
        events_problem=problem,
        files=run_files(run),
        records=records,
    )
    for name in writable_names(run.flow, run.state):
        view.artifacts.append(artifact(run.paths.out(name), pages.get(name, 1)))
    return view


def summary(state: RunState) -> dict[str, Any]:
    """What the page polls to notice that the run moved on."""
    running = next((p.id for p in state.phases if p.status == "running"), None)
    return {
        "revision": state.revision,
        "status": state.status,
        "waiting": state.waiting,
        "running": running,
    }
