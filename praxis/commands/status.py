"""`praxis status`: a run's state, its route and the exact next command."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import EXIT
from ..flows.definition import contract
from ..flows.engine.reconcile import reconcile_if_free
from ..flows.report.status import status_of
from ..flows.store.handle import RunHandle
from ..status_lines import receipt_lines, route_lines, timeline
from ..terminal import command, escape


def cmd_status(args: argparse.Namespace) -> int:
    flow = contract.require(Path(args.flow))
    reconcile_if_free(flow, args.run)  # hand edits first, when no other process holds the run
    run = RunHandle.open(flow, args.run)
    st = status_of(run)
    if args.json:
        print(json.dumps(st.to_dict(), indent=1))
        return EXIT["ok"]
    print(f"{flow.name} run {st.run}: {st.status} (revision {st.revision}) - {escape(st.message)}")
    print(timeline(run.state))
    for path in st.review:
        print(f"  review: {escape(path)}")
    for line in route_lines(st.route) + receipt_lines(st.receipt, st.managed):
        print(line)
    for cmd in st.next:
        print(f"next: {command(cmd)}")
    return EXIT["ok"]
