"""What a person needs to know about a run, and the exact next command. Reads only (it asks
whether the run's lock is held; it never takes it)."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

from ...argv import shown as _rel
from ...command_line import Command
from ...units import duration
from ..engine import reconcile
from ..model.flow import Flow
from ..model.retry_policy import words as retry_words
from ..model.state import APPROVAL_LOST, STOPPED, PhaseState, RunState
from ..store.handle import RunHandle
from ..store.killed import in_words, report_of
from ..store.layout import writable_names
from ..store.lock import is_held
from .facts import changes, facts, gate_checks
from .receipt import receipt as receipt_of
from .route import Facts, Standing, route


@dataclass
class Status:
    flow: str
    run: str
    status: str
    revision: int
    waiting: str | None
    gate: str | None
    phases: list[dict[str, Any]]
    review: list[str] = field(default_factory=list)  # writable files, relative to the cwd
    next: list[str] = field(default_factory=list)  # commands to try, the first is the usual one
    message: str = ""
    holder: int | None = None
    backend: str | None = None
    changed: list[str] = field(default_factory=list)  # phases whose definition changed since
    params_changed: list[str] = field(default_factory=list)  # ran with other parameters
    params: dict[str, Any] = field(default_factory=dict)
    managed: bool = False
    checks: list[dict[str, Any]] = field(default_factory=list)  # failing at the Gate
    changed_outputs: list[dict[str, str]] = field(default_factory=list)  # outside praxis
    route: dict[str, Any] = field(default_factory=dict)
    receipt: dict[str, Any] = field(default_factory=dict)
    killed: dict[str, Any] | None = None  # what a killed runner's sandbox watchdog ended
    steps: list[Command] = field(default_factory=list)  # the route's commands, typed

    def to_dict(self) -> dict[str, Any]:
        """The status as ``status --json`` prints it (the route's commands as argv lists)."""
        return {k: v for k, v in self.__dict__.items() if k != "steps"}


def status_of(run: RunHandle, standing: Standing | None = None) -> Status:
    """The run's status; its route the caller's, given the caller's ``standing``
    (``praxis.service.authority.standing``)."""
    state = run.state
    flow = run.flow
    held = is_held(run.paths.lock)
    phases = [_phase_row(p, state) for p in state.phases]
    st = Status(
        flow=flow.name,
        run=run.id,
        status=state.status,
        revision=state.revision,
        waiting=state.waiting,
        gate=state.gate,
        phases=phases,
        holder=held,
        backend=state.backend,
    )
    running = next((p for p in state.phases if p.status == "running"), None)
    if running is not None and held is None:
        lost = APPROVAL_LOST if running.waiting == "approval" else STOPPED
        st.message = f"phase {running.id} was {lost}: no process is running it"
        for row in phases:
            if row["id"] == running.id:
                row["note"] = lost
    st.review = [_rel(run.paths.out(n)) for n in writable_names(flow, state)]
    st.params = dict(state.params)
    st.changed, st.params_changed = changes(run)
    if not st.message:
        st.message = _message(state, held)
    if st.changed and state.status != "running":
        st.message += (
            f"; changed since they ran: {', '.join(st.changed)} (re-run from {st.changed[0]})"
        )
    if st.params_changed and state.status != "running":
        st.message += f"; ran with other parameters: {', '.join(st.params_changed)}"
    st.managed = state.managed
    failing = gate_checks(run)
    st.checks = [f.to_dict() for f in failing]
    changed = reconcile.changed_outputs(run)
    st.changed_outputs = [c.to_dict() for c in changed]
    f = facts(run, held, failing, st.changed, st.params_changed, standing)
    r = route(f)
    st.route = r.to_dict()
    st.next = human_lines(f)
    st.steps = r.steps
    st.receipt = receipt_of(state, _events(run), [c.name for c in changed])
    if failing:
        from ..engine.checks import summary

        st.message += f"; {len(failing)} check(s) fail: {summary(failing)}"
    if changed:
        st.message += "; changed outside praxis: " + ", ".join(c.name for c in changed)
    st.message += _edited_note(flow, state)
    st.killed = report_of(run.paths.watchdog)
    if st.killed is not None:
        st.message += "; " + in_words(st.killed)
    return st


def _edited_note(flow: Flow, state: RunState) -> str:
    """Outputs carrying Gate edits, and whether a re-run can keep them."""
    found = [(n, p.id) for p in state.phases for n in sorted(p.edited)]
    if not found:
        return ""
    from ..engine import carry  # reads checks: only for a run with edits

    names = ", ".join(n for n, _ in found)
    cannot = carry.keyless(flow, found)
    if cannot:
        return (
            f"; edited at a Gate: {names} (a re-run or reopen cannot keep "
            f"{', '.join(cannot)}: no row key; declare key: under its checks)"
        )
    return f"; edited at a Gate: {names} (a re-run or reopen keeps them with --keep-edits)"


# The kinds of event the receipt shows (Gate decisions, edits), as events.jsonl spells them.
RECEIPT_KINDS = (
    *(b'"gate_approved"', b'"gate_rejected"', b'"artifact_edited"', b'"edits_carried"'),
)


def _events(run: RunHandle) -> list[Any]:
    """The run's events, for its receipt. A log that names none of ``RECEIPT_KINDS`` (and
    escapes no character, which could spell one) adds nothing to it: it is not parsed."""
    try:
        raw = run.paths.events.read_bytes()
        if b"\\u" not in raw and not any(kind in raw for kind in RECEIPT_KINDS):
            return []
        return run.log.read()
    except Exception:  # a corrupt log leaves the receipt without decisions, not status broken
        return []


def _phase_row(p: Any, state: RunState) -> dict[str, Any]:
    return {
        "id": p.id,
        "status": p.status,
        "attempt": p.attempt,
        "seconds": None if p.seconds is None else round(p.seconds, 3),
        "elapsed": _elapsed(p),
        "error": p.error,
        "outputs": sorted(p.hashes),
        "reused": p.reused,
        "reused_from": p.reused_from,
        "backend": p.backend,
        # "retrying in 10 s (2 of 3)" while the runner waits, "retry 2 of 3" while it runs
        "retry": retry_words(p.retry, time.time()) if state.status == "running" else None,
        "partitions": partition_rows(p),
    }


def partition_rows(p: PhaseState) -> list[dict[str, Any]]:
    """A fan-out's partitions, in the order they were first recorded: status, attempt, time,
    where each ran, its error, its outputs (relative to output/), what it was restored from."""
    rows = []
    for name, q in p.partitions.items():
        started, ended = q.get("started"), q.get("ended")
        rows.append(
            {
                "partition": name,
                "status": q.get("status", "pending"),
                "attempt": q.get("attempt", 0),
                "seconds": round(ended - started, 3) if started and ended else None,
                "node": q.get("node") or None,
                "error": q.get("error"),
                "outputs": [f"{p.id}/{name}/{o}" for o in sorted(q.get("hashes") or {})],
                "reused_from": q.get("source"),
            }
        )
    return rows


def _elapsed(p: PhaseState, now: float | None = None) -> float | None:
    """Seconds a running phase has run so far (None for any other)."""
    if p.status != "running" or p.started is None or p.ended is not None:
        return None
    return round(max((time.time() if now is None else now) - p.started, 0.0), 1)


def _message(state: RunState, held: int | None) -> str:
    if state.waiting == "gate":
        return f"waiting at the Gate after {state.gate}: review, then approve or reject"
    if state.status == "running":
        waits = next((p for p in state.phases if "due" in p.retry), None)
        if waits is not None:
            return f"{waits.id} failed; {retry_words(waits.retry, time.time())}"
        running = next((p for p in state.phases if _elapsed(p) is not None), None)
        where = f" {running.id} for {duration(_elapsed(running))}" if running else ""
        return f"running{where} (process {held})" if held else f"running{where}"
    if state.status == "failed":
        return f"failed: {state.error}"
    if state.status == "paused":
        nxt = state.next_phase
        return f"paused before {nxt.id}" if nxt else "paused"
    if state.status == "done":
        return "every phase done"
    return f"{state.status}: {state.error}" if state.error else state.status


def human_lines(f: Facts) -> list[str]:
    """The ``next:`` lines for a person: the route's own commands (the route a person takes
    at a delegatable Gate: no receipts asked of them), as typed, the first the usual one. A
    route with nothing to run (done, or a person's fix) offers the run's log."""
    r = route(dataclasses.replace(f, managed=False, program=("praxis",)))
    lines = [c.line() for c in r.steps if c.verb != "status"]  # the person is looking at it
    if f.held and r.step == "wait":
        lines = lines[:1]
    return lines or [Command("log", f.flow, run=f.run).line()]
