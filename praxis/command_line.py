"""The one builder of praxis command lines: a ``Command`` is a verb and its typed parameters
(flow, run, Gate, attempt, revision, receipts, ...), rendered three ways from that one value:

- ``argv()``: the argv list a program runs (the route's ``commands``, ``trace.jsonl``);
- ``line()``: the line a person types (``next:`` lines, errors, refusals), each word quoted
  for a POSIX shell, a note always in single quotes (``--note '...'``);
- ``tool_call()``: the MCP tool call that takes it (``praxis mcp``'s ``calls``), or None for a
  verb that is no tool (``run``, ``accept``, ``check``: a person's).

The words are in one fixed order, so a command has one spelling wherever it is shown. No other
module of praxis spells an option of these commands (``--expect-revision``, ``--gate``, ...):
``tests/test_command_line.py`` holds that. A leaf (floor 1): errors and every floor above
build their commands here.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

# The options of a command, in the order they are written: parameter -> option.
OPTIONS = {
    "run": "--run",
    "gate": "--gate",
    "attempt": "--attempt",
    "reopen": "--reopen",
    "note": "--note",
    "from_phase": "--from",
    "output": "--output",
    "edits": "",  # a flag of its own: EDITS
    "expect_revision": "--expect-revision",
    "actor": "--as",
    "receipts": "--receipt",
    "values": "--set",
    "port": "--port",
}
EDITS = {"keep": "--keep-edits", "discard": "--discard-edits"}
FLAGS = {
    "follow": "--follow",
    "json": "--json",
    "allow_local": "--allow-local",
    "resume": "--resume",
}
# The verbs that are tools of ``praxis mcp`` (the client is always an agent: no ``actor``).
TOOLS = {
    "status": "status",
    "advance": "advance",
    "approve": "approve",
    "reject": "reject",
    "rerun": "rerun",
    "cancel": "cancel",
    "log": "log",
    "read": "read_file",
}
NOTE = "..."  # the note a proposed reject leaves for the person (or agent) to write


@dataclass(frozen=True)
class Command:
    """One praxis command: ``verb`` (one word, or two for a group: ``sandbox build``), the flow
    as an argv item (unquoted; ``praxis.argv.flow_text``), and its parameters; None (or empty)
    leaves an option out."""

    verb: str
    flow: str | None = None
    path: str | None = None  # the file ``read`` reads
    run: str | None = None
    gate: str | None = None
    attempt: int | None = None
    reopen: str | None = None
    note: str | None = None
    from_phase: str | None = None
    output: str | None = None
    edits: str | None = None  # keep | discard
    expect_revision: int | None = None
    actor: str | None = None
    receipts: tuple[str, ...] = ()
    values: tuple[str, ...] = ()  # a Gate form's FIELD=VALUE pairs (approve)
    port: int | None = None
    follow: bool = False
    json: bool = False
    allow_local: bool = False
    resume: bool = False
    program: tuple[str, ...] = ("praxis",)  # how praxis is invoked

    def __post_init__(self) -> None:
        if self.edits is not None and self.edits not in EDITS:
            raise ValueError(f"edits is keep or discard, not {self.edits!r}")

    def words(self) -> list[tuple[str, str | None]]:
        """The command after the program as (word, the option it is the value of)."""
        out: list[tuple[str, str | None]] = [(w, None) for w in self.verb.split()]
        out += [(w, None) for w in (self.flow, self.path) if w is not None]
        for name, option in OPTIONS.items():
            value = getattr(self, name)
            if name == "edits":
                out += [(EDITS[value], None)] if value is not None else []
            elif name in ("receipts", "values"):
                out += [x for r in value for x in ((option, None), (r, option))]
            elif value is not None:
                out += [(option, None), (str(value), option)]
        out += [(flag, None) for name, flag in FLAGS.items() if getattr(self, name)]
        return out

    def argv(self) -> list[str]:
        """The argv list a program runs, starting with ``program``."""
        return [*self.program, *(w for w, _ in self.words())]

    def line(self) -> str:
        """The line a person types: shell-quoted words, the note in single quotes."""
        typed = [shlex.quote(w) for w in self.program]
        for word, of in self.words():
            typed.append(_single(word) if of == "--note" else shlex.quote(word))
        return " ".join(typed)

    def tool_call(self) -> dict[str, Any] | None:
        """``{"tool": ..., "arguments": {...}}`` of ``praxis mcp``, or None (not a tool)."""
        tool = TOOLS.get(self.verb)
        if tool is None:
            return None
        arguments: dict[str, Any] = {}
        for name in ("flow", "path", *OPTIONS):
            value = getattr(self, name)
            if name == "actor" or value is None or value == ():
                continue
            if name == "values":  # the MCP tool takes them as a mapping
                arguments[name] = dict(pair.partition("=")[::2] for pair in value)
            else:
                arguments[name] = list(value) if name == "receipts" else value
        return {"tool": tool, "arguments": arguments}


def _single(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


def typed(verb: str, flow: str | None = None, **params: Any) -> str:
    """``Command(verb, flow, **params).line()``: the line a person types."""
    return Command(verb, flow, **params).line()
