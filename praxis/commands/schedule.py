"""`praxis schedule FLOW --once`: keep a flow's schedule, trigger and Gate deadlines from a
system cron (``praxis serve`` keeps them by itself while it runs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import EXIT
from ..flows.definition import contract
from ..service import keeper
from ..terminal import escape
from . import Usage
from .acting import cmd_advance


def cmd_schedule(args: argparse.Namespace) -> int:
    flow = contract.require(Path(args.flow))
    if not keeper.kept(flow):
        raise Usage(
            f"{flow.name} has no schedule:, trigger: nor Gate deadline: to keep; add one to "
            "flow.yaml (docs/how-to/schedules.md)"
        )
    if not args.once:
        raise Usage(
            "praxis schedule looks once: add --once (from a system cron, every minute), "
            "or keep the flow with praxis serve"
        )
    started = keeper.tend(flow, clock=keeper.clock_from())
    for s in started:
        print(f"started run {s.run} of {flow.name} ({escape(s.why)})", file=sys.stderr)
    if not started:
        print(f"{flow.name}: nothing due", file=sys.stderr)
    code = EXIT["ok"]
    for s in [] if args.no_advance else started:
        one = argparse.Namespace(**{**vars(args), "run": s.run, "expect_revision": None})
        code = max(code, cmd_advance(one))
    return code
