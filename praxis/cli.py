"""The `praxis` command (DESIGN.md §7): the command line parsed (``cli_parser``), the
command run from its module of ``praxis.commands``, an error told in one line.

Exit codes: 0 done or waiting at a Gate; 1 a phase failed; 2 bad usage or bad flow
definition (also an approve or reject bound to neither --expect-revision nor --gate); 3 busy
(lock held); 4 refused (a stale revision, a decision for another attempt of the Gate or the
actor may not take, no receipt of a file to read, a failing check);
5 sandbox unavailable (or a package of the flow that pip cannot fetch); 6 `praxis serve`'s
port is in use; 7 the run was cancelled (`praxis cancel`, SIGTERM or SIGHUP); 130 Ctrl-C (the
run is recorded as cancelled). Errors print one line (`TypeName: message`) and the next
command to try; a traceback only for real bugs. Text that came from a phase (errors, file
names, table cells, events) is printed escaped.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from .argv import program_argv
from .cli_parser import COMMANDS, TRACED, parser
from .command_line import typed
from .errors import EXIT, PraxisError, exit_code_of, next_of
from .terminal import (
    NoFlowHere,
    command,
    commands_in,
    escape,
    find_flow,
    quiet_after_interrupt,
    quiet_pipes,
    received_signal,
)

if TYPE_CHECKING:
    from sandbox import SandboxUnavailable


# FLOW may be new (chat), or is not a flow
NOT_SEARCHED = ("chat", "serve", "sandbox", "mcp", "users", "agents")
OVERVIEW = ("status", "runs")  # above several flows: list them with their newest run


def main(argv: list[str] | None = None) -> int:
    with quiet_pipes():  # a closed stdout/stderr drops output; it never fails a run
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    words = sys.argv[1:] if argv is None else argv
    known = words[0] if words and words[0] in COMMANDS else None  # else: every command's help
    args = parser(known).parse_args(words)
    tracing = args.command in TRACED and _tracing(args)
    if tracing and args.command not in MAKES_RUN:
        _trace(args, words, None)  # as it starts: a command killed before its end is there
    elif tracing and args.command == "run":  # as its run is made, before a phase runs
        args.on_begun = lambda run: _trace(args, words, None, made=run)
    code = _dispatch(args)
    if tracing:
        _trace(args, words, code)
    return code


# The module of praxis.commands each command is in; the others are in ``acting``.
HOME = {
    **{name: name for name in ("check", "status", "runs", "sandbox", "upgrade", "schedule")},
    **dict.fromkeys(("log", "replay", "params", "diff"), "history"),
    **dict.fromkeys(("serve", "mcp", "chat"), "serving"),
    **dict.fromkeys(("users", "agents", "audit"), "accounts"),
}


def _run(args: argparse.Namespace) -> int:
    """Run ``args.command`` from its module, imported now (``praxis.commands``)."""
    name = args.command
    module = importlib.import_module(f"praxis.commands.{HOME.get(name, 'acting')}")
    return int(getattr(module, f"cmd_{name}")(args))


def _dispatch(args: argparse.Namespace) -> int:
    try:
        if args.command not in NOT_SEARCHED and getattr(args, "flow", None):
            try:
                args.flow = find_flow(args.flow)
            except NoFlowHere as here:
                if args.command not in OVERVIEW:
                    raise
                return _overview(here)
        if getattr(args, "allow_local", False):
            return _allowing_local(args)
        return _run(args)
    except Exception as exc:
        if not _acted_on(exc):
            raise  # a bug: its traceback
        return _fail(exc, exit_code_of(exc), _next(exc, args))
    except KeyboardInterrupt:
        how = received_signal()
        print(f"\ncancelled ({how}): the run is recorded as cancelled", file=sys.stderr)
        quiet_after_interrupt()
        return 130 if how == "Ctrl-C" else EXIT["cancelled"]


def _tracing(args: argparse.Namespace) -> bool:
    if getattr(args, "trace", False):
        return True
    if not os.environ.get("PRAXIS_TRACE"):
        return False  # the trace module (and the event types) load only when it may be on
    from .flows.report.trace import enabled

    return enabled()


# Commands that make their run: no run to trace into as they start (``run`` is traced as
# its run is made, ``begin`` at its end only).
MAKES_RUN = ("run", "begin")


def _trace(args: argparse.Namespace, words: list[str], code: int | None, made: Any = None) -> None:
    """Record the command in the run's trace.jsonl (``made``, else the run it names): as it
    starts (``code`` None), or with its exit code and the route after it. A command whose run
    cannot be opened (none yet, a flow.yaml with errors) has nothing to record into."""
    from .flows.definition.contract import FlowInvalid
    from .flows.model.decisions import BadActor, actor_of
    from .flows.report import trace
    from .flows.store.handle import NoRun

    try:
        from .service import authority
        from .service.reading import open_run

        if made is not None:
            run = made
        else:
            flow = find_flow(args.flow) if code is None else args.flow  # _dispatch resolves it
            run = open_run(flow, getattr(args, "run", None))
        try:
            narrowed = actor_of(getattr(args, "actor", None))
        except BadActor:
            narrowed = None
        who = authority.caller()  # as the command's verbs resolve it (a bad token: its kind)
        if who is not None and narrowed == "agent":
            who = who.as_agent()
        actor = who.label if who is not None else (narrowed or "?")
        if code is None:
            trace.start(run, [*program_argv(), *words], actor)
        else:
            standing = authority.standing(who, run) if who is not None else None
            trace.record(run, [*program_argv(), *words], actor, code, standing)
    except (NoRun, FlowInvalid, NoFlowHere):
        return
    except Exception as exc:  # a trace that cannot be written never changes the outcome
        if code is not None:  # (at the start, the command itself says what is wrong)
            print(
                f"trace: not recorded ({type(exc).__name__}: {escape(str(exc))})", file=sys.stderr
            )


def _allowing_local(args: argparse.Namespace) -> int:
    """Run the command with the person's --allow-local (never from a flow), then take it back."""
    from .flows.definition.isolation import allow_local

    before = allow_local()
    try:
        return _run(args)
    finally:
        allow_local(before)


