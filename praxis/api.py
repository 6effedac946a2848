"""The Python API: the CLI's verbs as functions, for notebooks and scripts.

Thin wrappers over ``praxis.flows``: ``flow`` is always a Flow, a flow folder or its
flow.yaml; ``run`` a run id, the newest run when None. Errors are those of the runner
(``Refused``, ``Busy``, ``NotWritable``, ``FlowInvalid``, ``SandboxUnavailable``, ``NoRun``,
``Unbound``) plus ``NoOutput`` here.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import UsageError
from .flows.definition import contract
from .flows.definition.contract import Report
from .flows.engine import runner
from .flows.engine.context import Approver, OnMessage
from .flows.model.events import Event
from .flows.model.flow import Flow
from .flows.model.state import RunState
from .flows.report.status import Status, status_of
from .flows.store.handle import RunHandle

if TYPE_CHECKING:
    import pandas
    from langchain_core.language_models import BaseChatModel

FlowRef = Flow | str | os.PathLike[str]
SandboxChoice = runner.SandboxFactory | Mapping[str, Any] | None

READERS = {".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".json": "json", ".jsonl": "jsonl"}


class NoOutput(UsageError, LookupError):
    """Raised by ``read_table``/``outputs`` users when a run has no such output file (yet)."""

    def __init__(self, flow: str, run: str, name: str, present: list[str]) -> None:
        have = ", ".join(present) or "none yet"
        super().__init__(f"{flow} run {run} has no output {name!r} (outputs so far: {have})")
        self.name = name


def load(flow: FlowRef) -> Flow:
    """The Flow defined by ``flow``; raises FlowInvalid listing every problem."""
    return runner.load_flow(_ref(flow))


def check(flow: FlowRef) -> Report:
    """The contract report of a flow.yaml (``.ok``, ``.errors``, ``.lines()``); never raises."""
    path = flow.root if isinstance(flow, Flow) else Path(flow)
    return contract.check(path)


def begin(flow: FlowRef) -> RunHandle:
    """A new run, paused at its first phase (``.id``, ``.state``, ``.paths``)."""
    return runner.begin(_ref(flow))


def advance(
    flow: FlowRef,
    run: str | None = None,
    *,
    sandbox: SandboxChoice = None,
    approver: Approver | None = None,
    on_event: Callable[[Event], None] | None = None,
    on_message: OnMessage = lambda message: None,
    model: BaseChatModel | None = None,
) -> RunState:
    """Run phases until a Gate, a failure, the end, or a cancel; returns the state reached.

    ``sandbox``: None uses the flow's own ``sandbox:`` section (auto = Docker; local kernels
    only where the person allowed them, ``praxis.flows.definition.isolation``); a mapping such as
    ``{"backend": "local"}`` is laid over that section, the caller's own choice of backend;
    a callable ``(flow, run) -> Sandbox``
    builds the sandbox itself. ``on_event`` is called with each ``Event`` as it is recorded;
    ``on_message`` with short texts for a person (status lines, and what phases print as
    ``praxis.flows.store.live.Output`` pieces). ``model``: the chat model of the run's agent
    phases (a langchain-core chat model), instead of the one flow.yaml's ``model`` names.
    """
    return runner.advance(
        _ref(flow),
        run,
        make_sandbox=_factory(sandbox),
        approver=approver,
        on_event=on_event,
        on_message=on_message,
        model=model,
    )


def status(flow: FlowRef, run: str | None = None) -> Status:
    """State, message, writable files and the exact next commands of a run."""
    return status_of(_open(flow, run))


def approve(
    flow: FlowRef,
    run: str | None = None,
    *,
    expect_revision: int | None = None,
    gate: str | None = None,
    actor: str | None = None,
) -> RunState:
    """Approve the Gate the run waits at (then ``advance`` continues it). Bound to what you
    saw: ``expect_revision`` or ``gate`` (the phase the Gate follows) is required
    (``Unbound`` otherwise). ``actor``: "person" (default, or $PRAXIS_ACTOR) or "agent"."""
    return runner.approve(_ref(flow), run, expect_revision=expect_revision, gate=gate, actor=actor)


def reject(
    flow: FlowRef,
    reopen: str,
    note: str,
    run: str | None = None,
    *,
    expect_revision: int | None = None,
    gate: str | None = None,
    actor: str | None = None,
    edits: str | None = None,
) -> RunState:
    """Reject at the Gate: phase ``reopen`` runs again, with ``note`` for an agent's prompt.
    Bound like ``approve``; ``edits`` ("keep" or "discard") when it replaces Gate edits."""
    return runner.reject(
        _ref(flow), reopen, note, run, expect_revision=expect_revision, gate=gate, actor=actor,
        edits=edits,
    )  # fmt: skip


def manage(
    flow: FlowRef, run: str | None = None, *, grant: bool = True, actor: str | None = None
) -> RunState:
    """A person lets an agent decide the run's delegatable Gates (``grant=False``: takes it
    back)."""
    return runner.manage(_ref(flow), run, grant=grant, actor=actor)


def accept(
    flow: FlowRef, name: str, run: str | None = None, *, actor: str | None = None
) -> RunState:
    """A person accepts output ``name``, changed outside praxis, as its phase's."""
    return runner.accept(_ref(flow), name, run, actor=actor)


