"""The `praxis` command (DESIGN.md §7).

Exit codes: 0 done or waiting at a Gate; 1 a phase failed; 2 bad usage or bad flow
definition (also an approve or reject bound to neither --expect-revision nor --gate); 3 busy
(lock held); 4 refused (a stale revision, a decision the actor may not take, a failing check);
5 sandbox unavailable (or a package of the flow that pip cannot fetch); 6 `praxis serve`'s
port is in use; 7 the run was cancelled (`praxis cancel`, SIGTERM or SIGHUP); 130 Ctrl-C (the
run is recorded as cancelled). Errors print one line (`TypeName: message`) and the next
command to try; a traceback only for real bugs. Text that came from a phase (errors, file
names, table cells, events) is printed escaped.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from .argv import flow_arg, program_argv
from .errors import EXIT, PraxisError, UsageError, exit_code_of, next_of
from .terminal import (
    NoFlowHere,
    cancel_on_signals,
    command,
    commands_in,
    escape,
    find_flow,
    quiet_pipes,
    received_signal,
)

if TYPE_CHECKING:
    from sandbox import SandboxUnavailable

    from .flows.model.state import RunState
    from .flows.store.handle import RunHandle
    from .llm.given import Approver

# The commands that may run a flow's code: they take --allow-local (isolation.py).
ALLOW_LOCAL = ("run", "advance", "approve", "reject", "rerun", "status", "chat", "serve")
LOCAL_HELP = "let a flow asking for backend: local run its code on this host, unisolated"
NOT_SEARCHED = ("chat", "serve", "sandbox", "mcp")  # FLOW may be new (chat), or is not a flow
OVERVIEW = ("status", "runs")  # above several flows: list them with their newest run


class Usage(UsageError):
    """Raised for a command line that cannot be acted on."""


def main(argv: list[str] | None = None) -> int:
    with quiet_pipes():  # a closed stdout/stderr drops output; it never fails a run
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    words = sys.argv[1:] if argv is None else argv
    known = words[0] if words and words[0] in COMMANDS else None  # else: every command's help
    args = parser(known).parse_args(words)
    code = _dispatch(args)
    if args.command in TRACED and _tracing(args):
        _trace(args, words, code)
    return code


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
        return int(args.func(args))
    except Exception as exc:
        if not _acted_on(exc):
            raise  # a bug: its traceback
        return _fail(exc, exit_code_of(exc), _next(exc, args))
    except KeyboardInterrupt:
        how = received_signal()
        print(f"\ncancelled ({how}): the run is recorded as cancelled", file=sys.stderr)
        return 130 if how == "Ctrl-C" else EXIT["cancelled"]


# The commands a trace records (those on one run); `--trace` or PRAXIS_TRACE=1 turns it on.
TRACED = (
    *("run", "begin", "advance", "status", "approve", "reject", "manage", "accept"),
    *("rerun", "cancel", "log"),
)


def _tracing(args: argparse.Namespace) -> bool:
    if getattr(args, "trace", False):
        return True
    if not os.environ.get("PRAXIS_TRACE"):
        return False  # the trace module (and the event types) load only when it may be on
    from .flows.report.trace import enabled

    return enabled()


def _trace(args: argparse.Namespace, words: list[str], code: int) -> None:
    """Record the command and the route after it in the run's trace.jsonl. A command whose
    run cannot be opened (none yet, a flow.yaml with errors) has nothing to record into."""
    from .flows.definition.contract import FlowInvalid
    from .flows.model.decisions import BadActor, actor_of
    from .flows.report import trace
    from .flows.store.handle import NoRun

    try:
        from .service.reading import open_run

        run = open_run(args.flow, getattr(args, "run", None))
        try:
            actor = actor_of(getattr(args, "actor", None))
        except BadActor:
            actor = "?"
        trace.record(run, [*program_argv(), *words], actor, code)
    except (NoRun, FlowInvalid):
        return
    except Exception as exc:  # a trace that cannot be written never changes the outcome
        print(f"trace: not recorded ({type(exc).__name__}: {escape(str(exc))})", file=sys.stderr)


def _allowing_local(args: argparse.Namespace) -> int:
    """Run the command with the person's --allow-local (never from a flow), then take it back."""
    from .flows.definition.isolation import allow_local

    before = allow_local()
    try:
        return int(args.func(args))
    finally:
        allow_local(before)


