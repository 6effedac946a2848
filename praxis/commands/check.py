"""`praxis check`: a flow definition read and checked, every problem printed."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import EXIT
from ..flows.definition import contract, host_resources, profile
from ..flows.definition.isolation import backend_of, on_host
from ..flows.model.flow import Flow
from ..flows.report import keeping
from ..terminal import escape
from ..units import duration


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
    for line in _kept(flow):
        print(escape(line))

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


def _kept(flow: Flow) -> list[str]:
    """What starts the flow's runs by itself (kept by `praxis serve`, `praxis schedule`)."""
    out = []
    if flow.schedule is not None:
        facts = keeping.schedule_facts(flow, keeping.clock_from()())
        out.append(
            f"schedule: {facts['cron']} ({facts['timezone']}, catchup {facts['catchup']}): "
            f"next tick {facts['next']}, run parameter tick"
        )
    if flow.trigger is not None:
        out.append(
            f"trigger: a run per file {flow.trigger.files} once unchanged for "
            f"{duration(flow.trigger.settle)}, run parameter file"
        )
    for p in flow.phases:
        if p.deadline is not None:
            out.append(
                f"Gate after {p.id}: after {duration(p.deadline)} waiting, "
                f"{', '.join(p.escalate)} told"
            )
    return out
