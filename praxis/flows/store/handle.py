"""An open run: its Flow, its folder, its state, and the one way to change the state.

``RunHandle.change`` applies a transition (pure: ``model/machine.py``), which gives the new
state and the events that record it, and writes both:

1. run.json, atomically, holding the change's events as its outbox: the commit point;
2. events.jsonl: the same events appended, each stamped with the revision (``"rev"``).

A crash before 1 changes nothing; one between 1 and 2 (or in 2, leaving a torn line) leaves
the log short of the change's events, and the next change of the run first appends those it
lacks (``catch_up``, under the run's lock): each change's events are in the log exactly
once, and never one of a change run.json does not hold. The record is on disk before
anything is raised.
"""

from __future__ import annotations

import functools
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.files import fsync_folder

from ...command_line import typed
from ...errors import UsageError
from ..model import state as st
from ..model.flow import Flow
from .layout import (
    RunPaths,
    list_run_ids,
    lock_path,
    new_run_id,
    newest,
    newest_seq,
    run_paths,
    runs_dir,
)
from .lock import ADVANCING, PATIENCE, Lock, Vanished
from .state_file import StateCorrupt, load_saved, save

if TYPE_CHECKING:
    from ..model.events import Event
    from ..model.moves import Transition
    from .event_log import EventLog

Clock = Callable[[], float]


class NoRun(UsageError):
    """Raised when a flow has no run yet, or the named run does not exist."""

    def __init__(self, flow: Flow, run_id: str | None) -> None:
        what = f"no run {run_id!r}" if run_id else "no runs yet"
        super().__init__(f"{flow.name} has {what}")
        self.flow = flow
        self.run_id = run_id

    def next(self, flow: str) -> str:
        return typed("runs" if self.run_id else "run", flow)


def resolve(flow: Flow, run_id: str | None) -> RunPaths:
    """The folder of run ``run_id`` (the newest when None); NoRun when there is none. A run id
    is a plain name of a folder in ``runs/``: never a path, a hidden name or a link."""
    if run_id is None:
        run_id = newest(flow.root)
        if run_id is None:
            raise NoRun(flow, None)
    paths = run_paths(flow.root, run_id)
    plain = run_id not in ("", ".", "..") and "/" not in run_id and not run_id.startswith(".")
    if not plain or paths.root.is_symlink() or not paths.root.is_dir():
        raise NoRun(flow, run_id)
    return paths


@contextmanager
def held(
    flow: Flow, run_id: str | None, doing: str = ADVANCING, *, patience: float = PATIENCE
) -> Iterator[Lock]:
    """The run's lock, taken, for as long as the block runs (Busy names another holder);
    ``lock.run`` is the run's id (the newest when ``run_id`` is None). NoRun when there is no
    such run, or it was deleted while this process waited for its lock."""
    paths = resolve(flow, run_id)
    lock = Lock(paths.lock, doing, run=paths.id, patience=patience)
    try:
        lock.acquire()
    except Vanished:
        raise NoRun(flow, paths.id) from None
    try:
        yield lock
    finally:
        lock.release()


@contextmanager
def listing(flow: Flow) -> Iterator[list[str]]:
    """The flow's run ids, oldest first, with the Flow's lock held shared for as long as the
    block runs: no run is created or deleted meanwhile (each waits a moment). A flow folder
    this process may not write is listed without it."""
    lock = Lock(lock_path(flow.root), "listing", shared=True, patience=PATIENCE)
    try:
        lock.acquire()
    except OSError:  # a folder this process may only read (or a read-only disk)
        yield list_run_ids(flow.root)
        return
    try:
        yield list_run_ids(flow.root)
    finally:
        lock.release()


