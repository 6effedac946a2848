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

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..argv import flow_text
from ..command_line import typed
from ..errors import Refused
from ..flows.model.flow import Flow
from ..flows.store.handle import NoRun, RunHandle
from .accounts import Accounts, Entry
from .principals import Principal

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
    phase = flow.phase(gate)
    if principal.is_person:
        return principal.holds(phase.approvers)
    return (
        phase.delegatable and accounts.live_grant(principal.name, flow_key(flow), run) is not None
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
    gate = (
        waiting if verb in GATE_VERBS or (verb in AT_GATE_VERBS and waiting is not None) else None
    )
    granted = False
    why: str | None = None
    needed = ""
    if verb not in VERBS:
        raise ValueError(f"unknown verb {verb!r}")
    if verb in PERSON_VERBS and not principal.is_person:
        why, needed = f"only a person may {verb}", "a person"
    elif gate is not None:
        phase = flow.phase(gate)
        needed = who_may(principal, flow, gate)
        if principal.is_person:
            if not principal.holds(phase.approvers):
                held = ", ".join(principal.roles) or "no role"
                why = (
                    f"the Gate after {gate} needs role {' or '.join(phase.approvers)}; "
                    f"{principal.label} holds {held}"
                )
        elif not phase.delegatable:
            why = (
                f"the Gate after {gate} is not delegatable: {needed} decides it "
                "(review: {required: true, delegatable: true} lets an agent under a grant)"
            )
        elif accounts.live_grant(principal.name, flow_key(flow), rid) is None:
            why = (
                f"{principal.label} holds no live grant on run {rid}: a person grants one with "
                + typed("manage", flow_text(flow), agent=principal.name, duration="2h")
            )
        else:
            granted = True
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


def _open(flow: Flow, run: str | None, verb: str) -> RunHandle | None:
    if verb in ("run", "begin", "delete"):
        return None
    try:
        return RunHandle.open(flow, run)
    except NoRun:
        return None
