"""The one authorization of every verb that changes a run (DESIGN.md §14):
``authorize(principal, verb, flow, run)``, which every front door reaches through the
service (the CLI, MCP, the page, ``praxis.api``).

- At a Gate (approve, reject, edit; and rerun or cancel while the run waits at one, which
  decide about that Gate too): a person who holds one of the Gate's ``approvers`` roles (any
  person when none is listed); an agent only at a delegatable Gate, under a live grant of a
  person (``praxis manage --agent NAME --for 2h``).
- manage (grants), accept and delete: a person only.
- run, begin, advance: anyone (an advance never passes a Gate undecided).

Every refusal is recorded (the accounts' audit, and the run's ``decision_refused`` event)
before it is raised; every change that went through is recorded with its principal.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..argv import flow_text
from ..command_line import typed
from ..errors import PraxisError, Refused
from ..flows.model.flow import Flow
from ..flows.report.route import Standing
from ..flows.store.handle import NoRun, RunHandle
from .accounts import Accounts, Entry
from .principals import CURRENT, Principal, resolve

GATE_VERBS = ("approve", "reject", "edit")
AT_GATE_VERBS = ("rerun", "cancel")  # decisions about the Gate the run waits at, if any
PERSON_VERBS = ("manage", "accept", "delete")
FREE_VERBS = ("run", "begin", "advance")
VERBS = (*GATE_VERBS, *AT_GATE_VERBS, *PERSON_VERBS, *FREE_VERBS)


OnRefused = Callable[["Authority", str], None]  # records a refusal in the run's events


class NotAuthorized(Refused):
    """Raised when the principal may not take the verb on this run; ``needed`` names who
    may (a role, a person, a grant)."""

    def __init__(self, message: str, *, needed: str, revision: int | None = None) -> None:
        super().__init__(message, revision=revision)
        self.needed = needed


@dataclass(frozen=True)
class Authority:
    """What ``authorize`` found: the principal, the Gate decided about (None: no Gate), the
    revision it saw and whether an agent acts under a person's grant."""

    principal: Principal
    verb: str
    flow: str
    run: str | None
    gate: str | None
    revision: int | None
    granted: bool

    @property
    def actor(self) -> str:
        return self.principal.label


def flow_key(flow: Flow) -> str:
    """How the audit names a flow: its folder, resolved."""
    return str(Path(flow.root).resolve())


def who_may(principal: Principal | None, flow: Flow, gate: str) -> str:
    """Who may decide the Gate after ``gate``, in words (for a refusal or the route)."""
    phase = flow.phase(gate)
    people = "a person with role " + " or ".join(phase.approvers) if phase.approvers else "a person"
    if phase.delegatable:
        return f"{people}, or an agent under a person's grant"
    return people


def may_decide(
    principal: Principal, flow: Flow, gate: str, run: str | None, accounts: Accounts
) -> bool:
    """Whether ``principal`` may decide the Gate after ``gate`` on run ``run`` (nothing
    recorded): the page's "waiting for me", the route's who."""
    return refusal(principal, "approve", flow, gate, run, accounts)[0] is None


def refusal(
    principal: Principal,
    verb: str,
    flow: Flow,
    gate: str | None,
    run: str | None,
    accounts: Accounts,
) -> tuple[str | None, str, bool]:
    """The rule itself (nothing recorded): why ``principal`` may not take ``verb`` on run
    ``run`` (None: it may), who may, and whether it acts under a person's grant; ``gate``: the
    Gate the verb decides about (None: none)."""
    if verb in PERSON_VERBS and not principal.is_person:
        return f"only a person may {verb}", "a person", False
    if gate is None:
        return None, "", False
    phase = flow.phase(gate)
    needed = who_may(principal, flow, gate)
    if principal.is_person:
        if principal.holds(phase.approvers):
            return None, needed, False
        held = ", ".join(principal.roles) or "no role"
        return (
            f"the Gate after {gate} needs role {' or '.join(phase.approvers)}; "
            f"{principal.label} holds {held}",
            needed,
            False,
        )
    if not phase.delegatable:
        return (
            f"the Gate after {gate} is not delegatable: {needed} decides it "
            "(review: {required: true, delegatable: true} lets an agent under a grant)",
            needed,
            False,
        )
    if accounts.live_grant(principal.name, flow_key(flow), run) is None:
        return (
            f"{principal.label} holds no live grant on run {run}: a person grants one with "
            + typed("manage", flow_text(flow), agent=principal.name, duration="2h"),
            needed,
            False,
        )
    return None, needed, True


def decides_about(verb: str, waiting: str | None) -> str | None:
    """The Gate a verb decides about: the one the run waits at (None: no Gate) for a Gate
    verb, and for a rerun or cancel while it waits there."""
    return (
        waiting if verb in GATE_VERBS or (verb in AT_GATE_VERBS and waiting is not None) else None
    )


