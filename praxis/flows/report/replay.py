"""``praxis replay``: a run's trace read back, per fact change.

For each traced command: what was run and its exit code, whether it was a command the route
before it proposed; when the facts changed, the facts in words, the route they gave, where a
Gate paused the run and where a loop went round (the run back in a state it was in before).
Every route is recomputed from its recorded facts and compared with the recorded one: a
route that differs is named (a determinism check). Pure: entries in, lines out.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from ..model.events import Event, Traced, TraceFull
from .route import Facts, route


@dataclass
class Replay:
    lines: list[str] = field(default_factory=list)
    commands: int = 0
    changes: int = 0  # fact changes
    loops: int = 0  # times the run came back to a state it was in
    pauses: int = 0  # Gate pauses
    differ: list[int] = field(default_factory=list)  # entries whose route recomputes otherwise


def replay(entries: list[Event], title: str) -> Replay:
    out = Replay()
    traced = [e for e in entries if isinstance(e, Traced)]
    out.lines.append(f"replay of {title}: {len(traced)} command(s) traced")
    before: dict[str, Any] | None = None  # the facts after the previous command
    proposed: list[list[str]] = []  # the commands the route before this one proposed
    seen: dict[tuple[Any, ...], list[int]] = {}  # state -> [first entry, rounds]
    gate: str | None = None
    for number, e in enumerate(entries, start=1):
        if isinstance(e, TraceFull):
            out.lines.append(f"#{number} the trace reached its bound ({e.bytes} bytes): it stops")
            continue
        if not isinstance(e, Traced):
            continue
        out.commands += 1
        facts = Facts.from_dict(e.facts)
        words = e.argv[len(facts.program) :] if _starts(e.argv, facts.program) else e.argv[1:]
        tag = _followed(words, proposed, facts.program)
        head = f"#{number} praxis {shlex.join(_short_acks(words))} -> exit {e.exit}{tag}"
        again = route(facts).to_dict()
        if again != e.route:
            out.differ.append(number)
        changed = before is None or _without(e.facts) != _without(before)
        if not changed:
            out.lines.append(f"{head}   (facts unchanged)")
        else:
            out.changes += 1
            out.lines.append(head)
            out.lines.append(f"   facts: {describe(facts)}")
            key = (facts.status, facts.cursor_phase, facts.gate)
            if key in seen:
                out.loops += 1
                seen[key][1] += 1
                first, rounds = seen[key]
                out.lines.append(f"   loop: back where #{first} left it (round {rounds})")
            else:
                seen[key] = [number, 1]
            if facts.gate is not None and facts.gate != gate:
                out.pauses += 1
                who = e.route.get("who", "?")
                out.lines.append(f"   Gate after {facts.gate}: the run paused ({who} decides)")
            out.lines.append(f"   route: {_route_line(e.route, facts)}")
            if again != e.route:
                out.lines.append(f"   recomputed: {_route_line(again, facts)} (DIFFERS)")
        gate = facts.gate
        before = e.facts
        proposed = [list(c) for c in e.route.get("commands", [])]
    out.lines.append(_verdict(out))
    return out


def _starts(argv: list[str], program: tuple[str, ...]) -> bool:
    return tuple(argv[: len(program)]) == program


def _followed(words: list[str], proposed: list[list[str]], program: tuple[str, ...]) -> str:
    """Which of the route's commands this one was, if any (looking is not acting). A tool
    call of ``praxis mcp`` (``mcp TOOL ARGS``) is matched by its verb."""
    mcp = words[:1] == ["mcp"]
    verb = (words[1:2] if mcp else words[:1]) or [""]
    if verb[0] in LOOKING:
        return ""
    for i, argv in enumerate(proposed, start=1):
        given = argv[len(program) :]
        if given == words or (mcp and given[:1] == verb):
            return f"   [route command {i}]"
    return "   [not from the route]" if proposed else ""


LOOKING = ("status", "log", "read_file", "flows", "runs")


def _without(facts: dict[str, Any]) -> dict[str, Any]:
    """The facts that say something of the run (not how praxis was invoked)."""
    return {k: v for k, v in facts.items() if k != "program"}


def describe(f: Facts) -> str:
    """The facts in words, one line."""
    at = f.cursor_phase or "-"
    if f.held and (f.left_running or f.status == "running"):
        text = f"running {at} (a process advances it)"
    elif f.left_running or f.status == "running":
        text = f"left running at {at} by a process that is gone"
    elif f.gate is not None:
        text = f"at the Gate after {f.gate}"
        text += ", delegatable" if f.delegatable else ""
        text += ", managed" if f.managed else ""
        text += f", {len(f.checks_failing)} check(s) fail" if f.checks_failing else ""
    elif f.status == "failed":
        text = f"failed at {at}: {f.failure or '?'}"
        text += f" ({f.repeats} times in a row)" if f.repeats > 1 else ""
    elif f.status == "paused":
        text = f"paused before {at}"
    elif f.status == "cancelled":
        text = f"cancelled at {at}"
    else:
        text = f.status
    extra = [f"{n} changed outside praxis" for n, _ in f.changed_outputs]
    extra += [f"{p} changed" for p in f.changed_phases]
    extra += [f"{p} ran with other parameters" for p in f.params_changed]
    extra += ["flow.yaml's phases changed"] if f.flow_changed else []
    return f"{text} (revision {f.revision})" + "".join(f"; {x}" for x in extra)


def _route_line(r: dict[str, Any], f: Facts) -> str:
    head = f"{r.get('step')} ({r.get('reason')}, {r.get('who')})"
    commands = r.get("commands") or []
    if not commands:
        return head
    verb, *rest = list(commands[0])[len(f.program) :]
    if rest[:1] == [f.flow]:
        rest = rest[1:]
    if rest[:2] == ["--run", f.run]:
        rest = rest[2:]
    shown = shlex.join([verb, *_short_acks(rest)])
    more = f" (+{len(commands) - 1} more)" if len(commands) > 1 else ""
    return f"{head}: {shown}{more}"


def _short_acks(argv: list[str]) -> list[str]:
    return [a[:12] + "..." if i and argv[i - 1] == "--ack" else a for i, a in enumerate(argv)]


def _verdict(out: Replay) -> str:
    summary = (
        f"{out.commands} command(s), {out.changes} fact change(s), {out.pauses} Gate pause(s), "
        f"{out.loops} loop round(s)"
    )
    if not out.differ:
        return f"{summary}; every route recomputed from its facts is the one recorded"
    which = ", ".join(f"#{n}" for n in out.differ)
    return f"{summary}; routes recomputed differently from their facts: {which}"
