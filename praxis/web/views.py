"""What the run page shows, computed from the run folder: timeline, events, files, the Gate.

Pure reads of a ``RunHandle``; the templates only lay these out.
"""

from __future__ import annotations

import codecs
import dataclasses
import datetime as dt
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from praxis import parquet, units
from praxis.flows.engine import carry
from praxis.flows.model.events import EditsCarried, Event
from praxis.flows.model.state import PhaseState, RunState
from praxis.flows.store.event_log import EventLog, EventLogCorrupt
from praxis.flows.store.handle import RunHandle
from praxis.flows.store.layout import RunPaths, writable_names
from sandbox.files import open_nofollow

from . import columnar, csvedit, parquet_view, publishing, render, tables

TEXT_SUFFIXES = (".md", ".txt", ".json", ".yaml", ".yml", ".sql", ".py", ".log", ".html", ".xml")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
MAX_TEXT_EDIT = 2 * 1024 * 1024
MAX_INLINE_TEXT = 256 * 1024  # larger text to edit is fetched when its box is opened
MAX_FILES = 500
CHART_WIDTH = 600
LIVE_CHUNK = 256 * 1024
PREPARE_BYTES = 4 * 1024 * 1024  # a bigger table's columnar copy is built as it is shown


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
    started: float | None = None  # epoch seconds: the page grows a running phase's bar
    ended: float | None = None
    partitions: list[Bar] = field(default_factory=list)  # a fan-out's, each as a bar
    node: str | None = None  # a partition's: the Ray node it ran on
    reused_from: str | None = None  # a partition's: the run it was restored from


@dataclass
class Artifact:
    name: str
    kind: str  # table | text | image | binary
    size: int
    table: tables.TablePage | None = None
    text: str | None = None
    problem: str | None = None  # why it is offered as text only, or not at all
    lazy: bool = False  # the text box is filled when opened (/text), not in the page
    readonly: bool = False  # shown as a table, never edited in the page (Parquet)

    @property
    def markdown(self) -> bool:
        return self.name.lower().endswith((".md", ".markdown"))


@dataclass
class EventRow:
    at: str
    kind: str
    details: list[tuple[str, str, str]]  # (field, shown, full value for a tooltip or "")

    @property
    def summary(self) -> str:
        return ", ".join(f"{k}={v}" for k, v, _ in self.details)


@dataclass
class RunView:
    state: RunState
    bars: list[Bar]
    events: list[EventRow]
    events_problem: str | None
    files: list[tuple[str, int]]  # every file of the run folder a reviewer may open
    records: list[str]  # phases with a record notebook
    artifacts: list[Artifact] = field(default_factory=list)  # writable now (at a Gate)
    publishing: publishing.Publishing | None = None  # flow.yaml's publish: and what it did


def when(ts: float | None) -> str:
    if ts is None:
        return ""
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def timeline(run: RunHandle, now: float | None = None) -> list[Bar]:
    """One bar per phase, placed on a shared time axis from the first start to the last end;
    a running phase's bar reaches ``now`` (the page grows it as the phase goes on)."""
    now = time.time() if now is None else now
    phases = run.state.phases
    starts = [p.started for p in phases if p.started is not None]
    ends = [_end(p, now) for p in phases if p.started is not None]
    for p in phases:
        starts += [q["started"] for q in p.partitions.values() if q.get("started")]
        ends += [q.get("ended") or now for q in p.partitions.values() if q.get("started")]
    t0 = min(starts) if starts else 0.0
    span = max((max(ends) - t0) if ends else 0.0, 1e-6)
    bars = []
    for p in phases:
        x = width = 0.0
        if p.started is not None:
            x = (p.started - t0) / span * CHART_WIDTH
            width = max((_end(p, now) - p.started) / span * CHART_WIDTH, 2.0)
        outs = []
        for name in () if p.partitions else run.flow.phase(p.id).outputs:
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
                p.started,
                p.ended,
                _partition_bars(run, p, t0, span, now),
            )
        )
    return bars


