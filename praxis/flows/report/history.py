"""A flow's runs side by side: when each began, how long its phases ran, its parameters, its
status and who decided each Gate. Reads run.json, and only the Gate decisions of events.jsonl
(read as lines, without the event classes: `praxis runs` stays a quick command).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandbox.files import open_nofollow

from ..model.flow import Flow
from ..model.state import RunState
from ..store.handle import RunHandle, listing
from ..store.state_file import StateCorrupt

MAX_LOG = 16 << 20  # bytes of a run's events.jsonl read for its Gate decisions
DECIDED = (b'{"kind": "gate_approved"', b'{"kind": "gate_rejected"')
GATE = b'\n{"kind": "gate_'  # where a line of a Gate event starts


@dataclass(frozen=True)
class Decision:
    phase: str
    decision: str  # approved | rejected
    actor: str  # person | agent


@dataclass(frozen=True)
class RunRow:
    """One run as `praxis runs` and the flows page list it."""

    id: str
    status: str  # the run's status, or "waiting at the Gate after <phase>"
    started: float | None  # when the run was begun (epoch seconds)
    seconds: float | None  # the first phase's start to the last one's end (or now, running)
    params: dict[str, Any] = field(default_factory=dict)
    decisions: list[Decision] = field(default_factory=list)
    problem: str | None = None  # why its run.json could not be read


def row_of(run: RunHandle, now: float | None = None) -> RunRow:
    state = run.state
    return RunRow(
        id=run.id,
        status=status_words(state),
        started=state.created,
        seconds=span(state, now),
        params=dict(state.params),
        decisions=decisions(run.paths.events),
    )


def rows(flow: Flow, now: float | None = None) -> list[RunRow]:
    """Every run of ``flow``, newest first (an unreadable run as a row naming why)."""
    found = []
    with listing(flow) as ids:  # no run created or deleted while they are read
        for run_id in reversed(ids):
            try:
                found.append(row_of(RunHandle.open(flow, run_id), now))
            except StateCorrupt as exc:
                found.append(RunRow(run_id, "unreadable", None, None, problem=exc.reason))
    return found


def status_words(state: RunState) -> str:
    if state.waiting == "gate":
        return f"waiting at the Gate after {state.gate}"
    return state.status


def span(state: RunState, now: float | None = None) -> float | None:
    """Seconds from the first phase's start to the last phase's end (to ``now`` while one
    runs); None before any phase started."""
    starts = [p.started for p in state.phases if p.started is not None]
    if not starts:
        return None
    now = time.time() if now is None else now
    ends = [
        now if p.status == "running" and p.ended is None else (p.ended or p.started)
        for p in state.phases
        if p.started is not None
    ]
    return max(max(e for e in ends if e is not None) - min(starts), 0.0)


def decisions(events: Path) -> list[Decision]:
    """The Gate decisions of a run, in order, from its first ``MAX_LOG`` bytes of events."""
    found = []
    for line in _decided(events):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            decision = "approved" if data.get("kind") == "gate_approved" else "rejected"
            found.append(Decision(str(data.get("phase")), decision, str(data.get("actor"))))
    return found


def _decided(path: Path) -> Iterator[bytes]:
    """The lines of a Gate decision (found by their start; the rest is not split)."""
    try:
        fd = open_nofollow(path)
    except OSError:
        return
    with os.fdopen(fd, "rb") as fh:
        data = b"\n" + fh.read(MAX_LOG)
    at = data.find(GATE)
    while at >= 0:
        end = data.find(b"\n", at + 1)
        if end < 0:
            return  # the last line, cut at the bound or not yet ended
        line = data[at + 1 : end]
        if line.startswith(DECIDED):
            yield line
        at = data.find(GATE, end)