def _next(exc: PraxisError | SandboxUnavailable, args: argparse.Namespace) -> str:
    """The command to try after ``exc``: for a local backend refused before ``run`` made a
    run, ``run`` again with the flag (else the error's own: ``advance`` with it)."""
    if type(exc).__name__ == "LocalRefused" and args.command == "run":
        return f"praxis run {args.flow} --allow-local"
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
    print(f"next: {command(f'praxis status {shlex.quote(chosen.path)}')}")
    return EXIT["ok"]


def _fail(exc: Exception, code: int, hint: str) -> int:
    print(f"{type(exc).__name__}: {commands_in(escape(str(exc)))}", file=sys.stderr)
    print(f"  next: {command(hint)}", file=sys.stderr)
    return code


class PortBusy(PraxisError):
    """Raised by `praxis serve` when its port is taken, before any URL is printed."""

    exit_code = EXIT["port"]

    def __init__(self, host: str, port: int) -> None:
        super().__init__(f"port {port} on {host} is in use by another program")
        self.port = port

    def next(self, flow: str) -> str:
        return f"praxis serve --port {self.port + 1}"


def _check_port(host: str, port: int) -> None:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise PortBusy(host, port) from None
            raise Usage(f"cannot serve on {host}:{port} ({exc.strerror})") from None


# --- commands --------------------------------------------------------------------------


def cmd_check(args: argparse.Namespace) -> int:
    from .flows.definition import contract

    flow, report = contract.load(Path(args.flow))
    for problem in report.problems:
        print(escape(str(problem)))  # flow.yaml is hostile input too
    if not report.ok:
        return EXIT["usage"]
    assert flow is not None
    from .flows.definition.isolation import backend_of, on_host

    backend = backend_of(flow.sandbox)
    if on_host(backend):  # valid, but not isolated: never a plain "ok"
        print(
            f"{flow.name}: valid, {len(flow.phases)} phase(s), NOT isolated: the {backend} "
            "backend runs its code (check scripts too) on this host; it runs only with "
            "--allow-local"
        )
        return EXIT["ok"]
    print(f"{flow.name}: ok, {len(flow.phases)} phase(s)")
    return EXIT["ok"]


def cmd_begin(args: argparse.Namespace) -> int:
    from .service import acting

    run = acting.begin(args.flow, params=_params(args))
    print(run.id)
    return EXIT["ok"]


def cmd_run(args: argparse.Namespace) -> int:
    def begun(run: RunHandle) -> None:
        print(f"run {run.id} of {run.flow.name}", file=sys.stderr)

    params = _params(args)
    return _advance(
        args.flow,
        None,
        quiet=args.quiet,
        new_run=(params, begun),
        managed=args.managed,
        reuse=not args.no_reuse,
    )


def cmd_advance(args: argparse.Namespace) -> int:
    return _advance(args.flow, args.run, quiet=args.quiet, reuse=not args.no_reuse)


def _params(args: argparse.Namespace) -> dict[str, str]:
    from .flows.model.params import BadParam, parse_pairs

    try:
        return parse_pairs(getattr(args, "param", None))
    except BadParam as exc:
        raise Usage(str(exc)) from None


