"""What changes a run: begin, run, advance, approve, reject, manage, accept, rerun, cancel,
edit, delete runs, gc. The only caller of the runner (``praxis.flows.engine.runner``)
outside ``praxis.flows``; the runner keeps the engine, this module the calling convention.

Every verb takes its flow as a ``FlowRef`` and its run as an id (None: the newest run),
its options keyword-only. Errors are the runner's (``Refused``, ``Unbound``, ``Busy``,
``NotWritable``, ``FlowInvalid``, ``NoRun``, ``SandboxInvalid``, ``SandboxUnavailable``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox import Sandbox

from ..flows.definition import sandbox_config
from ..flows.engine import runner
from ..flows.engine.acks import READ_BYTES, Read
from ..flows.engine.binding import Unbound
from ..flows.engine.context import OnMessage
from ..flows.engine.opening import Opening
from ..flows.engine.runner import RunOptions, SandboxFactory, confined, default_sandbox
from ..flows.model.events import Event
from ..flows.model.flow import Flow
from ..flows.model.state import RunState
from ..flows.store.handle import RunHandle
from ..flows.store.objects import Swept
from ..llm.given import Approver, given_to
from . import authority
from .accounts import Accounts, Grant, parse_duration
from .authority import Authority
from .principals import CURRENT, Principal, resolve
from .reading import FlowRef, load

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from ..flows.engine.notify import Notifier

__all__ = [
    "Approver",
    "Principal",
    "OnMessage",
    "RunOptions",
    "Opening",
    "SandboxChoice",
    "SandboxFactory",
    "Unbound",
    "accept",
    "advance",
    "approve",
    "begin",
    "cancel",
    "confined",
    "default_sandbox",
    "delete_runs",
    "edit",
    "edit_with_file",
    "gc",
    "manage",
    "publish",
    "read",
    "reject",
    "rerun",
    "run",
    "run_options",
    "sandbox_factory",
]

# None: the flow's own ``sandbox:`` section; a mapping laid over it (the caller's options,
# checked by the backend); a callable ``(flow, run) -> Sandbox`` that builds it.
SandboxChoice = SandboxFactory | Mapping[str, Any] | None
FIXED = ("timeout", "collect")  # sandbox options the phases read from flow.yaml itself


def principal_of(principal: Principal | None, actor: str | None = None) -> Principal:
    """The caller: ``principal`` as a front door established it (the page's login, the MCP
    server's agent), else resolved from this process (``principals.resolve``); ``actor``
    ("agent") narrows it, and never raises an agent to a person."""
    if principal is None:
        principal = CURRENT.get()
    if principal is None:
        return resolve(narrow=actor)
    if actor == "agent":
        return principal.as_agent()
    if actor == "person" and not principal.is_person:
        return resolve({"PRAXIS_ACTOR": "person"}, terminal=False)  # refused: NotPerson
    return principal


def _acting(
    principal: Principal | None, verb: str, flow: Flow, run: str | None, actor: str | None = None
) -> authority.Acting:
    """``authority.acting`` for the caller, refusals noted in the run's events."""
    who = principal_of(principal, actor)
    return authority.acting(who, verb, flow, run, on_refused=_note_refusal)


def _note_refusal(found: Authority, why: str) -> None:
    runner.note_refusal(found.flow, found.run, found.gate or "", found.verb, found.actor, why)


def begin(
    flow: FlowRef, *, params: dict[str, str] | None = None, principal: Principal | None = None
) -> RunHandle:
    """A new run, paused at its first phase (``.id``, ``.state``, ``.paths``); ``params``
    override flow.yaml's (``-p key=value``), typed by their defaults."""
    loaded = load(flow)
    with _acting(principal, "begin", loaded, None):
        return runner.begin(loaded, params=params)


def run(
    flow: FlowRef,
    *,
    params: dict[str, str] | None = None,
    on_begun: Callable[[RunHandle], None] | None = None,
    managed: bool = False,
    actor: str | None = None,
    sandbox: SandboxChoice = None,
    approver: Approver | None = None,
    on_event: Callable[[Event], None] | None = None,
    on_message: OnMessage = lambda message: None,
    model: BaseChatModel | None = None,
    reuse: bool = True,
    notifier: Notifier | None = None,
    sleep: Callable[[float], None] = time.sleep,
    partitions: str | None = None,
    principal: Principal | None = None,
) -> RunState:
    """Begin a run and advance it, under one hold of the run's lock (no other process
    advances it first); ``on_begun`` is told the new run before its first phase.
    ``managed``: a person lets an agent decide its delegatable Gates. ``partitions``
    (``a..b`` or ``a,b``): a backfill of those partitions of each fan-out. The rest as
    ``advance`` (the run is told to ``notifier`` as an advance's is)."""
    loaded = load(flow)
    if managed:  # an old caller's managed mode: a person's, as a grant is
        with _acting(principal, "manage", loaded, None, actor):
            pass
    with _acting(principal, "run", loaded, None, actor) as auth:
        options = run_options(sandbox, on_event, on_message, model, approver, reuse, notifier,
                              sleep)  # fmt: skip
        return runner.run(
            loaded,
            options=options,
            params=params,
            on_begun=on_begun,
            managed=managed,
            actor=auth.principal.kind,
            partitions=partitions,
        )


def advance(
    flow: FlowRef,
    run: str | None = None,
    *,
    sandbox: SandboxChoice = None,
    approver: Approver | None = None,
    on_event: Callable[[Event], None] | None = None,
    on_message: OnMessage = lambda message: None,
    model: BaseChatModel | None = None,
    reuse: bool = True,
    opening: Opening | None = None,
    notifier: Notifier | None = None,
    expect_revision: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
    principal: Principal | None = None,
) -> RunState:
    """Run phases until a Gate, a failure, the end, or a cancel; returns the state reached.
    ``expect_revision``: refused, nothing changed, when the run moved on since it.

    ``sandbox``: None uses the flow's own ``sandbox:`` section (auto = Docker; local kernels
    only where the person allowed them, ``praxis.flows.definition.isolation``); a mapping such
    as ``{"backend": "local"}`` is laid over that section, the caller's own choice of backend
    (an option the backend does not take is SandboxInvalid naming the nearest it does); a
    callable ``(flow, run) -> Sandbox`` builds the sandbox itself. ``on_event`` is called with
    each ``Event`` as it is recorded; ``on_message`` with short texts for a person (status
    lines, and what phases print as ``praxis.flows.store.live.Output`` pieces). ``model``: the
    chat model of the run's agent phases (a langchain-core chat model), instead of the one
    flow.yaml's ``model`` names. ``reuse`` False runs stale phases even when nothing they
    depend on changed. ``opening``: the run's sandbox opened ahead (``praxis serve``).
    ``notifier``: who is told when the run waits, fails or is done (default: from the
    environment). ``sleep``: how a retry's backoff is waited (flow.yaml ``retries:``).
    """
    loaded = load(flow)
    with _acting(principal, "advance", loaded, run):
        options = run_options(sandbox, on_event, on_message, model, approver, reuse, notifier,
                              sleep)  # fmt: skip
        return runner.advance(
            loaded, run, options=options, opening=opening, expect_revision=expect_revision
        )


def approve(
    flow: FlowRef,
    run: str | None = None,
    *,
    expect_revision: int | None = None,
    gate: str | None = None,
    attempt: int | None = None,
    actor: str | None = None,
    receipts: list[str] | None = None,
    values: Mapping[str, Any] | None = None,
    principal: Principal | None = None,
) -> RunState:
    """Approve the Gate the run waits at (then ``advance`` continues it). Bound to what you
    saw: ``expect_revision``, ``gate`` (the phase the Gate follows) or ``attempt`` (its
    attempt at the Gate) is required (``Unbound`` otherwise); one for another Gate or attempt
    is refused, and ``gate`` alone once the phase ran more than once. ``actor``: "person"
    (default, or $PRAXIS_ACTOR) or "agent"; ``receipts``: the receipt ids ``read`` returned
    for each file the route asks an agent to read first. ``values``: the answers to the
    Gate's form (flow.yaml ``review: {form:}``), text or JSON values by field, checked
    (BadValue naming the field, nothing changed); they reach the later phases as params."""
    loaded = load(flow)
    with _acting(principal, "approve", loaded, run, actor) as auth:
        return runner.approve(
            loaded, run, expect_revision=expect_revision, gate=gate, attempt=attempt,
            actor=auth.actor, receipts=receipts, values=values, granted=auth.granted,
        )  # fmt: skip


def reject(
    flow: FlowRef,
    reopen: str,
    note: str,
    run: str | None = None,
    *,
    expect_revision: int | None = None,
    gate: str | None = None,
    attempt: int | None = None,
    actor: str | None = None,
    receipts: list[str] | None = None,
    edits: str | None = None,
    principal: Principal | None = None,
) -> RunState:
    """Reject at the Gate: phase ``reopen`` runs again, with ``note`` for an agent's prompt.
    Bound like ``approve``; ``edits`` ("keep" or "discard") when it replaces Gate edits."""
    loaded = load(flow)
    with _acting(principal, "reject", loaded, run, actor) as auth:
        return runner.reject(
            loaded, reopen, note, run, expect_revision=expect_revision, gate=gate,
            attempt=attempt, actor=auth.actor, receipts=receipts, edits=edits,
            granted=auth.granted,
        )  # fmt: skip


def read(
    flow: FlowRef,
    path: str,
    run: str | None = None,
    *,
    actor: str | None = None,
    limit: int = READ_BYTES,
    principal: Principal | None = None,
) -> Read:
    """Read the run's file ``path`` (relative to the run's folder) through praxis: its first
    ``limit`` bytes, its sha256, and the receipt recorded for ``actor`` (the reader), which
    a Gate decision passes to show the file was read as it is."""
    who = principal_of(principal, actor)
    return runner.read(load(flow), path, run, actor=who.label, limit=limit)


def manage(
    flow: FlowRef,
    run: str | None = None,
    *,
    agent: str,
    duration: str = "2h",
    grant: bool = True,
    actor: str | None = None,
    principal: Principal | None = None,
    accounts: Accounts | None = None,
) -> Grant | int:
    """A person lets ``agent`` decide the delegatable Gates of run ``run`` (None: every run
    of the flow) for ``duration`` (``30m``, ``2h``, ``1d``): the grant, recorded in the audit.
    ``grant=False`` revokes the agent's live grants there: how many."""
    loaded = load(flow)
    accounts = Accounts() if accounts is None else accounts
    seconds = parse_duration(duration) if grant else 0.0
    who = principal_of(principal, actor)
    found = authority.authorize(who, "manage", loaded, run, accounts=accounts)
    if not grant:
        n = accounts.revoke_grants(agent, found.flow, run)
        authority.record(found, "revoked", f"agent:{agent}", accounts=accounts)
        if run is not None:  # the run's route no longer offers an agent its Gates
            runner.manage(loaded, run, grant=False, actor=who.label)
        return n
    made = accounts.grant(agent, found.flow, run, who.label, seconds)
    authority.record(found, "granted", f"agent:{agent} for {duration}", accounts=accounts)
    if run is not None:  # recorded in the run's events; its route offers an agent its Gates
        runner.manage(loaded, run, grant=True, actor=who.label)
    return made


def accept(
    flow: FlowRef,
    name: str,
    run: str | None = None,
    *,
    actor: str | None = None,
    expect_revision: int | None = None,
    principal: Principal | None = None,
) -> RunState:
    """A person accepts output ``name``, changed outside praxis, as its phase's."""
    loaded = load(flow)
    with _acting(principal, "accept", loaded, run, actor) as auth:
        return runner.accept(loaded, name, run, actor=auth.actor, expect_revision=expect_revision)


def rerun(
    flow: FlowRef,
    from_phase: str,
    run: str | None = None,
    *,
    expect_revision: int | None = None,
    params: dict[str, str] | None = None,
    reuse: bool = True,
    edits: str | None = None,
    partition: str | None = None,
    principal: Principal | None = None,
) -> RunState:
    """Go back to ``from_phase``; the earlier attempt is kept under attempts/. ``params``
    override the run's for the phases run again; ``edits`` ("keep" or "discard") when it
    would replace outputs edited at a Gate; ``partition``: of a fan-out, only that one runs
    again."""
    loaded = load(flow)
    with _acting(principal, "rerun", loaded, run):
        return runner.rerun(
            loaded, from_phase, run, expect_revision=expect_revision, params=params,
            reuse=reuse, edits=edits, partition=partition,
        )  # fmt: skip


def cancel(
    flow: FlowRef,
    run: str | None = None,
    *,
    expect_revision: int | None = None,
    principal: Principal | None = None,
) -> tuple[RunState, bool]:
    """Cancel the run: (state, True) when done now, (state, False) when the process advancing
    it will stop at the next cell."""
    loaded = load(flow)
    with _acting(principal, "cancel", loaded, run):
        return runner.cancel(loaded, run, expect_revision=expect_revision)


def publish(flow: FlowRef, run: str | None = None) -> list[runner.PublishOutcome]:
    """Write the done run's approved outputs to their tables (flow.yaml ``publish:``), once a
    person approved its last Gate; an entry already published at its digest is not written
    again. Refused before then; PublishIncomplete when an entry failed (its table as it was)."""
    return runner.publish(load(flow), run)


def edit(
    flow: FlowRef,
    name: str,
    data: bytes | str,
    run: str | None = None,
    *,
    expect_revision: int | None = None,
    actor: str | None = None,
    by: str = "reviewer",
    principal: Principal | None = None,
) -> RunState:
    """Replace writable output ``name`` at a Gate (str is written as UTF-8); the edit is
    recorded with its diff, made ``by`` "reviewer" (the API, the CLI) or "web"."""
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    loaded = load(flow)
    with _acting(principal, "edit", loaded, run, actor) as auth:
        return runner.edit(
            loaded, name, raw, run, expect_revision=expect_revision, actor=auth.actor, by=by
        )


def edit_with_file(
    flow: FlowRef,
    name: str,
    staged: Path,
    run: str | None = None,
    *,
    expect_revision: int | None = None,
    by: str = "web",
    diff: dict[str, Any] | None = None,
    passed: bool = False,
    principal: Principal | None = None,
) -> RunState:
    """``edit`` with a file already written beside the run's outputs (same file system),
    moved into place; ``diff``, when known (a cell save), is recorded as the edit's;
    ``passed``: the file passed flow.yaml's declared checks."""
    loaded = load(flow)
    with _acting(principal, "edit", loaded, run) as auth:
        return runner.edit(
            loaded, name, staged, run, expect_revision=expect_revision, by=by, diff=diff,
            passed=passed, actor=auth.actor,
        )  # fmt: skip


def delete_runs(
    flow: FlowRef,
    ids: list[str],
    *,
    keep: int | None = None,
    principal: Principal | None = None,
) -> list[str]:
    """Delete the runs ``ids`` (and, with ``keep``, all but the newest ``keep``); the ids
    deleted. A person's only."""
    loaded = load(flow)
    with _acting(principal, "delete", loaded, None):
        return runner.delete_runs(loaded, ids, keep=keep)


def gc(flow: FlowRef) -> Swept:
    """Remove the objects of the flow's store that no run holds."""
    return runner.gc(load(flow))


def run_options(
    sandbox: SandboxChoice,
    on_event: Callable[[Event], None] | None,
    on_message: OnMessage,
    model: BaseChatModel | None,
    approver: Approver | None,
    reuse: bool,
    notifier: Notifier | None,
    sleep: Callable[[float], None],
) -> RunOptions:
    """The one ``RunOptions`` an advance (or a run) goes down the engine with, from the
    keywords of ``run`` and ``advance``: made here once, read where each is used."""
    return RunOptions(
        make_sandbox=sandbox_factory(sandbox),
        on_message=on_message,
        on_event=on_event,
        given=given_to("agent", model, approver),
        reuse=reuse,
        notifier=notifier,
        sleep=sleep,
    )


def sandbox_factory(choice: SandboxChoice) -> SandboxFactory:
    """How ``advance`` builds the run's sandbox from the caller's ``sandbox`` choice."""
    if choice is None:
        return default_sandbox
    if not isinstance(choice, Mapping):
        return choice
    override = dict(choice)
    fixed = " and ".join(k for k in FIXED if k in override)
    if fixed:  # the flow's own: the phases read them from flow.yaml
        why = f"sandbox: {fixed} cannot be overridden (the flow's own); set it in flow.yaml"
        raise sandbox_config.SandboxInvalid([why])

    def build(flow: Flow, run: RunHandle) -> Sandbox:
        # the caller's options, checked against the flow's backend before anything runs:
        # one the backend does not take is SandboxInvalid naming the nearest it does
        settings = sandbox_config.overlay(flow.sandbox, override, flow.root)
        merged = dataclasses.replace(flow, sandbox=settings)
        return default_sandbox(merged, run, chosen="backend" in override)

    return build
