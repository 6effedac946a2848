"""`praxis status`: a run's state, its route and the exact next command."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..argv import flow_text, program_argv
from ..errors import EXIT
from ..flows.definition import contract
from ..flows.engine.reconcile import reconcile_if_free
from ..flows.model.flow import Flow
from ..flows.report import keeping, route
from ..flows.report.status import status_of
from ..flows.store.handle import NoRun, RunHandle
from ..service import authority
from ..status_lines import receipt_lines, route_lines, timeline
from ..terminal import command, escape


def cmd_status(args: argparse.Namespace) -> int:
    if args.json:
        try:
            flow = contract.require(Path(args.flow))
            run = _open(flow, args.run)
        except (contract.FlowInvalid, NoRun) as exc:
            print(json.dumps(_without(args.flow, exc), indent=1))
            return exc.exit_code  # the route says what to do; the code, that it is not a run
    else:
        flow = contract.require(Path(args.flow))
        run = _open(flow, args.run)
    st = status_of(run, authority.standing(None, run))  # the route of whoever asks
    if args.json:
        print(json.dumps({**st.to_dict(), **_kept(flow, run)}, indent=1))
        return EXIT["ok"]
    print(f"{flow.name} run {st.run}: {st.status} (revision {st.revision}) - {escape(st.message)}")
    print(timeline(run.state))
    for path in st.review:
        print(f"  review: {escape(path)}")
    gated = next((p for p in st.phases if p["id"] == st.gate), None)
    for row in gated["partitions"] if gated and st.waiting == "gate" else []:
        shown = ", ".join(f"output/{o}" for o in row["outputs"]) or "no outputs"
        print(f"  read: {escape(row['partition'])} ({row['status']}): {escape(shown)}")
    for line in route_lines(st.route) + receipt_lines(st.receipt, st.managed):
        print(line)
    for line in _kept_lines(flow, run):
        print(line)
    for cmd in st.next:
        print(f"next: {command(cmd)}")
    return EXIT["ok"]


def _kept(flow: Flow, run: RunHandle) -> dict[str, Any]:
    """``status --json``'s schedule (next tick, last ticks) and the Gate's time left."""
    found: dict[str, Any] = {}
    now = keeping.clock_from()()
    if flow.schedule is not None:
        found["schedule"] = keeping.schedule_facts(flow, now)
    left = keeping.time_left(flow, run, now)
    if left is not None:
        found["deadline_left"] = left
    return found


def _kept_lines(flow: Flow, run: RunHandle) -> list[str]:
    now = keeping.clock_from()()
    out = [escape(line) for line in keeping.schedule_lines(flow, now)]
    left = keeping.time_left(flow, run, now)
    if left is not None:
        out.append(f"gate deadline: {keeping.left_words(left)}")
    return out


def _open(flow: Flow, run_id: str | None) -> RunHandle:
    reconcile_if_free(flow, run_id)  # hand edits first, when no other process holds the run
    return RunHandle.open(flow, run_id)


def _without(flow_ref: str, exc: contract.FlowInvalid | NoRun) -> dict[str, Any]:
    """What `status --json` prints when there is no run to show: the route from there (run
    the flow; or fix flow.yaml, its problems listed), and ``problems`` as (file, line,
    message)."""
    program = tuple(program_argv())
    if isinstance(exc, NoRun):
        shown = flow_text(exc.flow)
        r = route.without_run(shown, program)
        return {"flow": exc.flow.name, "run": None, "status": "none", "route": r.to_dict(),
                "problems": [], "message": str(exc)}  # fmt: skip
    problems = exc.report.errors
    r = route.invalid(flow_ref, [str(p) for p in problems], program)
    return {
        "flow": flow_ref, "run": None, "status": "invalid", "route": r.to_dict(),
        "problems": [{"file": p.file, "line": p.line, "message": p.message} for p in problems],
        "message": str(exc),
    }  # fmt: skip