def _partition_bars(run: RunHandle, p: PhaseState, t0: float, span: float, now: float) -> list[Bar]:
    """A fan-out's partitions on the same axis: status, attempt, outputs, node, error."""
    bars = []
    for name, q in p.partitions.items():
        started, ended = q.get("started"), q.get("ended")
        x = width = 0.0
        if started is not None:
            x = (started - t0) / span * CHART_WIDTH
            width = max(((ended or now) - started) / span * CHART_WIDTH, 2.0)
        outs = []
        for out in sorted(q.get("hashes") or {}):
            path = run.paths.partition_output(p.id, name) / out
            outs.append((f"{p.id}/{name}/{out}", path.stat().st_size if path.is_file() else None))
        seconds = ended - started if started and ended else None
        bars.append(
            Bar(name, str(q.get("status", "pending")), int(q.get("attempt", 0)), seconds,
                round(x, 1), round(width, 1), outs, q.get("error"), None, started, ended,
                node=q.get("node") or None, reused_from=q.get("source") or None)
        )  # fmt: skip
    return bars


def _end(p: PhaseState, now: float) -> float:
    """Where a started phase's bar ends: its end, or ``now`` while it runs."""
    started = p.started or 0.0
    if p.ended is not None:
        return p.ended
    return max(now, started) if p.status == "running" else started


def event_rows(run: RunHandle) -> tuple[list[EventRow], str | None]:
    try:
        events = EventLog(run.paths.events).read()
    except EventLogCorrupt as exc:
        return [], str(exc)
    return [_event_row(e) for e in events], None


def _event_row(ev: Event) -> EventRow:
    data = dataclasses.asdict(ev)
    data.pop("at", None)
    details = [(key, *render.short(value)) for key, value in data.items()]
    return EventRow(at=when(ev.at), kind=ev.kind, details=details)


def run_files(run: RunHandle) -> list[tuple[str, int]]:
    """Regular files of output/, scratch/, records/, attempts/, edits/ (relative to the run
    folder), at most ``MAX_FILES`` of them."""
    found: list[tuple[str, int]] = []
    root = run.root
    for top in RunPaths.READ:
        base = root / top
        if not base.is_dir():
            continue
        for here, dirs, files in os.walk(base):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                path = Path(here) / name
                if name.startswith(".") or path.is_symlink() or not path.is_file():
                    continue
                if len(found) >= MAX_FILES:
                    found.append((f"... more files below {top}/ not listed", -1))
                    break
                found.append((path.relative_to(root).as_posix(), path.stat().st_size))
            if found and found[-1][1] == -1:
                break
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
        try:
            table = tables.page_of(path, page)
        except csvedit.NotATable as exc:
            return _text_artifact(path, size, problem=f"{name} {exc.reason}")
        art = Artifact(name, "table", size, table=table, problem=table.problem)
        if size > PREPARE_BYTES and not table.problem and len(table.header) <= columnar.MAX_COLUMNS:
            columnar.prepare_later(csvedit.index(path))
        if size <= MAX_INLINE_TEXT:
            art.text = decoded_text(path)
        elif size <= MAX_TEXT_EDIT:
            art.text, art.lazy = "", True
        return art
    if parquet.is_parquet(name):
        try:
            return Artifact(name, "table", size, table=parquet_view.page_of(path, page),
                            readonly=True)  # fmt: skip
        except parquet.NotReadable as exc:
            return Artifact(name, "binary", size, problem=str(exc))
    if lower.endswith(IMAGE_SUFFIXES) or lower.endswith(".svg"):
        return Artifact(name, "image", size)
    if lower.endswith(TEXT_SUFFIXES):
        return _text_artifact(path, size)
    return Artifact(name, "binary", size)