def _advance(
    flow_ref: str,
    run_id: str | None,
    *,
    quiet: bool = False,
    reuse: bool = True,
    new_run: tuple[dict[str, str], Callable[[RunHandle], None]] | None = None,
    managed: bool = False,
) -> int:
    """Advance a run (or begin one and advance it, under one hold of the lock), showing
    progress. SIGTERM and SIGHUP stop it like Ctrl-C: the run is recorded as cancelled."""
    from .console import Progress
    from .flows.model.params import BadParam
    from .service import acting
    from .service.reading import load

    flow = load(flow_ref)
    ids = [p.id for p in flow.phases]
    started = time.monotonic()
    with Progress(len(ids), ids, quiet=quiet) as progress, cancel_on_signals():
        approver = _approver()
        try:
            if new_run is not None:
                params, begun = new_run
                state = acting.run(
                    flow,
                    params=params,
                    on_begun=begun,
                    managed=managed,
                    approver=approver,
                    on_event=progress,
                    on_message=progress.message,
                    reuse=reuse,
                )
            else:
                state = acting.advance(
                    flow,
                    run_id,
                    approver=approver,
                    on_event=progress,
                    on_message=progress.message,
                    reuse=reuse,
                )
        except BadParam as exc:
            raise Usage(str(exc)) from None
    return _report(flow_ref, state, time.monotonic() - started)


def _approver() -> Approver | None:
    from .agent.approvals import terminal_approver

    return terminal_approver()


def _flagged_rows(run: RunHandle) -> dict[str, tuple[int, ...]]:
    """Output name -> the data rows (1-based) the Gate's failing declared checks name."""
    from .flows.engine import checks, reconcile

    found: dict[str, tuple[int, ...]] = {}
    try:
        failures = checks.gate_failures(run, reconcile.phase_version(run, str(run.state.gate)),
                                        scripts=False)  # fmt: skip
    except (OSError, ValueError):  # a preview must never stop the CLI
        return found
    for f in failures:
        found[f.output] = tuple(sorted({*found.get(f.output, ()), *f.rows}))
    return found


def _report(flow_ref: str, state: RunState, seconds: float) -> int:
    from .console import table_preview
    from .flows.report.status import status_of
    from .service.reading import open_run

    run = open_run(flow_ref, state.run)
    st = status_of(run)
    done = sum(1 for p in state.phases if p.status == "done")
    print(
        f"run {state.run}: {escape(st.message)} "
        f"({done}/{len(state.phases)} phases done, {seconds:.1f} s)"
    )
    if state.waiting == "gate":
        print("review (you may edit these files):")
        flagged = _flagged_rows(run)
        for path in st.review:
            print(f"  {escape(path)}")
            if path.endswith((".csv", ".tsv")) and Path(path).is_file():
                print(table_preview(Path(path), flagged=flagged.get(Path(path).name, ())))
        print("then approve:")
        print(f"  {command(st.next[0])}")
        print("or reopen a phase with a note for it:")
        print(f"  {command(st.next[1])}")
        return EXIT["ok"]
    if state.status == "failed":
        from .flows.model.hints import missing_package

        print(f"PhaseFailed: {commands_in(escape(state.error or ''))}", file=sys.stderr)
        print(f"  record: {_rel(run.paths.record(state.phases[state.cursor].id))}", file=sys.stderr)
        if state.isolated and missing_package(state.error or ""):
            build = f"praxis sandbox build {flow_arg(run.flow)}"
            print(f"  next: {command(build)}   (once the package is in flow.yaml)", file=sys.stderr)
            print(f"  then: {command(st.next[0])}", file=sys.stderr)
        else:
            print(f"  next: {command(st.next[0])}", file=sys.stderr)
        return EXIT["failed"]
    if state.status == "done":
        print(f"outputs in {_rel(run.paths.output)}/")
    for cmd in st.next[:1]:
        print(f"next: {command(cmd)}")
    return EXIT["cancelled"] if state.status == "cancelled" else EXIT["ok"]


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def cmd_status(args: argparse.Namespace) -> int:
    from .flows.definition import contract
    from .flows.engine.reconcile import reconcile_if_free
    from .flows.report.status import status_of
    from .flows.store.handle import RunHandle
    from .status_lines import receipt_lines, route_lines, timeline

    flow = contract.require(Path(args.flow))
    reconcile_if_free(flow, args.run)  # hand edits first, when no other process holds the run
    run = RunHandle.open(flow, args.run)
    st = status_of(run)
    if args.json:
        print(json.dumps(st.to_dict(), indent=1))
        return EXIT["ok"]
    print(f"{flow.name} run {st.run}: {st.status} (revision {st.revision}) - {escape(st.message)}")
    print(timeline(run.state))
    for path in st.review:
        print(f"  review: {escape(path)}")
    for line in route_lines(st.route) + receipt_lines(st.receipt, st.managed):
        print(line)
    for cmd in st.next:
        print(f"next: {command(cmd)}")
    return EXIT["ok"]


