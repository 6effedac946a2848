"""The route: from the facts of a run, the one next step, why, what to read, and the exact
commands. A pure function (``route(facts)``): the same facts always give the same route.

Reasons (a fixed list; ``REASONS`` below says each in words), in the order they are tried:

=====================  =========  ==========================================================
reason                 who        step and commands
=====================  =========  ==========================================================
flow_invalid           person     fix: flow.yaml does not load; its problems (file, line,
                                  message) are listed (``invalid``: no run is read)
no_run                 anyone     run: the flow has no run yet (``none``)
running                anyone     wait: another process advances the run (``log --follow``)
retrying               anyone     wait: a phase failed and flow.yaml's ``retries:`` tries it
                                  again; ``why`` says when: "retrying in 10 s (2 of 3)"
flow_changed           person     fix: flow.yaml's phases are not those the run began with;
                                  cancel it and start a new run
stopped                anyone     advance: the process that advanced the run is gone
output_changed         person     accept: an input of the next phases was changed outside
                                  praxis: re-run its producer, or ``accept`` it
gate_changed           anyone     rerun: a phase up to the Gate changed in flow.yaml or its
                                  files since it ran: its outputs are not what the flow makes
                                  now (approving them is refused)
gate_checks_fail       person     fix: a check fails at the Gate; edit the files or reject
gate_delegated         agent      decide: an agent may approve or reject (delegatable Gate,
                                  managed run, checks pass); step ``read`` first, while a
                                  file to read has no receipt of the agent as it is now
gate_not_managed       person     decide: delegatable, but no person granted managed mode
gate_needs_person      person     decide: the Gate is not delegatable
waiting_for_person     person     wait: the caller (``Facts.caller``) may not decide the
                                  Gate: a person without its role, or an agent whose grant
                                  of a managed run is gone; ``who_may`` names who must (an
                                  agent elsewhere keeps the reason above, without decision)
cancelled              person     rerun: a person cancelled the run; resuming it is theirs
definition_changed     anyone     rerun: a done phase's flow.yaml entry or files changed
failed_repeatedly      person     fix: the phase failed again with the same error, from the
                                  same definition and inputs (or three times in a row from
                                  them, whatever the errors): re-running cannot help
failed                 anyone     rerun: a phase failed (once, or differently than before)
params_changed         anyone     advance: the run's parameters changed (``rerun -p``) after
                                  earlier phases ran; ``rerun --from`` one of them re-runs it
ready                  anyone     advance: paused before a phase
publish_pending        anyone     publish: every phase done, a person approved the last
                                  Gate, and an entry of ``publish:`` is not in its table yet
publish_needs_person   person     none: every phase done, but the last Gate was not approved
                                  by a person, so nothing may be published
done                   anyone     none: every phase done
=====================  =========  ==========================================================

``who`` says who may take the step: ``anyone`` (an agent operating praxis too), ``agent`` (a
Gate decision delegated to agents: a person may take it as well), ``person`` (only a person);
at a Gate, ``gate.approvers`` names the roles of the people who may decide it (absent: any
person), and an agent decides only under a person's live grant (``praxis manage --agent``).
When the facts name the caller (``Facts.caller``, ``Facts.refused``: the verbs the one
authorization refuses it now), the route is the caller's: ``caller`` says who asks,
``who_may`` who may take the step in words (``person with role finance``, ``person``,
``agent:ci-bot under a grant until 2026-12-05 11:00``), a command the caller would be refused
is never proposed, an agent that may decide a Gate (under a grant of its run or of the whole
flow) is offered it whether or not the run is managed, and one that may not is told who must
act (``waiting_for_person``). Facts without a caller give the route as before.
Every command starts with the program praxis was invoked by (``Facts.program``); one whose
``who`` is ``agent`` says ``--as agent``. A Gate decision names the Gate, its attempt and the
revision (``--gate P --attempt N --expect-revision R``), ``advance`` the revision. ``read``
names the files to review, never their digests: an agent reads each through praxis (the
route's ``read`` commands, ``praxis read``), which records a receipt, and its decision passes
those receipts (``--receipt ID``; ``Facts.receipts`` are the agent's receipts of the files as
they are now). A re-run is proposed only from a phase the run's state allows it from
(``Facts.rerunnable``, computed by the state tables), so no command of a route is refused in
the state it was chosen for. A re-run or reopen that would replace outputs carrying Gate
edits says ``--keep-edits`` (a fix is never lost); where an edit cannot be kept (no row key)
the route proposes none and a person chooses. At a Gate with a form (``Facts.form``), the
proposed approve carries ``--set FIELD=<type>`` for each field that is required and has no
default: a placeholder the decider replaces with the value (``gate.form`` lists every field).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ...command_line import NOTE, Command

REASONS: dict[str, str] = {
    "flow_invalid": "flow.yaml does not load: fix the problems listed, then check it again",
    "no_run": "the flow has no run yet",
    "running": "another process is advancing the run",
    "retrying": "a phase failed and is tried again (flow.yaml retries:)",
    "stopped": "the process that advanced the run is gone; advance records where it stopped",
    "flow_changed": "flow.yaml's phases are not those the run began with: start a new run",
    "output_changed": "an output the next phases read was changed outside praxis",
    "gate_changed": "a phase up to the Gate changed since it ran: re-run it before deciding",
    "gate_checks_fail": "a check fails on the outputs at the Gate",
    "gate_delegated": "the Gate is delegatable and the run is managed: an agent may decide it",
    "gate_not_managed": "the Gate is delegatable, but no person put the run in managed mode",
    "gate_needs_person": "the Gate is not delegatable: a person decides it",
    "waiting_for_person": "the caller may not decide it: the run waits for one who may",
    "cancelled": "the run was cancelled: a person decides whether to resume it",
    "definition_changed": "a done phase's flow.yaml entry or files changed since it ran",
    "failed_repeatedly": "the phase failed again the same way, with nothing changed: a person "
    "must fix the cause before it is re-run",
    "failed": "a phase failed",
    "params_changed": "the run's parameters changed after earlier phases ran with others",
    "ready": "the run is paused before its next phase",
    "publish_pending": "every phase is done and approved: an output of publish: is not "
    "in its table yet",
    "publish_needs_person": "every phase is done, but a person has not approved the last "
    "Gate: nothing may be published",
    "done": "every phase is done",
}
REPEATED = 2  # attempts in a row failing the same way that hand the run to a person
RETRIED = 3  # attempts in a row failing from the same inputs and definition, whatever the error


@dataclass(frozen=True)
class Facts:
    """What the route depends on; nothing else (``trace.jsonl`` records them)."""

    flow: str  # the flow as named on the command line
    run: str
    status: str  # the run's status
    revision: int
    cursor_phase: str | None  # the phase the run stopped at (next, failed or cancelled)
    gate: str | None = None  # the phase the Gate follows, when waiting at one
    delegatable: bool = False  # the Gate's
    managed: bool = False
    checks_failing: tuple[str, ...] = ()  # messages of failed checks at the Gate
    read: tuple[tuple[str, str], ...] = ()  # (path, sha256) of the files to review
    held: bool = False  # a process holds the run's lock
    left_running: bool = False  # a phase is `running` in run.json
    changed_outputs: tuple[tuple[str, str], ...] = ()  # (output, producer) blocking the next
    changed_phases: tuple[str, ...] = ()  # done phases whose definition changed
    program: tuple[str, ...] = ("praxis",)  # how praxis was invoked
    failure: str | None = None  # the failed phase's error, one line
    record: tuple[str, str] | None = None  # (path, sha256) of the failed phase's record
    repeats: int = 0  # attempts in a row the failed phase failed the same way
    retries: int = 0  # attempts in a row it failed from the same digests, whatever the error
    params_changed: tuple[str, ...] = ()  # done phases that ran with other parameters
    flow_changed: bool = False  # flow.yaml's phases are not the run's
    missing_outputs: tuple[str, ...] = ()  # of changed_outputs, those whose file is gone
    rerunnable: tuple[str, ...] | None = None  # phases a re-run may start from (None: any)
    phases: tuple[str, ...] = ()  # the run's phases, in order
    edited: tuple[tuple[str, str], ...] = ()  # (output, phase) carrying Gate edits now
    keyless: tuple[str, ...] = ()  # of those, the ones --keep-edits cannot re-apply
    attempt: int = 0  # of the phase the Gate follows
    receipts: tuple[tuple[str, str], ...] = ()  # (path of read, receipt id) of the agent's
    form: tuple[tuple[str, str, bool], ...] = ()  # the Gate's form: (field, placeholder, needed)
    retrying: tuple[int, ...] = ()  # (retry, of, seconds until it starts) while a retry waits
    failed_partitions: tuple[str, ...] = ()  # of the failed fan-out phase, those that failed
    approvers: tuple[str, ...] = ()  # the roles of the people who decide the Gate (any: ())
    publish_pending: tuple[str, ...] = ()  # publish: entries a done run has yet to write
    publish_blocked: str | None = None  # why it may not (the last Gate's approval), if so
    caller: str = ""  # who asks (``agent:ci-bot``); "": nobody's route (as before)
    refused: tuple[str, ...] = ()  # the verbs the caller may not take on the run now
    grant_until: str = ""  # when the grant the caller decides the Gate under ends

    def to_dict(self) -> dict[str, Any]:
        found = asdict(self)
        if not self.approvers:  # as facts were before a Gate named roles
            del found["approvers"]
        if not self.caller:  # as facts were before the route knew its caller
            for name in ("caller", "refused", "grant_until"):
                del found[name]
        return found

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Facts:
        """Facts as ``to_dict`` wrote them (lists back to tuples); unknown keys are ignored."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: _tuples(v) for k, v in data.items() if k in known})


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