def _text_artifact(path: Path, size: int, problem: str | None = None) -> Artifact:
    if size > MAX_TEXT_EDIT:
        why = f"{path.name} is {units.size(size)}: too large to edit in the page; edit it by hand"
        return Artifact(path.name, "binary", size, problem=problem or why)
    if size > MAX_INLINE_TEXT:
        return Artifact(path.name, "text", size, text="", problem=problem, lazy=True)
    return Artifact(path.name, "text", size, text=decoded_text(path), problem=problem)


def decoded_text(path: Path) -> str:
    """A file's text as a text box shows it: a table in its own encoding (no BOM), else UTF-8."""
    data = path.read_bytes()
    encoding = "utf-8-sig"
    if tables.is_table(path.name):
        try:
            if csvedit.index(path).dialect.encoding == "latin-1":
                encoding = "latin-1"
        except csvedit.NotATable:
            pass
    return data.decode(encoding, errors="replace")


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
        publishing=publishing.of(run),
    )
    for name in writable_names(run.flow, run.state):
        view.artifacts.append(artifact(run.paths.out(name), pages.get(name, 1)))
    return view


def going(state: RunState, job: Any) -> str | None:
    """What this server does with the run now, as the page shows it: "starting" (queued or
    about to start its next phase), "running", or None (nothing: the run is as run.json
    says). A run approved a moment ago is paused in run.json, but it is going on."""
    if job is None or not job.active or state.waiting == "gate":
        return None
    if state.status == "running":
        return "running"
    return "queued" if job.queued else "starting"


def edits_question(run: RunHandle) -> dict[str, Any]:
    """What going back to each phase would replace of the outputs edited at a Gate, for the
    page to ask keep or discard: {"at_risk": {phase: [names]}, "keyless": [names],
    "repeated": [why]} (keep is refused for a table without a key or whose header repeats a
    name)."""
    state = run.state
    risk = {p.id: [n for n, _ in carry.at_risk(state, p.id)] for p in state.phases}
    found = carry.at_risk(state, state.phases[0].id) if state.phases else []
    return {
        "at_risk": {k: v for k, v in risk.items() if v},
        "keyless": carry.keyless(run.flow, found),
        "repeated": [carry.refusal(n, c) for n, c in carry.repeated_columns(run, found)],
        "carried": _carried(run),
    }


def _carried(run: RunHandle) -> list[dict[str, Any]]:
    """The edits kept across a re-run and re-applied at the Gate the run waits at now."""
    state = run.state
    if state.waiting != "gate" or state.gate is None or not run.paths.events.is_file():
        return []
    if b'"edits_carried"' not in run.paths.events.read_bytes():
        return []
    attempt = state.phase(state.gate).attempt
    return [
        {"name": e.name, "applied": list(e.applied), "skipped": list(e.skipped)}
        for e in run.log.read()
        if isinstance(e, EditsCarried) and e.phase == state.gate and e.attempt == attempt
    ]


def summary(state: RunState, now: float | None = None) -> dict[str, Any]:
    """What the page polls to notice that the run moved on, and to show a phase running."""
    running = next((p for p in state.phases if p.status == "running"), None)
    now = time.time() if now is None else now
    return {
        "revision": state.revision,
        "status": state.status,
        "waiting": state.waiting,
        "gate": state.gate,
        "running": running.id if running else None,
        "elapsed": round(now - running.started, 1) if running and running.started else None,
        "phases": {p.id: p.status for p in state.phases},
    }


def read_live(path: Path, offset: int, limit: int = LIVE_CHUNK) -> tuple[str, int]:
    """Text of the live log from byte ``offset`` (at most ``limit`` bytes), and the new offset.

    A multi-byte character cut at the end is left for the next read. A log started afresh
    (shorter than ``offset``) is read from its beginning.
    """
    try:
        fd = open_nofollow(path)
    except OSError:
        return "", 0
    try:
        size = os.fstat(fd).st_size
        if offset > size:
            offset = 0
        data = os.pread(fd, min(limit, size - offset), offset)
    finally:
        os.close(fd)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text = decoder.decode(data, final=False)
    pending = len(decoder.getstate()[0])
    return text, offset + len(data) - pending
