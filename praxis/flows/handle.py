"""An open run: its Flow, its folder, its state, and the one way to change the state.

``RunHandle.change`` applies a transition (pure, in state.py), writes run.json atomically and
appends the matching event, in that order: the record is on disk before anything is raised.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from . import state as st
from .layout import RunPaths, new_run_id, newest, newest_seq, run_paths
from .model import Flow
from .state_file import load, save

if TYPE_CHECKING:
    from .events import Event, EventLog

Clock = Callable[[], float]


class NoRun(UsageError):
    """Raised when a flow has no run yet, or the named run does not exist."""

    def __init__(self, flow: Flow, run_id: str | None) -> None:
        what = f"no run {run_id!r}" if run_id else "no runs yet"
        super().__init__(f"{flow.name} has {what}")
        self.flow = flow
        self.run_id = run_id

    def next(self, flow: str) -> str:
        return f"praxis runs {flow}" if self.run_id else f"praxis run {flow}"


class RunHandle:
    def __init__(self, flow: Flow, paths: RunPaths, state: st.RunState, clock: Clock) -> None:
        self.flow = flow
        self.paths = paths
        self.state = state
        self.clock = clock
        self.listeners: list[Callable[[Event], None]] = []

    @classmethod
    def open(cls, flow: Flow, run_id: str | None, clock: Clock = time.time) -> RunHandle:
        if run_id is None:
            run_id = newest(flow.root)
            if run_id is None:
                raise NoRun(flow, None)
        paths = run_paths(flow.root, run_id)
        if not paths.root.is_dir():
            raise NoRun(flow, run_id)
        return cls(flow, paths, load(paths.state), clock)

    @classmethod
    def create(
        cls,
        flow: Flow,
        clock: Clock = time.time,
        *,
        params: dict[str, Any] | None = None,
        definition: dict[str, Any] | None = None,
    ) -> RunHandle:
        """A new run folder, created exclusively (never an existing run's), and its run.json.
        The caller holds the Flow's lock: ``seq`` orders runs by creation, not by the clock."""
        now = clock()
        seq = newest_seq(flow.root) + 1
        while True:
            paths = run_paths(flow.root, new_run_id(now, after=newest(flow.root)))
            paths.root.parent.mkdir(parents=True, exist_ok=True)
            try:
                paths.root.mkdir()
                break
            except FileExistsError:
                continue  # the same second and the same random suffix: another id
        paths.make()
        state = st.new_run(
            paths.id,
            flow.name,
            [p.id for p in flow.phases],
            now=now,
            params=params,
            definition=definition,
            seq=seq,
        )
        save(state, paths.state)
        return cls(flow, paths, state, clock)

    def change(self, event: str, *, phase: str | None = None, **kw: Any) -> st.RunState:
        before = self.state.status
        new = st.apply(self.state, event, phase=phase, now=self.clock(), **kw)
        save(new, self.paths.state)
        self.state = new
        if new.status != before:
            from .events import RunStateChanged

            self.emit(RunStateChanged(status=new.status, revision=new.revision, reason=event))
        return new

    def emit(self, ev: Event) -> None:
        self.log.append(ev)
        for listen in self.listeners:
            listen(ev)

    @functools.cached_property
    def log(self) -> EventLog:
        """The run's events.jsonl (events load when a command first reads or writes one:
        `praxis runs` and `check` never do)."""
        from .events import EventLog

        return EventLog(self.paths.events)

    @property
    def id(self) -> str:
        return self.paths.id

    @property
    def root(self) -> Path:
        return self.paths.root