@dataclass(frozen=True)
class Standing:
    """The caller's standing on a run (``praxis.service.authority.standing`` finds it by the
    one authorization's rules): the facts ``caller``, ``refused`` and ``grant_until``."""

    caller: str
    refused: tuple[str, ...] = ()
    grant_until: str = ""


@dataclass
class Route:
    step: str  # wait | advance | fix | read | decide | rerun | accept | run | publish | none
    reason: str  # a key of REASONS
    who: str  # anyone | agent | person
    why: str
    gate: dict[str, Any] | None = None  # {phase, delegatable, managed}
    read: list[dict[str, str]] = field(default_factory=list)  # {path}: never a digest
    steps: list[Command] = field(default_factory=list)  # the commands, the first the usual
    problems: list[str] = field(default_factory=list)
    who_may: str = ""  # who may take the step, in words ("": the facts name no caller)
    caller: str = ""  # who asked

    @property
    def commands(self) -> list[list[str]]:
        """The steps as argv lists (``status --json``'s ``route.commands``)."""
        return [c.argv() for c in self.steps]

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step, "reason": self.reason, "who": self.who, "why": self.why,
            "gate": self.gate, "read": self.read, "commands": self.commands,
            "problems": self.problems,
            **({"who_may": self.who_may, "caller": self.caller} if self.caller else {}),
        }  # fmt: skip


