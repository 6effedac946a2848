"""The facts of a run that its route is chosen from (``route.Facts``).

``state_facts`` is the part that run.json and flow.yaml give alone: pure, so the route of
every state can be tested without a run folder. ``facts`` adds what the run's files say
(the files to read at a Gate and their sha256, the failed phase's record, outputs changed
outside praxis, changed definitions and parameters, failing checks) and whether a process
holds the run. Reads only.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...argv import flow_text, program_argv, shown
from ..definition import digests as definition
from ..definition.digest import sha256_of
from ..engine import reconcile
from ..engine.acks import current as current_receipts
from ..engine.acks import to_read
from ..model import publishing
from ..model.flow import Flow
from ..model.forms import params_for
from ..model.machine import allows
from ..model.state import RunState
from ..model.transitions import Rerun
from ..store.handle import RunHandle
from ..store.lock import is_held
from .route import Facts, Standing, route

if TYPE_CHECKING:
    from ..engine.checks import Failure


def state_facts(state: RunState, flow: Flow, *, flow_arg: str, program: Sequence[str]) -> Facts:
    """The facts run.json and flow.yaml give: where the run is, the Gate and who may decide
    it, the failed phase's error and repeats, the phases a re-run may start from (by the
    state machine itself: ``machine.allows``)."""
    gate = state.gate if state.waiting == "gate" else None
    at = min(state.cursor, len(state.phases) - 1)
    began = state.definition.get("phases")
    failure, repeats, retries = None, 0, 0
    parts: tuple[str, ...] = ()
    if state.status == "failed" and state.phases:
        p = state.phases[at]
        failure, repeats, retries = one_line(p.error or "") or None, p.repeats, p.retries
        parts = tuple(n for n, q in p.partitions.items() if q.get("status") == "failed")
    edited = tuple((n, p.id) for p in state.phases for n in sorted(p.edited))
    return Facts(
        flow=flow_arg,
        run=state.run,
        status=state.status,
        revision=state.revision,
        cursor_phase=state.phases[at].id if state.phases else None,
        gate=gate,
        delegatable=_delegatable(flow, gate),
        approvers=next((p.approvers for p in flow.phases if p.id == gate), ()),
        managed=state.managed,
        left_running=any(p.status == "running" for p in state.phases),
        program=tuple(program),
        failure=failure,
        repeats=repeats,
        retries=retries,
        flow_changed=began is not None and began != [p.id for p in flow.phases],
        rerunnable=tuple(p.id for p in state.phases if allows(state, Rerun(phase=p.id))),
        phases=tuple(p.id for p in state.phases),
        edited=edited,
        keyless=tuple(_keyless(flow, edited)),
        attempt=state.phase(gate).attempt if gate is not None else 0,
        form=_form(flow, gate),
        retrying=_retrying(state, time.time()),
        failed_partitions=parts,
    )


def _form(flow: Flow, gate: str | None) -> tuple[tuple[str, str, bool], ...]:
    """The Gate's form: each field, its value to show (the default, else a placeholder), and
    whether the decider must give it."""
    form = next((p.form for p in flow.phases if p.id == gate), ())
    return tuple(
        (f.name, f.placeholder if f.default is None else str(f.default), f.needed) for f in form
    )


def _retrying(state: RunState, now: float) -> tuple[int, ...]:
    """(retry, of, seconds until it starts) of a phase waiting to be tried again."""
    for p in state.phases if state.status == "running" else ():
        if p.status == "pending" and "due" in p.retry:
            left = max(0, math.ceil(float(p.retry["due"]) - now))
            return int(p.retry["number"]), int(p.retry["of"]), left
    return ()


def _keyless(
    flow: Flow, edited: tuple[tuple[str, str], ...], run: RunHandle | None = None
) -> list[str]:
    """The edited outputs --keep-edits cannot re-apply: no row key (flow.yaml says), and, when
    the run's files are at hand, a header that repeats a column name (carry refuses those)."""
    if not edited:
        return []
    from ..engine.carry import keyless, repeated_columns  # a run with Gate edits only

    found = keyless(flow, edited)
    if run is not None:
        found += [n for n, _ in repeated_columns(run, edited) if n not in found]
    return found


