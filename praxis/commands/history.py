"""The commands that read what a run did: log, replay; and `praxis params`."""

from __future__ import annotations

import argparse
import sys
import time

from ..console import LiveTail, format_event
from ..errors import EXIT
from ..flows.definition.notebook_check import NotebookProblem
from ..flows.model.events import PhaseStarted
from ..flows.report import trace
from ..flows.report.replay import replay
from ..flows.store.event_log import EventLog
from ..flows.store.handle import NoRun, RunHandle
from ..flows.store.layout import list_run_ids, run_paths
from ..phases import notebook_params
from ..service.reading import load, open_run
from ..terminal import escape
from . import Usage


def cmd_log(args: argparse.Namespace) -> int:
    flow = load(args.flow)
    ids = list_run_ids(flow.root)
    run_id = args.run or (ids[-1] if ids else None)
    if run_id is None:
        raise NoRun(flow, None)
    paths = run_paths(flow.root, run_id)
    log = EventLog(paths.events)
    tail = LiveTail(paths.root)  # what running phases print
    seen, following = 0, False
    while True:
        events = log.read()
        for event in events[seen:]:
            print(format_event(event), flush=True)
        started = [e.phase for e in events[seen:] if isinstance(e, PhaseStarted)]
        seen = len(events)
        if not args.follow:
            return EXIT["ok"]
        state = RunHandle.open(flow, run_id).state
        running = [p.id for p in state.phases if p.status == "running"]
        for line in tail.lines(running + (started if following else [])):
            print(line, flush=True)
        following = True
        if state.status != "running" and seen:
            return EXIT["ok"]
        time.sleep(0.5)


def cmd_params(args: argparse.Namespace) -> int:
    flow = load(args.flow)
    if args.phase is not None and args.phase not in [p.id for p in flow.phases]:
        raise Usage(f"{flow.name} has no phase {args.phase!r}")
    try:
        lines, warnings = notebook_params.report(flow, args.phase)
    except (ValueError, NotebookProblem) as exc:
        raise Usage(str(exc)) from None
    for line in lines:
        print(escape(line))
    for line in warnings:
        print(escape(line), file=sys.stderr)
    return EXIT["ok"]


def cmd_replay(args: argparse.Namespace) -> int:
    run = open_run(args.flow, args.run)
    entries = trace.read(run)
    if not entries:
        raise Usage(
            f"run {run.id} has no trace: its commands ran without PRAXIS_TRACE=1 (or --trace)"
        )
    result = replay(entries, f"{run.flow.name} run {run.id}")
    for line in result.lines:
        print(escape(line))
    return EXIT["failed"] if result.differ else EXIT["ok"]
