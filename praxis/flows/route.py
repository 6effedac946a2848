"""The route: from the facts of a run, the one next step, why, what to read, and the exact
commands. A pure function (``route(facts)``): the same facts always give the same route.

Reasons (a fixed list; ``REASONS`` below says each in words):

=====================  =========  ==========================================================
reason                 who        step and commands
=====================  =========  ==========================================================
running                anyone     wait: another process advances the run (``log --follow``)
stopped                anyone     advance: a phase was left running by a process that died
ready                  anyone     advance: paused before a phase
output_changed         person     an input of the next phases was changed outside praxis:
                                  re-run its producer, or ``accept`` it
definition_changed     anyone     rerun: phases whose definition changed since they ran
gate_checks_fail       person     fix: a check fails at the Gate; edit the files or reject
gate_delegated         agent      decide: an agent may approve or reject (delegatable Gate,
                                  managed run, checks pass)
gate_not_managed       person     decide: delegatable, but no person granted managed mode
gate_needs_person      person     decide: the Gate is not delegatable
failed                 anyone     rerun: a phase failed
cancelled              anyone     rerun: the run was cancelled
done                   anyone     none: every phase done
=====================  =========  ==========================================================

``who`` says who may take the step: ``anyone`` (an agent operating praxis too), ``agent`` (a
Gate decision delegated to agents: a person may take it as well), ``person`` (only a person).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

REASONS: dict[str, str] = {
    "running": "another process is advancing the run",
    "stopped": "a phase was left running by a process that is gone; advance records it",
    "ready": "the run is paused before its next phase",
    "output_changed": "an output the next phases read was changed outside praxis",
    "definition_changed": "phases changed in flow.yaml since they ran",
    "gate_checks_fail": "a check fails on the outputs at the Gate",
    "gate_delegated": "the Gate is delegatable and the run is managed: an agent may decide it",
    "gate_not_managed": "the Gate is delegatable, but no person put the run in managed mode",
    "gate_needs_person": "the Gate is not delegatable: a person decides it",
    "failed": "a phase failed",
    "cancelled": "the run was cancelled",
    "done": "every phase is done",
}


@dataclass(frozen=True)
class Facts:
    """What the route depends on; nothing else."""

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
    held: bool = False  # a process holds the Flow's lock
    left_running: bool = False  # a phase is `running` in run.json
    changed_outputs: tuple[tuple[str, str], ...] = ()  # (output, producer) blocking the next
    changed_phases: tuple[str, ...] = ()  # phases whose definition changed


@dataclass
class Route:
    step: str  # wait | advance | fix | decide | rerun | accept | none
    reason: str  # a key of REASONS
    who: str  # anyone | agent | person
    why: str
    gate: dict[str, Any] | None = None  # {phase, delegatable, managed}
    read: list[dict[str, str]] = field(default_factory=list)  # {path, sha256}
    commands: list[list[str]] = field(default_factory=list)  # argv lists, the first usual
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def route(f: Facts) -> Route:
    base = ["praxis"]
    run = ["--run", f.run]
    rev = ["--expect-revision", str(f.revision)]

    def cmd(verb: str, *rest: str) -> list[str]:
        return [*base, verb, f.flow, *run, *rest]

    def make(step: str, reason: str, who: str, *commands: list[str], **kw: Any) -> Route:
        return Route(step, reason, who, REASONS[reason], commands=list(commands), **kw)

    if f.left_running and f.held:
        return make("wait", "running", "anyone", cmd("log", "--follow"), cmd("status", "--json"))
    if f.left_running:
        return make("advance", "stopped", "anyone", cmd("advance"))
    if f.status == "running":
        return make("wait", "running", "anyone", cmd("log", "--follow"), cmd("status", "--json"))
    if f.gate is not None:
        gate = {"phase": f.gate, "delegatable": f.delegatable, "managed": f.managed}
        read = [{"path": p, "sha256": s} for p, s in f.read]
        decide = [
            cmd("approve", "--gate", f.gate, *rev),
            cmd("reject", "--gate", f.gate, "--reopen", f.gate, "--note", "...", *rev),
        ]
        if f.checks_failing:
            return make(
                "fix", "gate_checks_fail", "person", decide[1], cmd("status"),
                gate=gate, read=read, problems=list(f.checks_failing),
            )  # fmt: skip
        if f.delegatable and f.managed:
            return make("decide", "gate_delegated", "agent", *decide, gate=gate, read=read)
        reason = "gate_not_managed" if f.delegatable else "gate_needs_person"
        return make("decide", reason, "person", *decide, gate=gate, read=read)
    if f.changed_outputs:
        name, producer = f.changed_outputs[0]
        return make(
            "accept", "output_changed", "person",
            cmd("rerun", "--from", producer, *rev), cmd("accept", "--output", name, *rev),
            problems=[f"{n} (of {p}) changed outside praxis" for n, p in f.changed_outputs],
        )  # fmt: skip
    if f.changed_phases and f.status in ("paused", "failed", "done", "cancelled"):
        first = f.changed_phases[0]
        return make(
            "rerun", "definition_changed", "anyone", cmd("rerun", "--from", first, *rev),
            problems=[f"{p} changed since it ran" for p in f.changed_phases],
        )  # fmt: skip
    if f.status == "paused":
        return make("advance", "ready", "anyone", cmd("advance"))
    if f.status in ("failed", "cancelled"):
        target = f.cursor_phase or ""
        return make("rerun", f.status, "anyone", cmd("rerun", "--from", target, *rev))
    return make("none", "done", "anyone")