def without_run(flow: str, program: tuple[str, ...]) -> Route:
    """The route of a flow with no run yet: run it."""
    run = Command("run", flow, program=program)
    return Route("run", "no_run", "anyone", REASONS["no_run"], steps=[run])


def invalid(flow: str, problems: list[str], program: tuple[str, ...]) -> Route:
    """The route of a flow whose flow.yaml does not load: a person fixes it, then checks."""
    return Route(
        "fix", "flow_invalid", "person", REASONS["flow_invalid"],
        steps=[Command("check", flow, program=program)], problems=problems,
    )  # fmt: skip


def route(f: Facts) -> Route:
    """The route the facts give; the caller's, when they name one (see the module's text)."""
    found = _route(f)
    if not f.caller:
        return found
    found.steps = [s for s in found.steps if s.verb not in f.refused]
    if f.gate is not None and may_decide(f) is False and found.reason != "waiting_for_person":
        found.problems += must_act(f)
    found.caller = f.caller
    found.who_may = found.who_may or taker(f, found.who)
    return found


def taker(f: Facts, who: str) -> str:
    """Who may take a step whose ``who`` is ``who``, in words."""
    if who == "anyone":
        return "anyone"
    people = f"person with role {' or '.join(f.approvers)}" if f.gate and f.approvers else "person"
    if who == "person":
        return people
    if f.grant_until and f.caller.startswith("agent:"):
        return f"{f.caller} under a grant until {f.grant_until}"
    return f"{people}, or an agent under a person's grant"


def may_decide(f: Facts) -> bool | None:
    """Whether the caller may decide the Gate (None: the facts name no caller)."""
    return None if not f.caller else "approve" not in f.refused