def _delegatable(flow: Flow, gate: str | None) -> bool:
    return any(p.id == gate and p.delegatable for p in flow.phases)


def facts(
    run: RunHandle,
    held: int | None,
    failing: list[Failure],
    changed_phases: Sequence[str],
    params_changed: Sequence[str] = (),
    standing: Standing | None = None,
) -> Facts:
    """The facts of a run the route is chosen from (of the phases whose definition or
    parameters changed, those done: a stale one runs again when it is reached); with the
    caller's ``standing``, the caller's route."""

    state = run.state
    base = state_facts(state, run.flow, flow_arg=flow_text(run.flow), program=program_argv())
    if standing is not None:
        base = dataclasses.replace(base, **dataclasses.asdict(standing))
    done = {p.id for p in state.phases if p.status == "done"}
    read = [(shown(path), sha) for _, path, sha in to_read(run)] if base.gate else []
    receipts: list[tuple[str, str]] = []
    agent = base.caller.startswith("agent:") and "approve" not in base.refused
    if read and base.delegatable and (base.managed or agent):  # the agent's receipts matter
        mine = current_receipts(run, "agent")
        receipts = [(shown(run.root / rel), rid) for rel, rid in sorted(mine.items())]
    blocking = reconcile.blocking(run)
    record = None
    if state.status == "failed" and base.cursor_phase is not None:
        path = run.paths.record(base.cursor_phase)
        try:
            record = (shown(path), sha256_of(path))
        except OSError:
            record = None  # no record (the phase failed before it had one)
    pending, blocked = _publishing(run)
    return dataclasses.replace(
        base,
        publish_pending=pending,
        publish_blocked=blocked,
        checks_failing=tuple(str(f) for f in failing),
        read=tuple(read),
        held=held is not None,
        changed_outputs=tuple(dict.fromkeys((c.name, c.phase) for c, _ in blocking)),
        changed_phases=tuple(p for p in changed_phases if p in done),
        record=record,
        receipts=tuple(receipts),
        params_changed=tuple(p for p in params_changed if p in done),
        missing_outputs=tuple(dict.fromkeys(c.name for c, _ in blocking if not c.now)),
        keyless=tuple(_keyless(run.flow, base.edited, run)),
    )


def _publishing(run: RunHandle) -> tuple[tuple[str, ...], str | None]:
    """The publish: entries a done run has yet to write, and why it may not, if so."""
    if run.state.status != "done" or not run.flow.publish:
        return (), None
    events = run.log.read()
    pending = publishing.pending(run.flow, run.state, events)
    if not pending:
        return (), None
    return tuple(e.shown for e in pending), publishing.approval(run.flow, events)


def facts_and_route(
    run: RunHandle, standing: Standing | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's facts now and the route they give (the caller's, with its ``standing``), as
    ``status --json`` would show them."""
    held = is_held(run.paths.lock)
    changed, params = changes(run)
    f = facts(run, held, gate_checks(run), changed, params, standing)
    return f.to_dict(), route(f).to_dict()


def gate_checks(run: RunHandle) -> list[Failure]:
    """The checks failing now on the writable outputs of the Gate (none when not at one)."""
    if run.state.waiting != "gate" or run.state.gate is None:
        return []
    from ..engine.checks import gate_failures  # tables are read only at a Gate

    return gate_failures(run, reconcile.phase_version(run, run.state.gate))


def changes(run: RunHandle) -> tuple[list[str], list[str]]:
    """Done (or stale) phases whose definition is not what ran: (those whose flow.yaml entry
    or files changed, those that only ran with other parameters than the run's now). A run
    recorded before the code digest was has only the first kind."""
    if run.state.definition.get("phases") != [p.id for p in run.flow.phases]:
        return [], []  # another flow.yaml altogether: advance says so
    changed, params = [], []
    for p in run.state.phases:
        recorded = p.digests.get("definition")
        if p.status in ("done", "stale") and recorded:
            now = definition.digests_of(run.flow, run.flow.phase(p.id), params_for(run.state, p.id))
            if now["definition"] == recorded:
                continue
            if p.digests.get("code") == now["code"]:
                params.append(p.id)
            else:
                changed.append(p.id)
    return changed, params


def one_line(text: str, limit: int = 300) -> str:
    """The first line of ``text`` that says something, at most ``limit`` characters."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"
