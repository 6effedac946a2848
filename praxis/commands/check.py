"""`praxis check`: a flow definition read and checked, every problem printed."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import EXIT
from ..flows.definition import contract, notify_spec
from ..flows.definition.isolation import backend_of, on_host
from ..terminal import escape


def cmd_check(args: argparse.Namespace) -> int:
    flow, report = contract.load(Path(args.flow))
    for problem in report.problems:
        print(escape(str(problem)))  # flow.yaml is hostile input too
    if not report.ok:
        return EXIT["usage"]
    assert flow is not None
    notify_spec.require(flow.notify)  # a target the profile lacks: the entry to write, exit 2

    backend = backend_of(flow.sandbox)
    if on_host(backend):  # valid, but not isolated: never a plain "ok"
        print(
            f"{flow.name}: valid, {len(flow.phases)} phase(s), NOT isolated: the {backend} "
            "backend runs its code (check scripts too) on this host; it runs only with "
            "--allow-local"
        )
        return EXIT["ok"]
    print(f"{flow.name}: ok, {len(flow.phases)} phase(s)")
    return EXIT["ok"]
