"""``praxis replay``: a run's trace read back as the story of the run.

Commands are told in the order they started (each has a ``trace_started`` line, so one killed
before its end is there, "never finished"), from the command line, the page and MCP alike.
For each: what was run and its exit code, whether it was a command the route before it
proposed; when the facts changed, the facts in words, each change named for what it was (a
re-run, a hand edit at a Gate, an output changed outside praxis, a definition or parameters
changed), the route they gave, where a Gate paused the run, and where a loop went round: the
same facts as an earlier command left, with no edit, change from outside or killed command
between. Every route is recomputed from its recorded facts and compared with the recorded
one: a route that differs is named (a determinism check). Pure: entries in, lines out.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from ..model.events import Event, Traced, TraceFull, TraceStarted
from .route import Facts, route


@dataclass
class Replay:
    lines: list[str] = field(default_factory=list)
    commands: int = 0
    changes: int = 0  # fact changes
    loops: int = 0  # times the run came back to a state it was in, nothing changed between
    pauses: int = 0  # Gate pauses
    unfinished: int = 0  # commands that never finished (killed, or running still)
    differ: list[int] = field(default_factory=list)  # entries whose route recomputes otherwise


@dataclass
class Command:
    """One command: its start line and its end line (either may be missing: a command killed
    before its end; one traced at its end only, such as the ``run`` that made the run)."""

    start: TraceStarted | None = None
    end: Traced | None = None
    full: TraceFull | None = None  # or the trace's bound, told where it was reached

    @property
    def argv(self) -> list[str]:
        line = self.end or self.start
        return list(line.argv) if line is not None else []


def in_start_order(entries: list[Event]) -> list[Command]:
    """The trace's commands in the order they started: each end line is matched to the
    latest start line of the same process and verb still open."""
    told: list[Command] = []
    open_: dict[tuple[int, str], list[Command]] = {}
    for e in entries:
        if isinstance(e, TraceStarted):
            c = Command(start=e)
            told.append(c)
            open_.setdefault((e.pid, _verb(e.argv)), []).append(c)
        elif isinstance(e, Traced):
            waiting = open_.get((e.pid, _verb(e.argv))) if e.pid else None
            if waiting:
                waiting.pop().end = e
            else:
                told.append(Command(end=e))
        elif isinstance(e, TraceFull):
            told.append(Command(full=e))
    return told


def _verb(argv: list[str]) -> str:
    """The command's verb: ``mcp TOOL`` or ``web VERB``, else its verb (after the program,
    which may be several words: ``python -m praxis``)."""
    at = _verb_at(argv)
    words = argv[at : at + 2]
    return " ".join(words) if words[:1] in (["mcp"], ["web"]) else "".join(words[:1])


def _verb_at(argv: list[str]) -> int:
    """Where the words after the program start (1 when no verb is found)."""
    for i, word in enumerate(argv[1:], start=1):
        if word in VERBS or word in ("mcp", "web"):
            return i
    return 1


VERBS = frozenset(
    {"run", "begin", "advance", "status", "approve", "reject", "manage", "accept", "rerun"}
    | {"cancel", "log"}
)
LOOKING = ("status", "log", "read_file", "flows", "runs")
INPUTS = ("hand edit", "changed outside praxis", "definition changed", "parameters changed")


def replay(entries: list[Event], title: str) -> Replay:
    out = Replay()
    told = in_start_order(entries)
    count = sum(1 for c in told if c.full is None)
    out.lines.append(f"replay of {title}: {count} command(s) traced, in the order they started")
    before: Facts | None = None  # the facts after the previous command that ended
    proposed: list[list[str]] = []  # the commands the route before this one proposed
    seen: dict[str, list[int]] = {}  # facts -> [first entry, input changes then, rounds]
    inputs = 0  # input changes (edits, changes from outside) and killed commands so far
    gate: str | None = None
    for number, c in enumerate(told, start=1):
        if c.full is not None:
            out.lines.append(
                f"#{number} the trace reached its bound ({c.full.bytes} bytes): it stops"
            )
            continue
        out.commands += 1
        if c.end is None:
            out.unfinished += 1
            inputs += 1  # a command killed midway: what follows is recovery, not a loop
            words = c.argv[_verb_at(c.argv) :]
            out.lines.append(f"#{number} {_shown(words)} -> never finished (killed, or running)")
            continue
        e = c.end
        facts = Facts.from_dict(e.facts)
        words = _words(e.argv, facts.program)
        tag = _followed(words, proposed, facts.program)
        head = f"#{number} {_shown(words)} -> exit {e.exit}{tag}"
        again = route(facts).to_dict()
        if again != e.route:
            out.differ.append(number)
        changed = before is None or _without(facts) != _without(before)
        if not changed:
            out.lines.append(f"{head}   (facts unchanged)")
        else:
            out.changes += 1
            out.lines.append(head)
            out.lines.append(f"   facts: {describe(facts)}")
            named = changes(before, facts, words)
            if named:
                out.lines.append(f"   changed: {'; '.join(named)}")
            inputs += sum(1 for n in named if n.startswith(INPUTS))
            key = json.dumps(_state(facts), sort_keys=True, default=str)
            if key in seen and seen[key][1] == inputs:
                out.loops += 1
                seen[key][2] += 1
                first, _, rounds = seen[key]
                out.lines.append(
                    f"   loop: back where #{first} left it, nothing changed between "
                    f"(round {rounds})"
                )
            else:
                seen[key] = [number, inputs, 1]
            if facts.gate is not None and facts.gate != gate:
                out.pauses += 1
                who = e.route.get("who", "?")
                out.lines.append(f"   Gate after {facts.gate}: the run paused ({who} decides)")
            out.lines.append(f"   route: {_route_line(e.route, facts)}")
            if again != e.route:
                out.lines.append(f"   recomputed: {_route_line(again, facts)} (DIFFERS)")
        gate = facts.gate
        before = facts
        proposed = [list(cmd) for cmd in e.route.get("commands", [])]
    out.lines.append(_verdict(out))
    return out


def _words(argv: list[str], program: tuple[str, ...]) -> list[str]:
    return argv[len(program) :] if _starts(argv, program) else argv[1:]


def _shown(words: list[str]) -> str:
    """The command as a person reads it: ``praxis ...``, ``page VERB ...`` or ``mcp ...``."""
    if words[:1] == ["web"]:
        return "page " + shlex.join(_short_acks(words[1:]))
    return "praxis " + shlex.join(_short_acks(words))


def changes(before: Facts | None, now: Facts, words: list[str]) -> list[str]:
    """What changed the facts, each named: a re-run (the command), a hand edit at a Gate, an
    output changed outside praxis, a definition or the parameters changed since a phase ran."""
    found = []
    verb = ((words[1:2] if words[:1] in (["web"], ["mcp"]) else words[:1]) or [""])[0]
    if verb in ("rerun", "reject"):
        back = _option(words, "--from") or _option(words, "--reopen") or _field(words)
        found.append(f"re-run from {back}" if back else "re-run")
    if before is None:
        return found
    edited = [n for n, p in now.edited if (n, p) not in before.edited]
    shas = dict(before.read)
    rewritten = (
        [path for path, sha in now.read if path in shas and shas[path] != sha]
        if now.gate == before.gate and verb not in ("rerun", "reject", "advance", "run", "accept")
        else []
    )
    if edited or rewritten:
        found.append(f"hand edit: {', '.join(edited or rewritten)}")
    outside = [n for n, p in now.changed_outputs if (n, p) not in before.changed_outputs]
    if outside:
        found.append(f"changed outside praxis: {', '.join(outside)}")
    definition = [p for p in now.changed_phases if p not in before.changed_phases]
    if now.flow_changed and not before.flow_changed:
        definition.append("flow.yaml's phases")
    if definition:
        found.append(f"definition changed: {', '.join(definition)}")
    params = [p for p in now.params_changed if p not in before.params_changed]
    if params:
        found.append(f"parameters changed: {', '.join(params)}")
    return found


def _option(words: list[str], name: str) -> str | None:
    return words[words.index(name) + 1] if name in words[:-1] else None


def _field(words: list[str]) -> str | None:
    """The phase a page's or MCP's re-run or reject named (its last word, JSON)."""
    try:
        data = json.loads(words[-1])
    except (ValueError, IndexError):
        return None
    if not isinstance(data, dict):
        return None
    found = data.get("from_phase") or data.get("reopen") or data.get("phase")
    return str(found) if found else None


def _state(f: Facts) -> dict[str, Any]:
    """The facts a loop compares: all that say where the run is and what it holds (not the
    revision, the failure's count and record (its times differ), who holds the lock, or how
    praxis was invoked)."""
    data = f.to_dict()
    for name in ("program", "revision", "repeats", "retries", "held", "record"):
        data.pop(name, None)
    return data


def _starts(argv: list[str], program: tuple[str, ...]) -> bool:
    return tuple(argv[: len(program)]) == program


def _followed(words: list[str], proposed: list[list[str]], program: tuple[str, ...]) -> str:
    """Which of the route's commands this one was, if any (looking is not acting). A tool
    call of ``praxis mcp`` (``mcp TOOL ARGS``) or an action of the page (``web VERB
    FIELDS``) is matched by its verb."""
    mcp = words[:1] in (["mcp"], ["web"])
    verb = (words[1:2] if mcp else words[:1]) or [""]
    if verb[0] in LOOKING:
        return ""
    for i, argv in enumerate(proposed, start=1):
        given = argv[len(program) :]
        if given == words or (mcp and given[:1] == verb):
            return f"   [route command {i}]"
    return "   [not from the route]" if proposed else ""


def _without(facts: Facts) -> dict[str, Any]:
    """The facts that say something of the run (not how praxis was invoked)."""
    return {k: v for k, v in facts.to_dict().items() if k != "program"}


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
    if out.unfinished:
        summary += f", {out.unfinished} never finished"
    if not out.differ:
        return f"{summary}; every route recomputed from its facts is the one recorded"
    which = ", ".join(f"#{n}" for n in out.differ)
    return f"{summary}; routes recomputed differently from their facts: {which}"