def rerun(
    flow: FlowRef,
    from_phase: str,
    run: str | None = None,
    *,
    expect_revision: int | None = None,
    edits: str | None = None,
) -> RunState:
    """Go back to ``from_phase``; the earlier attempt is kept under attempts/. ``edits``
    ("keep" or "discard") when it would replace outputs edited at a Gate."""
    return runner.rerun(_ref(flow), from_phase, run, expect_revision=expect_revision, edits=edits)


def cancel(
    flow: FlowRef, run: str | None = None, *, expect_revision: int | None = None
) -> tuple[RunState, bool]:
    """Cancel the run: (state, True) when done now, (state, False) when the process advancing
    it will stop at the next cell."""
    return runner.cancel(_ref(flow), run, expect_revision=expect_revision)


def edit(
    flow: FlowRef,
    name: str,
    data: bytes | str,
    run: str | None = None,
    *,
    expect_revision: int | None = None,
    actor: str | None = None,
) -> RunState:
    """Replace writable output ``name`` at a Gate (str is written as UTF-8); the edit is
    recorded with its diff."""
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return runner.edit(_ref(flow), name, raw, run, expect_revision=expect_revision, actor=actor)


def outputs(flow: FlowRef, run: str | None = None) -> dict[str, Path]:
    """The declared outputs the run has written so far, name -> path, in phase order."""
    handle = _open(flow, run)
    found: dict[str, Path] = {}
    for phase in handle.flow.phases:
        for name in phase.outputs:
            path = handle.paths.out(name)
            if path.is_file():
                found[name] = path
    return found


def events(flow: FlowRef, run: str | None = None) -> list[Event]:
    """The run's events, oldest first (typed: ``.kind``, ``.at`` and the event's fields)."""
    return _open(flow, run).log.read()


def read_table(flow: FlowRef, name: str, run: str | None = None) -> pandas.DataFrame:
    """Output ``name`` of a run as a DataFrame (.csv, .tsv, .parquet, .json, .jsonl)."""
    import pandas as pd

    handle = _open(flow, run)
    have = outputs(handle.flow, handle.id)
    if name not in have:
        raise NoOutput(handle.flow.name, handle.id, name, list(have))
    path = have[name]
    kind = READERS.get(path.suffix.lower())
    if kind == "csv":
        return pd.read_csv(path)
    if kind == "tsv":
        return pd.read_csv(path, sep="\t")
    if kind == "parquet":
        return pd.read_parquet(path)
    if kind in ("json", "jsonl"):
        return pd.read_json(path, lines=kind == "jsonl")
    kinds = ", ".join(READERS)
    raise ValueError(f"{name}: read_table reads {kinds} files; open {path} directly instead")


def _ref(flow: FlowRef) -> Flow | str | Path:
    return flow if isinstance(flow, Flow | str) else Path(flow)


def _open(flow: FlowRef, run: str | None) -> RunHandle:
    return RunHandle.open(load(flow), run)


def _factory(choice: SandboxChoice) -> runner.SandboxFactory:
    if choice is None:
        return runner.default_sandbox
    if isinstance(choice, Mapping):
        from .flows.definition import sandbox_config

        override = dict(choice)
        fixed = " and ".join(k for k in ("timeout", "collect") if k in override)
        if fixed:  # the flow's own: the phases read them from flow.yaml
            why = f"sandbox: {fixed} cannot be overridden (the flow's own); set it in flow.yaml"
            raise sandbox_config.SandboxInvalid([why])

        def build(flow: Flow, run: RunHandle) -> Any:
            # the caller's options, checked against the flow's backend before anything runs:
            # one the backend does not take is SandboxInvalid naming the nearest it does
            settings = sandbox_config.overlay(flow.sandbox, override, flow.root)
            merged = dataclasses.replace(flow, sandbox=settings)
            return runner.default_sandbox(merged, run, chosen="backend" in override)

        return build
    return choice