def _route(f: Facts) -> Route:
    rev = f.revision

    def cmd(verb: str, **params: Any) -> Command:
        return Command(verb, f.flow, run=f.run, program=f.program, **params)

    def rerun(phase: str | None, partition: str | None = None) -> list[Command]:
        """The re-run from ``phase``, if the run's state allows one from there (and any Gate
        edit it would replace can be kept); of one ``partition`` of a fan-out."""
        if phase is None or (f.rerunnable is not None and phase not in f.rerunnable):
            return []
        keep = edits_option(f, phase)
        return (
            []
            if keep is None
            else [
                cmd(
                    "rerun",
                    from_phase=phase,
                    edits=keep or None,
                    expect_revision=rev,
                    partition=partition,
                )
            ]  # fmt: skip
        )

    def make(step: str, reason: str, who: str, *steps: Command, **kw: Any) -> Route:
        return Route(step, reason, who, REASONS[reason], steps=list(steps), **kw)

    if f.held and (f.left_running or f.status == "running"):
        waiting = make("wait", "retrying" if f.retrying else "running", "anyone",
                       cmd("log", follow=True), cmd("status", json=True))  # fmt: skip
        if f.retrying:
            number, of, left = f.retrying
            waiting.why = f"retrying in {left} s ({number} of {of}): {waiting.why}"
        return waiting
    if f.flow_changed:
        cancel = (
            [cmd("cancel", expect_revision=rev)]
            if f.status in ("paused", "failed", "running")
            else []
        )
        return make(
            "fix", "flow_changed", "person", *cancel, Command("run", f.flow, program=f.program)
        )
    if f.left_running or f.status == "running":
        return make("advance", "stopped", "anyone", cmd("advance", expect_revision=rev))
    if f.changed_outputs:
        name, producer = f.changed_outputs[0]
        accept = (
            [] if name in f.missing_outputs else [cmd("accept", output=name, expect_revision=rev)]
        )
        return make(
            "accept", "output_changed", "person", *rerun(producer), *accept,
            problems=[f"{n} (of {p}) changed outside praxis" for n, p in f.changed_outputs],
        )  # fmt: skip
    if f.gate is not None:
        return _gate_route(f, cmd, make, rerun)
    if f.status == "cancelled":
        return make("rerun", "cancelled", "person", *rerun(f.cursor_phase))
    if f.changed_phases and f.status in ("paused", "failed", "done"):
        problems = [f"{p} changed since it ran" for p in f.changed_phases]
        again = rerun(f.changed_phases[0])
        if again:
            return make("rerun", "definition_changed", "anyone", *again, problems=problems)
    if f.status == "failed":
        problems, read = _failure(f)
        if f.repeats >= REPEATED or f.retries >= RETRIED:
            times = (
                f"failed {f.repeats} times in a row the same way"
                if f.repeats >= REPEATED
                else f"failed {f.retries} times in a row from the same inputs and definition"
            )
            return make(
                "fix", "failed_repeatedly", "person", *rerun(f.cursor_phase), cmd("status"),
                problems=[*problems, times], read=read,
            )  # fmt: skip
        again = rerun(f.cursor_phase, next(iter(f.failed_partitions), None))
        who = "anyone" if again else "person"
        return make("rerun", "failed", who, *again, problems=problems, read=read)
    notes = [f"{p} ran with other parameters than the run's now" for p in f.params_changed]
    if f.status == "paused" and notes:
        return make(
            "advance", "params_changed", "anyone", cmd("advance", expect_revision=rev),
            *rerun(f.params_changed[0]),
            problems=notes,
        )  # fmt: skip
    if f.status == "paused":
        return make("advance", "ready", "anyone", cmd("advance", expect_revision=rev))
    if f.status == "done" and f.publish_pending:
        problems = [f"not published yet: {e}" for e in f.publish_pending]
        if f.publish_blocked:
            return make("none", "publish_needs_person", "person",
                        problems=[*problems, f.publish_blocked])  # fmt: skip
        return make("publish", "publish_pending", "anyone", cmd("publish"), problems=problems)
    return make("none", "done", "anyone", problems=notes)