def authorize(
    principal: Principal,
    verb: str,
    flow: Flow,
    run: str | None,
    *,
    accounts: Accounts | None = None,
    on_refused: OnRefused | None = None,
) -> Authority:
    """The authority of ``principal`` to take ``verb`` on run ``run`` (None: the newest) of
    ``flow``; NotAuthorized (recorded) when it has none."""
    accounts = Accounts() if accounts is None else accounts
    handle = _open(flow, run, verb)
    rid = handle.id if handle is not None else run
    revision = handle.state.revision if handle is not None else None
    waiting = handle.state.gate if handle is not None and handle.state.waiting == "gate" else None
    gate = decides_about(verb, waiting)
    if verb not in VERBS:
        raise ValueError(f"unknown verb {verb!r}")
    why, needed, granted = refusal(principal, verb, flow, gate, rid, accounts)
    found = Authority(principal, verb, flow_key(flow), rid, gate, revision, granted)
    if why is not None:
        refuse(found, why, handle, accounts=accounts, needed=needed, on_refused=on_refused)
    return found


def refuse(
    found: Authority,
    why: str,
    handle: RunHandle | None = None,
    *,
    accounts: Accounts | None = None,
    needed: str = "",
    on_refused: OnRefused | None = None,
) -> None:
    """Record the refusal (audit; the run's events when it can be taken now), then raise."""
    record(found, "refused", why, accounts=accounts)
    if handle is not None and found.gate is not None and on_refused is not None:
        on_refused(found, why)
    where = f"run {found.run}: " if found.run else ""
    raise NotAuthorized(
        f"{where}{found.actor} may not {found.verb}: {why}",
        needed=needed,
        revision=found.revision,
    )


def record(
    found: Authority, outcome: str, reason: str = "", *, accounts: Accounts | None = None
) -> None:
    accounts = Accounts() if accounts is None else accounts
    accounts.record(
        Entry(
            at=accounts.now(), flow=found.flow, run=found.run, revision=found.revision,
            gate=found.gate, verb=found.verb, principal=found.actor, outcome=outcome,
            reason=reason,
        )
    )  # fmt: skip


Acting = AbstractContextManager[Authority]


@contextmanager
def acting(
    principal: Principal,
    verb: str,
    flow: Flow,
    run: str | None,
    *,
    accounts: Accounts | None = None,
    on_refused: OnRefused | None = None,
) -> Iterator[Authority]:
    """``authorize``, then the change in the ``with`` block, recorded as done; a Refused the
    engine raises (a failing check, a receipt missing, another attempt) is recorded too."""
    found = authorize(principal, verb, flow, run, accounts=accounts, on_refused=on_refused)
    try:
        yield found
    except Refused as exc:
        record(found, "refused", str(exc), accounts=accounts)
        raise
    record(found, "done", accounts=accounts)


def caller(
    principal: Principal | None = None, accounts: Accounts | None = None
) -> Principal | None:
    """Who asks, as for any command: ``principal`` (a front door's), else the one the context
    runs as (the page's signed-in person, an MCP request's agent), else this process's
    (``PRAXIS_TOKEN``, the terminal); None when its token is not one (the route is then
    nobody's: as before it knew its caller)."""
    if principal is not None:
        return principal
    found = CURRENT.get()
    if found is not None:
        return found
    try:
        return resolve(accounts=accounts)
    except PraxisError:
        return None


def standing(
    principal: Principal | None, run: RunHandle, *, accounts: Accounts | None = None
) -> Standing | None:
    """The caller's standing on ``run`` as facts of its route (DESIGN.md §14): who asks, the
    verbs it may not take now (by ``refusal``, the rule ``authorize`` applies: nothing
    recorded), and until when the grant it decides the Gate under lasts (the accounts'
    clock). None: no caller could be established."""
    accounts = Accounts() if accounts is None else accounts
    who = caller(principal, accounts)
    if who is None:
        return None
    state = run.state
    waiting = state.gate if state.waiting == "gate" else None
    refused = tuple(
        verb
        for verb in VERBS
        if refusal(who, verb, run.flow, decides_about(verb, waiting), run.id, accounts)[0]
        is not None
    )
    until = ""
    if not who.is_person and waiting is not None and "approve" not in refused:
        grant = accounts.live_grant(who.name, flow_key(run.flow), run.id)
        if grant is not None:
            until = time.strftime("%Y-%m-%d %H:%M", time.localtime(grant.until))
    return Standing(who.label, refused, until)


def _open(flow: Flow, run: str | None, verb: str) -> RunHandle | None:
    if verb in ("run", "begin", "delete"):
        return None
    try:
        return RunHandle.open(flow, run)
    except NoRun:
        return None