def _next(exc: PraxisError | SandboxUnavailable, args: argparse.Namespace) -> str:
    """The command to try after ``exc``: for a local backend refused before ``run`` made a
    run, ``run`` again with the flag (else the error's own: ``advance`` with it)."""
    if type(exc).__name__ == "LocalRefused" and args.command == "run":
        return typed("run", args.flow, allow_local=True)
    if not getattr(args, "flow", None) and not isinstance(exc, PraxisError):
        return "start Docker (dockerd), then: " + typed("sandbox status")  # no flow to name
    return next_of(exc, args.flow)


def _acted_on(exc: Exception) -> TypeGuard[PraxisError | SandboxUnavailable]:
    """A PraxisError, or the sandbox's SandboxUnavailable: errors a person can act on.
    (A command that never imported the sandbox package cannot have raised the latter.)"""
    errors = sys.modules.get("sandbox.errors")
    return isinstance(exc, PraxisError) or (
        errors is not None and isinstance(exc, errors.SandboxUnavailable)
    )


def _overview(here: NoFlowHere) -> int:
    """``status`` / ``runs`` in a folder above flows: each flow and its newest run."""
    from .overview import describe, latest

    if not here.below:
        return _fail(here, here.exit_code, here.next(here.arg))
    found = describe(Path(here.arg), [Path(p) for p in here.below])
    width = max(len(f.path) for f in found)
    print(f"{escape(here.arg)} holds no flow.yaml; the flows below it:")
    for f in found:
        print(f"  {escape(f.path).ljust(width)}  {escape(f.newest)}")
    chosen = latest(found) or found[0]
    print(f"next: {command(typed('status', chosen.path))}")
    return EXIT["ok"]


def _fail(exc: Exception, code: int, hint: str) -> int:
    print(f"{type(exc).__name__}: {commands_in(escape(str(exc)))}", file=sys.stderr)
    print(f"  next: {command(hint)}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