def _gate_route(f: Facts, cmd: Any, make: Any, again: Any) -> Route:
    """The route at a Gate: re-run (a phase up to it changed), fix (a check fails), read
    (an agent without receipts), or decide (by an agent or by a person)."""
    assert f.gate is not None
    gate: dict[str, Any] = {"phase": f.gate, "delegatable": f.delegatable, "managed": f.managed}
    if f.form:
        gate["form"] = [{"name": n, "value": v, "needed": need} for n, v, need in f.form]
    if f.approvers:  # who decides it: a person with one of these roles
        gate["approvers"] = list(f.approvers)
    read = [{"path": p} for p, _ in f.read]
    mine = may_decide(f)
    if mine is False and (f.caller.startswith("person:") or (f.delegatable and f.managed)):
        return _waiting(f, make, gate, read)  # else the reasons as before say who decides
    if f.changed_phases:
        rerun = again(f.changed_phases[0])
        return make(  # type: ignore[no-any-return]
            "rerun", "gate_changed", "anyone" if rerun else "person", *rerun, cmd("status"),
            gate=gate, read=read,
            problems=[f"{p} changed since it ran" for p in f.changed_phases],
        )  # fmt: skip
    bound = {"gate": f.gate, "attempt": f.attempt, "expect_revision": f.revision}
    values = tuple(f"{name}={shown}" for name, shown, needed in f.form if needed)
    keep = edits_option(f, f.gate)
    reject = {**bound, "reopen": f.gate, "note": NOTE, "edits": keep or None}
    rejects = [reject] if keep is not None else []  # else a person chooses what to keep
    problems = [] if keep is not None else [_keyless(f)]
    if f.checks_failing:
        return make(  # type: ignore[no-any-return]
            "fix", "gate_checks_fail", "person", *(cmd("reject", **r) for r in rejects),
            cmd("status"), gate=gate, read=read, problems=[*f.checks_failing, *problems],
        )  # fmt: skip
    agent = mine is True and f.caller.startswith("agent:")  # under a person's grant
    if f.delegatable and (f.managed or agent):
        have = dict(f.receipts)
        unread = [p for p, _ in f.read if p not in have]
        if unread:
            return make(  # type: ignore[no-any-return]
                "read", "gate_delegated", "agent",
                *(cmd("read", path=p, actor="agent") for p in unread),
                gate=gate, read=read, problems=problems,
            )  # fmt: skip
        signed = {"actor": "agent", "receipts": tuple(have[p] for p, _ in f.read)}
        return make(  # type: ignore[no-any-return]
            "decide", "gate_delegated", "agent",
            cmd("approve", **bound, **signed, values=values),
            *(cmd("reject", **r, **signed) for r in rejects),
            gate=gate, read=read, problems=problems,
        )  # fmt: skip
    reason = "gate_not_managed" if f.delegatable else "gate_needs_person"
    return make(  # type: ignore[no-any-return]
        "decide", reason, "person", cmd("approve", **bound, values=values),
        *(cmd("reject", **r) for r in rejects), gate=gate, read=read, problems=problems,
    )  # fmt: skip


def _waiting(f: Facts, make: Any, gate: dict[str, Any], read: list[dict[str, str]]) -> Route:
    """The route of a caller who may not decide the Gate: it waits, told who must act (and,
    for an agent at a delegatable Gate, that a person may grant it the decision)."""
    people = taker(f, "person")
    problems = [
        *(f"{p} changed since it ran" for p in f.changed_phases),
        *f.checks_failing,
        *must_act(f),
    ]
    found: Route = make(
        "wait", "waiting_for_person", "person", Command("status", f.flow, run=f.run,
        program=f.program), gate=gate, read=read, problems=problems,
    )  # fmt: skip
    found.why = f"a {people} decides the Gate after {f.gate}; {found.why}"
    found.who_may = people
    return found


def must_act(f: Facts) -> list[str]:
    """Who must act at the Gate the caller may not decide (and, for an agent at a delegatable
    Gate, the grant a person could give it)."""
    found = [
        f"{f.caller} may not decide the Gate after {f.gate}: a {taker(f, 'person')} decides it"
    ]
    if f.delegatable and f.caller.startswith("agent:"):
        name = f.caller.partition(":")[2]
        grant = Command("manage", f.flow, run=f.run, agent=name, duration="2h")
        found.append(f"or a person grants {f.caller} the decision: {grant.line()}")
    return found


def edits_option(f: Facts, phase: str) -> str | None:
    """What a re-run or reopen of ``phase`` says of the Gate edits it would replace: nothing
    (none: ``""``), ``keep`` (``--keep-edits``), or None when one cannot be kept (a person
    chooses)."""
    at = f.phases.index(phase) if phase in f.phases else 0
    risk = [n for n, p in f.edited if p not in f.phases or f.phases.index(p) >= at]
    if not risk:
        return ""
    return None if any(n in f.keyless for n in risk) else "keep"


def _keyless(f: Facts) -> str:
    names = ", ".join(f.keyless)
    return (
        f"{names} carries Gate edits --keep-edits cannot re-apply (no row key, or a column "
        "name repeated): a reopen is a person's choice (--keep-edits after declaring key: or "
        "naming the columns apart, or --discard-edits)"
    )


def _failure(f: Facts) -> tuple[list[str], list[dict[str, str]]]:
    """The failed phase's error and its record, as problems and a file to read."""
    problems = []
    if f.failure:
        problems.append(f"{f.cursor_phase}: {f.failure}")
    if f.record is None:
        return problems, []
    path, _ = f.record
    problems.append(f"record: {path}")
    return problems, [{"path": path}]
