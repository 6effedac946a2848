"""What a flow and its runs are, read without changing them: the flow, its contract report,
a run's status, outputs and events. Imports no part of the engine that runs phases."""

from __future__ import annotations

import os
from pathlib import Path

from ..flows.definition import contract, host_resources
from ..flows.definition.contract import Problem, Report
from ..flows.model.events import Event
from ..flows.model.flow import Flow
from ..flows.report.compare import Comparison
from ..flows.report.compare import compare as compare_runs
from ..flows.report.status import Status, status_of
from ..flows.store.handle import RunHandle
from . import authority
from .accounts import Accounts
from .principals import Principal

FlowRef = Flow | str | os.PathLike[str]  # a Flow, a flow folder or its flow.yaml


def load(flow: FlowRef) -> Flow:
    """The Flow defined by ``flow``; raises FlowInvalid listing every problem."""
    return flow if isinstance(flow, Flow) else contract.require(Path(flow))


def check(flow: FlowRef) -> Report:
    """The contract report of a flow.yaml (``.ok``, ``.errors``, ``.lines()``), with an error
    for each profile entry it names that the person's profile lacks. Raises only for a
    profile that cannot be read (ProfileInvalid)."""
    found, report = contract.load(flow.root if isinstance(flow, Flow) else Path(flow))
    if found is not None:
        for where, fix in host_resources.missing(found):
            report.problems.append(Problem(where, fix))
    return report


def open_run(flow: FlowRef, run: str | None = None) -> RunHandle:
    """The run ``run`` of ``flow`` (None: its newest); NoRun when there is none."""
    return RunHandle.open(load(flow), run)


def status(
    flow: FlowRef,
    run: str | None = None,
    principal: Principal | None = None,
    *,
    accounts: Accounts | None = None,
) -> Status:
    """State, message, writable files and the exact next commands of a run: the route of
    ``principal`` (None: of whoever asks, as for any command), its grants in ``accounts``."""
    handle = open_run(flow, run)
    return status_of(handle, authority.standing(principal, handle, accounts=accounts))


def compare(flow: FlowRef, before: str, after: str) -> Comparison:
    """What changed from run ``before`` to run ``after`` of ``flow``."""
    loaded = load(flow)
    return compare_runs(open_run(loaded, before), open_run(loaded, after))


def outputs(flow: FlowRef, run: str | None = None) -> dict[str, Path]:
    """The declared outputs the run has written so far, name -> path, in phase order."""
    handle = open_run(flow, run)
    found: dict[str, Path] = {}
    for phase in handle.flow.phases:
        for name in phase.outputs:
            path = handle.paths.out(name)
            if path.is_file():
                found[name] = path
    return found


def events(flow: FlowRef, run: str | None = None) -> list[Event]:
    """The run's events, oldest first (typed: ``.kind``, ``.at`` and the event's fields)."""
    return open_run(flow, run).log.read()
