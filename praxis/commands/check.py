"""`praxis check`: a flow definition read and checked, every problem printed."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import EXIT
from ..flows.definition import contract, host_resources, profile
from ..flows.definition.isolation import backend_of, on_host
from ..terminal import escape


def cmd_check(args: argparse.Namespace) -> int:
    flow, report = contract.load(Path(args.flow))
    for problem in report.problems:
        print(escape(str(problem)))  # flow.yaml is hostile input too
    if not report.ok:
        return EXIT["usage"]
    assert flow is not None
    mine = profile.load() if host_resources.asked(flow) else None  # none asked: none read
    for line in host_resources.lines(flow, mine) if mine else ():
        print(escape(line))
    missing = host_resources.missing(flow, mine)
    lacking = [contract.Problem(where, fix) for where, fix in missing]
    for problem in lacking:
        print(escape(str(problem)))
    if lacking:
        return EXIT["usage"]

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