def cmd_runs(args: argparse.Namespace) -> int:
    from .flows.definition import contract
    from .flows.store.handle import RunHandle, listing
    from .flows.store.state_file import StateCorrupt

    flow = contract.require(Path(args.flow))
    if args.delete or args.keep is not None:
        from .service import acting

        if args.keep is not None and args.keep < 0:
            raise Usage("--keep takes a number of runs, 0 or more")
        for run_id in acting.delete_runs(flow, args.delete, keep=args.keep):
            print(f"deleted run {run_id}")
        return EXIT["ok"]
    lines = []
    with listing(flow) as ids:  # no run created or deleted while they are read
        for run_id in reversed(ids):
            try:
                state = RunHandle.open(flow, run_id).state
                extra = f" at Gate after {state.gate}" if state.waiting == "gate" else ""
                lines.append(f"{run_id}  {state.status}{extra}")
            except StateCorrupt as exc:
                lines.append(f"{run_id}  unreadable: {escape(exc.reason)}")
    for line in lines:
        print(line)
    return EXIT["ok"]


def cmd_approve(args: argparse.Namespace) -> int:
    from .service import acting

    state = acting.approve(
        args.flow,
        args.run,
        expect_revision=args.expect_revision,
        gate=args.gate,
        actor=args.actor,
        acks=args.ack,
    )
    print(f"approved the Gate (revision {state.revision}); continuing", file=sys.stderr)
    return _advance(args.flow, state.run)


def cmd_manage(args: argparse.Namespace) -> int:
    from .service import acting

    state = acting.manage(
        args.flow,
        args.run,
        grant=not args.off,
        actor=args.actor,
        expect_revision=args.expect_revision,
    )
    if state.managed:
        print(f"run {state.run} is managed: an agent may decide its delegatable Gates")
    else:
        print(f"run {state.run} is not managed: a person decides every Gate")
    return EXIT["ok"]


def cmd_accept(args: argparse.Namespace) -> int:
    from .service import acting

    state = acting.accept(
        args.flow, args.output, args.run, actor=args.actor, expect_revision=args.expect_revision
    )
    print(f"run {state.run}: {args.output} accepted as it is (revision {state.revision})")
    return EXIT["ok"]


def cmd_reject(args: argparse.Namespace) -> int:
    from .service import acting

    state = acting.reject(
        args.flow,
        args.reopen,
        args.note,
        args.run,
        expect_revision=args.expect_revision,
        gate=args.gate,
        actor=args.actor,
        acks=args.ack,
        edits=args.edits,
    )
    print(f"reopened {args.reopen} (revision {state.revision}); continuing", file=sys.stderr)
    return _advance(args.flow, state.run)


def cmd_gc(args: argparse.Namespace) -> int:
    from .service import acting

    swept = acting.gc(args.flow)
    print(
        f"removed {swept.objects} object(s), {swept.bytes / (1 << 20):.1f} MiB, that no run "
        f"holds; {swept.kept} kept"
    )
    return EXIT["ok"]


def cmd_rerun(args: argparse.Namespace) -> int:
    from .flows.model.params import BadParam
    from .service import acting
    from .service.reading import load

    try:
        state = acting.rerun(
            args.flow,
            args.from_phase,
            args.run,
            expect_revision=args.expect_revision,
            params=_params(args),
            reuse=not args.no_reuse,
            edits=args.edits,
        )
    except BadParam as exc:
        raise Usage(str(exc)) from None
    stale = [p.id for p in state.phases if p.status == "stale"]
    print(
        f"run {state.run} will re-run from {args.from_phase}"
        + (f"; stale: {', '.join(stale)}" if stale else "")
    )
    print("next: " + command(f"praxis advance {flow_arg(load(args.flow))} --run {state.run}"))
    return EXIT["ok"]