class RunHandle:
    def __init__(
        self,
        flow: Flow,
        paths: RunPaths,
        state: st.RunState,
        clock: Clock,
        outbox: list[dict[str, Any]] | None = None,
    ) -> None:
        self.flow = flow
        self.paths = paths
        self.state = state
        self.clock = clock
        self.listeners: list[Callable[[Event], None]] = []
        # The events of the change that made ``state.revision``, as run.json holds them.
        self.outbox: list[dict[str, Any]] = list(outbox or [])
        self._caught_up = False

    @classmethod
    def open(cls, flow: Flow, run_id: str | None, clock: Clock = time.time) -> RunHandle:
        paths = resolve(flow, run_id)
        try:
            state, outbox = load_saved(paths.state)
        except StateCorrupt as exc:
            if exc.reason == "missing" and not paths.root.is_dir():
                raise NoRun(flow, paths.id) from None  # deleted since it was found
            raise
        return cls(flow, paths, state, clock, outbox)

    @classmethod
    def create(
        cls,
        flow: Flow,
        clock: Clock = time.time,
        *,
        params: dict[str, Any] | None = None,
        definition: dict[str, Any] | None = None,
        staged: Callable[[RunPaths], None] | None = None,
    ) -> RunHandle:
        """A new run folder (never an existing run's) with its run.json, made under a hidden
        name and renamed into ``runs/`` complete; ``staged`` sees it just before (to take its
        lock). The caller holds the Flow's lock: ``seq`` orders runs by creation. The run's
        events.jsonl begins with its ``run_begun``."""
        from ..model.events import RunBegun
        from .event_log import EventLog

        now = clock()
        seq = newest_seq(flow.root) + 1
        runs = runs_dir(flow.root)
        runs.mkdir(parents=True, exist_ok=True)
        run_id = new_run_id(now, after=newest(flow.root))
        while (runs / run_id).exists():  # the same second and the same random suffix
            run_id = new_run_id(now, after=run_id)
        staging = RunPaths(runs / f".new-{run_id}")
        shutil.rmtree(staging.root, ignore_errors=True)  # a creator that died left it
        try:
            staging.make()
            state = st.new_run(
                run_id,
                flow.name,
                [p.id for p in flow.phases],
                now=now,
                params=params,
                definition=definition,
                seq=seq,
            )
            begun = RunBegun(
                run=run_id, flow=flow.name, phases=[p.id for p in state.phases], at=now
            )
            outbox = [begun.stamped(state.revision)]
            save(state, staging.state, outbox)
            EventLog(staging.events).append_lines(outbox)
            if staged is not None:
                staged(staging)
            paths = run_paths(flow.root, run_id)
            os.rename(staging.root, paths.root)
            fsync_folder(runs)
        except BaseException:
            shutil.rmtree(staging.root, ignore_errors=True)
            raise
        handle = cls(flow, paths, state, clock, outbox)
        handle._caught_up = True
        return handle

    def change(self, transition: Transition) -> st.RunState:
        """Apply ``transition`` and write the new state and its events (the caller holds
        the run's lock)."""
        from ..model.machine import apply  # reading a run (status, runs) never moves it

        self.catch_up()
        made = apply(self.state, transition, now=self.clock())
        outbox = [e.stamped(made.state.revision) for e in made.events]
        save(made.state, self.paths.state, outbox)  # the commit point
        self.state, self.outbox = made.state, outbox
        self._caught_up = False  # until they are in the log: an error here leaves them out
        self.log.append_lines(outbox)
        self._caught_up = True
        for e in made.events:
            self._tell(e)
        return made.state

    def catch_up(self) -> None:
        """Append the events of the run's last change that events.jsonl lacks: a process
        that died after writing run.json left them out (or cut their append short). Each
        change does this first; a command that holds the run's lock and writes an event
        that records no change does it before that event."""
        if not self._caught_up:
            self.log.append_lines(self.log.lacking(self.state.revision, self.outbox))
            self._caught_up = True

    def emit(self, ev: Event) -> None:
        """Append an event that records no change of run.json (code ran, a tool was called)."""
        self.log.append(ev)
        self._tell(ev)

    def _tell(self, ev: Event) -> None:
        for listen in self.listeners:
            listen(ev)

    @functools.cached_property
    def log(self) -> EventLog:
        """The run's events.jsonl (events load when a command first reads or writes one:
        `praxis runs` and `check` never do)."""
        from .event_log import EventLog

        return EventLog(self.paths.events)

    @property
    def id(self) -> str:
        return self.paths.id

    @property
    def root(self) -> Path:
        return self.paths.root
