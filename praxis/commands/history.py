"""The commands that read what a run did: log, replay; and `praxis params`."""

from __future__ import annotations

import argparse
import json
import sys
import time

from ..console import LiveTail, format_event
from ..errors import EXIT
from ..flows.definition.notebook_check import NotebookProblem
from ..flows.model.events import PhaseStarted
from ..flows.report import trace
from ..flows.report.compare import MAX_CELLS, Comparison, OutputChange
from ..flows.report.replay import replay
from ..flows.store.event_log import EventLog
from ..flows.store.handle import NoRun, RunHandle
from ..flows.store.layout import list_run_ids, run_paths
from ..phases import notebook_params
from ..service.reading import compare, load, open_run
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


def cmd_diff(args: argparse.Namespace) -> int:
    found = compare(args.flow, args.before, args.after)
    if args.json:
        print(json.dumps(found.to_dict(), indent=1, default=str))
        return EXIT["ok"]
    for line in diff_lines(found):
        print(escape(line))
    return EXIT["ok"]


def diff_lines(c: Comparison) -> list[str]:
    """A comparison in words: parameters, phases, outputs (what a run wrote is escaped by the
    caller)."""
    lines = [f"{c.flow}: run {c.before} -> run {c.after}", "parameters:"]
    for p in c.params:
        if p.missing == "before":
            lines.append(f"  {p.name}: (not set) -> {_value(p.after)}")
        elif p.missing == "after":
            lines.append(f"  {p.name}: {_value(p.before)} -> (not set)")
        elif p.same:
            lines.append(f"  {p.name}: {_value(p.before)} (same)")
        else:
            lines.append(f"  {p.name}: {_value(p.before)} -> {_value(p.after)}")
    if not c.params:
        lines.append("  (none)")
    lines.append("phases:")
    width = max((len(p.phase) for p in c.phases), default=0)
    for ph in c.phases:
        note = " (its code or parameters changed)" if ph.definition_changed else ""
        lines.append(f"  {ph.phase:<{width}}  {ph.before} -> {ph.after}{note}")
    lines.append("outputs:")
    for o in c.outputs:
        lines.extend(_output_lines(o))
    return lines


def _output_lines(o: OutputChange) -> list[str]:
    head = f"  {o.name} ({o.phase}): {o.state}"
    if o.problem:
        return [f"{head}; rows not compared: {o.problem}"]
    if o.state != "differs" or not (o.added or o.removed or o.changed):
        return [head]
    by = f" by key {', '.join(o.key)}" if o.key else " (rows aligned by content: no key declared)"
    lines = [f"{head}: {o.added} row(s) added, {o.removed} removed, {o.changed} changed{by}"]
    for row in o.rows:
        lines.append(f"    {row['row']}: {row['change']}")
    for cell in o.cells:
        lines.append(f"    {cell['row']}: {cell['column']} {cell['old']!r} -> {cell['new']!r}")
    if len(o.cells) >= MAX_CELLS or (o.key and o.added + o.removed > len(o.rows)):
        lines.append(f"    (the first {MAX_CELLS} rows and cells are shown)")
    return lines


def _value(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)