def cmd_cancel(args: argparse.Namespace) -> int:
    from .service import acting

    state, now = acting.cancel(args.flow, args.run, expect_revision=args.expect_revision)
    if now:
        print(f"run {state.run} cancelled")
    else:
        print(f"run {state.run}: cancel requested; the advancing process stops the phase")
    return EXIT["ok"]


def cmd_log(args: argparse.Namespace) -> int:
    from .console import LiveTail, format_event
    from .flows.model.events import EventLog, PhaseStarted
    from .flows.store.handle import NoRun, RunHandle
    from .flows.store.layout import list_run_ids, run_paths
    from .service.reading import load

    flow = load(args.flow)
    ids = list_run_ids(flow.root)
    run_id = args.run or (ids[-1] if ids else None)
    if run_id is None:
        raise NoRun(flow, None)
    log = EventLog(run_paths(flow.root, run_id).events)
    tail = LiveTail(run_paths(flow.root, run_id).root)  # what running phases print
    seen, following = 0, False
    while True:
        events = log.read()
        for event in events[seen:]:
            print(format_event(event), flush=True)
        started = [e.phase for e in events[seen:] if isinstance(e, PhaseStarted)]
        seen = len(events)
        if not args.follow:
            return EXIT["ok"]
        state = RunHandle.open(flow, run_id).state
        running = [p.id for p in state.phases if p.status == "running"]
        for line in tail.lines(running + (started if following else [])):
            print(line, flush=True)
        following = True
        if state.status != "running" and seen:
            return EXIT["ok"]
        time.sleep(0.5)


def cmd_params(args: argparse.Namespace) -> int:
    from .flows.definition.notebook_check import NotebookProblem
    from .phases import notebook_params
    from .service.reading import load

    flow = load(args.flow)
    if args.phase is not None and args.phase not in [p.id for p in flow.phases]:
        raise Usage(f"{flow.name} has no phase {args.phase!r}")
    try:
        lines, warnings = notebook_params.report(flow, args.phase)
    except (ValueError, NotebookProblem) as exc:
        raise Usage(str(exc)) from None
    for line in lines:
        print(escape(line))
    for line in warnings:
        print(escape(line), file=sys.stderr)
    return EXIT["ok"]


def cmd_replay(args: argparse.Namespace) -> int:
    from .flows.report import trace
    from .flows.report.replay import replay
    from .service.reading import open_run

    run = open_run(args.flow, args.run)
    entries = trace.read(run)
    if not entries:
        raise Usage(
            f"run {run.id} has no trace: its commands ran without PRAXIS_TRACE=1 (or --trace)"
        )
    result = replay(entries, f"{run.flow.name} run {run.id}")
    for line in result.lines:
        print(escape(line))
    return EXIT["failed"] if result.differ else EXIT["ok"]


def cmd_mcp(args: argparse.Namespace) -> int:
    try:
        from .mcp_server import serve  # the MCP SDK loads only for `praxis mcp`
    except ImportError as exc:
        raise Usage(f"praxis mcp needs the MCP SDK ({exc}): pip install 'praxis[mcp]'") from None
    return serve(Path(args.root))


def cmd_sandbox(args: argparse.Namespace) -> int:
    from .sandbox_cli import run_sandbox_command

    flow = find_flow(args.flow) if args.flow else None
    return run_sandbox_command(args.action, args.label, flow=flow)


def cmd_serve(args: argparse.Namespace) -> int:
    from .web.app import serve  # the web stack loads only for `praxis serve`
    from .web.background import MAX_RUNS_LIMIT

    if not 1 <= args.max_runs <= MAX_RUNS_LIMIT:
        raise Usage(f"--max-runs takes a number of runs from 1 to {MAX_RUNS_LIMIT}")
    _check_port("127.0.0.1", args.port)
    return int(
        serve(
            Path(args.root),
            port=args.port,
            max_runs=args.max_runs,
            notify_command=args.notify_command,
        )
        or 0
    )


