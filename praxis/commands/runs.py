"""`praxis runs`: a flow's runs, newest first (or some of them deleted)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import EXIT
from ..flows.definition import contract
from ..flows.store.handle import RunHandle, listing
from ..flows.store.state_file import StateCorrupt
from ..terminal import escape
from . import Usage


def cmd_runs(args: argparse.Namespace) -> int:
    flow = contract.require(Path(args.flow))
    if args.delete or args.keep is not None:
        from ..service import acting  # deleting runs takes the runner; listing them does not

        if args.keep is not None and args.keep < 0:
            raise Usage("--keep takes a number of runs, 0 or more")
        for run_id in acting.delete_runs(flow, args.delete, keep=args.keep):
            print(f"deleted run {run_id}")
        return EXIT["ok"]
    lines = []
    with listing(flow) as ids:  # no run created or deleted while they are read
        for run_id in reversed(ids):
            try:
                state = RunHandle.open(flow, run_id).state
                extra = f" at Gate after {state.gate}" if state.waiting == "gate" else ""
                lines.append(f"{run_id}  {state.status}{extra}")
            except StateCorrupt as exc:
                lines.append(f"{run_id}  unreadable: {escape(exc.reason)}")
    for line in lines:
        print(line)
    return EXIT["ok"]
