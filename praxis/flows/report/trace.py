"""trace.jsonl: with ``PRAXIS_TRACE=1`` (or ``--trace``), every command on a run and the
route evaluated after it: a ``trace_started`` line as the command starts (argv, actor, pid:
a command killed before it ends is there), and a ``traced`` line as it ends (argv, actor,
pid, exit code, the facts and the route). The command line, the page and MCP trace alike.

``praxis replay`` reads it back (``replay.py``). The file is an event log of its own
(``EventLog``: append-only, a torn last line dropped), bounded: past ``MAX_BYTES`` one
``trace_full`` line says so and nothing more is added, so a trace left on in CI stays small.
"""

from __future__ import annotations

import os
from pathlib import Path

from sandbox.files import open_nofollow

from ..model.events import Event, Traced, TraceFull, TraceStarted
from ..store.event_log import EventLog
from ..store.handle import RunHandle
from .facts import facts_and_route
from .route import Standing

MAX_BYTES = 4 << 20  # of one run's trace
ON = ("1", "true", "yes", "on")


def enabled(flag: bool = False) -> bool:
    """Tracing is on: ``--trace``, or PRAXIS_TRACE=1 in the environment."""
    return flag or os.environ.get("PRAXIS_TRACE", "").strip().lower() in ON


def start(run: RunHandle, argv: list[str], actor: str) -> None:
    """Append the command as it starts (before it changes anything)."""
    _append(run, TraceStarted(argv=list(argv), actor=actor, pid=os.getpid()))


def record(
    run: RunHandle, argv: list[str], actor: str, code: int, standing: Standing | None = None
) -> None:
    """Append the command (``actor``: the principal's label, ``agent:ci-bot``) and the route
    the run's facts give now (status's own reading; the caller's, with its ``standing``)."""
    facts, route = facts_and_route(run, standing)
    line = Traced(
        argv=list(argv), actor=actor, exit=code, facts=facts, route=route, pid=os.getpid()
    )
    _append(run, line)


def _append(run: RunHandle, line: Event) -> None:
    path = run.paths.trace
    size = _size(path)
    if size and _full(path, size):
        return
    log = EventLog(path)
    if size + len(line.to_json()) + 1 > MAX_BYTES:
        log.append(TraceFull(bytes=size))
        return
    log.append(line)


def _size(path: Path) -> int:
    try:
        return os.stat(path, follow_symlinks=False).st_size
    except FileNotFoundError:
        return 0


def _full(path: Path, size: int) -> bool:
    """The trace ends with its ``trace_full`` line."""
    fd = open_nofollow(path)
    try:
        tail = os.pread(fd, 256, max(0, size - 256))
    finally:
        os.close(fd)
    return b'"trace_full"' in tail.rstrip(b"\n").rsplit(b"\n", 1)[-1]


def read(run: RunHandle) -> list[Event]:
    """The run's trace, oldest first (empty when it was never on)."""
    return EventLog(run.paths.trace).read()