def cmd_chat(args: argparse.Namespace) -> int:
    from .chat.terminal import main as chat_main  # langchain loads only for `praxis chat`

    return chat_main(args.flow, message=args.message, resume=args.resume, max_calls=args.max_calls)


# --- parser ----------------------------------------------------------------------------


COMMANDS = (
    *("check", "run", "begin", "advance", "status", "runs", "gc", "approve", "reject"),
    "manage",
    *("accept", "rerun", "cancel", "log", "replay", "params", "chat", "sandbox", "serve"),
    "mcp",
)


def parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line. Given ``command`` (a command line's first argument), only that
    command's own parser is built: building all of them costs every command ~6 ms."""
    p = argparse.ArgumentParser(prog="praxis", description="Run data flows in sandboxed kernels.")
    p.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    made: dict[str, argparse.ArgumentParser] = {}

    def add(
        name: str,
        func: Callable[[argparse.Namespace], int],
        help: str,
        *,
        run: bool = True,
        revision: bool = False,
    ) -> None:
        if command is not None and name != command:
            return
        c = sub.add_parser(name, help=help)
        c.add_argument(
            "flow",
            metavar="FLOW",
            nargs="?",
            default=".",
            help="a flow folder or its flow.yaml (default: the flow holding the current folder)",
        )
        if run:
            c.add_argument("--run", help="a run id (default: the newest run)")
        if name in TRACED:
            c.add_argument(
                "--trace",
                action="store_true",
                help="record the command and the route after it in the run's trace.jsonl "
                "(also: PRAXIS_TRACE=1)",
            )
        if revision:
            c.add_argument(
                "--expect-revision",
                type=int,
                metavar="N",
                help="refuse if the run changed since revision N",
            )
        c.set_defaults(func=func)
        made[name] = c

    def option(names: tuple[str, ...], *flags: str, **how: Any) -> None:
        """An option of the commands ``names`` (of those being built)."""
        for name in names:
            if name in made:
                made[name].add_argument(*flags, **how)

    add("check", cmd_check, "check a flow definition; exit 2 on errors", run=False)
    add("run", cmd_run, "begin a run and advance it", run=False)
    add("begin", cmd_begin, "a new run paused at phase 1; prints its id", run=False)
    add("advance", cmd_advance, "run until a Gate, a failure, the end")
    add("status", cmd_status, "state and the exact next command")
    option(("status",), "--json", action="store_true")
    add("runs", cmd_runs, "list runs, newest first (or delete some)", run=False)
    option(("runs",), "--delete", action="append", default=[], metavar="ID", help="delete a run")
    option(("runs",), "--keep", type=int, metavar="N", help="delete all but the newest N runs")
    add("gc", cmd_gc, "remove the stored files that no run of the flow holds", run=False)
    add("approve", cmd_approve, "approve the Gate and continue", revision=True)
    add("reject", cmd_reject, "reopen a phase with a note, and continue", revision=True)
    option(("reject",), "--reopen", required=True, metavar="PHASE")
    option(("reject",), "--note", required=True, metavar="TEXT")
    option(
        ("approve", "reject"),
        "--gate",
        metavar="PHASE",
        help="the Gate you decide (the phase it follows)",
    )
    add("manage", cmd_manage, "let an agent decide the run's delegatable Gates", revision=True)
    option(("manage",), "--off", action="store_true", help="take managed mode back")
    add("accept", cmd_accept, "accept an output changed outside praxis", revision=True)
    option(("accept",), "--output", required=True, metavar="NAME")
    option(
        ("approve", "reject", "manage", "accept"),
        "--as",
        dest="actor",
        choices=["person", "agent"],
        help="who decides (default: $PRAXIS_ACTOR, else person)",
    )
    add("rerun", cmd_rerun, "re-run from a phase (later phases become stale)", revision=True)
    option(("rerun",), "--from", dest="from_phase", required=True, metavar="PHASE")
    option(("rerun",), "--no-reuse", action="store_true", help="run every later phase again")
    for flag, choice, words in (
        ("--keep-edits", "keep", "re-apply them to the new output by row key"),
        ("--discard-edits", "discard", "drop them (they stay under attempts/)"),
    ):
        option(
            ("rerun", "reject"),
            flag,
            dest="edits",
            action="store_const",
            const=choice,
            help=f"outputs edited at a Gate that this replaces: {words}",
        )
    option(
        ("approve", "reject"),
        "--ack",
        action="append",
        metavar="SHA256",
        help="acknowledge a file of route.read by its sha256 (an agent must, for each)",
    )
    add("cancel", cmd_cancel, "cancel a run", revision=True)
    add("log", cmd_log, "the run's events")
    option(("log",), "--follow", action="store_true", help="and what running phases print")
    add("replay", cmd_replay, "the run's trace, per fact change; recomputes every route")
    add("params", cmd_params, "a notebook's parameters, their defaults and types", run=False)
    option(("params",), "--phase", metavar="ID", help="only this notebook phase")
    option(("run", "advance"), "--quiet", action="store_true", help="hide what phases print")
    option(
        ("run",), "--managed", action="store_true", help="let an agent decide the delegatable Gates"
    )
    option(
        ("run", "advance"),
        "--no-reuse",
        action="store_true",
        help="run every phase, even one a done attempt of this or another run stands for",
    )
    option(
        ("run", "begin", "rerun"),
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a run parameter (flow.yaml params:), typed by its default",
    )

    add("chat", cmd_chat, "write or change a flow with a model (FLOW may be new)", run=False)
    option(("chat",), "--message", metavar="TEXT", help="send one message, print the answer, exit")
    option(("chat",), "--resume", action="store_true", help="continue the newest transcript")
    option(
        ("chat",), "--max-calls", type=int, default=30, metavar="N", help="model calls per message"
    )
    option(
        ALLOW_LOCAL,
        "--allow-local",
        action="store_true",
        help=LOCAL_HELP,
    )

    if command in (None, "sandbox"):
        sb = sub.add_parser(
            "sandbox", help="build the sandbox image, show status, prune containers"
        )
        sb.add_argument("action", choices=["build", "status", "prune"])
        sb.add_argument(
            "flow",
            metavar="FLOW",
            nargs="?",
            help="build: also the image with this flow's packages",
        )
        sb.add_argument(
            "--label",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="prune: only containers carrying this label (repeatable)",
        )
        sb.set_defaults(func=cmd_sandbox)
    if command in (None, "serve"):
        sv = sub.add_parser("serve", help="the reviewer web UI over every flow below DIR")
        sv.add_argument("--root", default=".", metavar="DIR")
        sv.add_argument("--port", type=int, default=8765)
        sv.add_argument(
            "--max-runs",
            type=int,
            default=4,
            metavar="N",
            help="runs advanced at once (each in its own sandbox; more wait for a place)",
        )
        sv.add_argument("--allow-local", action="store_true", help=LOCAL_HELP)
        sv.add_argument(
            "--notify-command",
            metavar="COMMAND",
            help="run COMMAND (JSON on its stdin) when a run waits at a Gate, fails or is done "
            "(default: $PRAXIS_NOTIFY_COMMAND)",
        )
        sv.set_defaults(func=cmd_serve, flow=".")
    if command in (None, "mcp"):
        mc = sub.add_parser("mcp", help="an MCP server over stdio for agents (flows below DIR)")
        mc.add_argument("--root", default=".", metavar="DIR")
        mc.set_defaults(func=cmd_mcp, flow=".")
    return p


class _Version(argparse.Action):
    """--version, looked up only when asked for (importlib.metadata costs every command
    25 ms otherwise)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"praxis {_version()}")
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("praxis")
    except PackageNotFoundError:
        return "(not installed)"


if __name__ == "__main__":
    sys.exit(main())
