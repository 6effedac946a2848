"""The commands that change a run: begin, run, advance, approve, reject, manage, accept,
rerun, cancel, publish, gc; and what `run`/`advance` show while a run goes on and when it stops."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..agent.approvals import terminal_approver
from ..argv import flow_text, shown
from ..command_line import Command
from ..console import Progress, table_preview
from ..errors import EXIT
from ..flows.engine import checks, reconcile
from ..flows.model.forms import BadValue
from ..flows.model.hints import missing_package
from ..flows.model.params import BadParam, parse_pairs
from ..flows.report.status import status_of
from ..service import acting
from ..service.reading import load, open_run
from ..terminal import cancel_on_signals, command, commands_in, escape
from . import Usage

if TYPE_CHECKING:
    from ..flows.model.state import RunState
    from ..flows.store.handle import RunHandle
    from ..llm.given import Approver


def cmd_begin(args: argparse.Namespace) -> int:
    run = acting.begin(args.flow, params=_params(args))
    print(run.id)
    return EXIT["ok"]


def cmd_run(args: argparse.Namespace) -> int:
    def begun(run: RunHandle) -> None:
        print(f"run {run.id} of {run.flow.name}", file=sys.stderr)
        traced = getattr(args, "on_begun", None)  # the trace's start line, when tracing
        if traced is not None:
            traced(run)

    params = _params(args)
    return _advance(
        args.flow,
        None,
        quiet=args.quiet,
        new_run=(params, begun),
        reuse=not args.no_reuse,
        partitions=args.partitions,
    )


def cmd_advance(args: argparse.Namespace) -> int:
    return _advance(
        args.flow,
        args.run,
        quiet=args.quiet,
        reuse=not args.no_reuse,
        expect_revision=args.expect_revision,
    )


def _params(args: argparse.Namespace) -> dict[str, str]:
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
    expect_revision: int | None = None,
    partitions: str | None = None,
) -> int:
    """Advance a run (or begin one and advance it, under one hold of the lock), showing
    progress. SIGTERM and SIGHUP stop it like Ctrl-C: the run is recorded as cancelled."""
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
                    partitions=partitions,
                )
            else:
                state = acting.advance(
                    flow,
                    run_id,
                    approver=approver,
                    on_event=progress,
                    on_message=progress.message,
                    reuse=reuse,
                    expect_revision=expect_revision,
                )
        except BadParam as exc:
            raise Usage(str(exc)) from None
    return _report(flow_ref, state, time.monotonic() - started)


def _approver() -> Approver | None:
    return terminal_approver()


def _flagged_rows(run: RunHandle) -> dict[str, tuple[int, ...]]:
    """Output name -> the data rows (1-based) the Gate's failing declared checks name."""
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
        if st.route.get("step") != "decide":  # a phase up to the Gate changed since it ran
            print(f"{escape(st.route['why'])}; next:")
            for line in st.next:
                print(f"  {command(line)}")
            return EXIT["ok"]
        print("then approve:")
        print(f"  {command(st.next[0])}")
        for line in st.next[1:2]:
            print("or reopen a phase with a note for it:")
            print(f"  {command(line)}")
        return EXIT["ok"]
    if state.status == "failed":
        print(f"PhaseFailed: {commands_in(escape(state.error or ''))}", file=sys.stderr)
        failed = state.phases[state.cursor]
        parts = [n for n, q in failed.partitions.items() if q.get("status") == "failed"]
        record = (
            run.paths.partition_record(failed.id, parts[0])
            if parts
            else run.paths.record(failed.id)
        )
        print(f"  record: {shown(record)}", file=sys.stderr)
        if state.isolated and missing_package(state.error or ""):
            build = Command("sandbox build", flow_text(run.flow)).line()
            print(f"  next: {command(build)}   (once the package is in flow.yaml)", file=sys.stderr)
            print(f"  then: {command(st.next[0])}", file=sys.stderr)
        else:
            print(f"  next: {command(st.next[0])}", file=sys.stderr)
        return EXIT["failed"]
    if state.status == "done":
        print(f"outputs in {shown(run.paths.output)}/")
        if run.flow.publish:  # after the last Gate a person approved: to the tables
            return _publish(flow_ref, state.run)
    for cmd in st.next[:1]:
        print(f"next: {command(cmd)}")
    return EXIT["cancelled"] if state.status == "cancelled" else EXIT["ok"]


def cmd_approve(args: argparse.Namespace) -> int:
    state = acting.approve(
        args.flow,
        args.run,
        expect_revision=args.expect_revision,
        gate=args.gate,
        attempt=args.attempt,
        actor=args.actor,
        receipts=args.receipts,
        values=form_values(args.values),
    )
    print(f"approved the Gate (revision {state.revision}); continuing", file=sys.stderr)
    return _advance(args.flow, state.run)


def form_values(pairs: list[str] | None) -> dict[str, str]:
    """``--set field=value`` pairs, as text (the Gate's form types them)."""
    try:
        return parse_pairs(pairs)
    except BadParam as exc:
        raise BadValue(str(exc).replace("-p ", "--set ", 1)) from None


def cmd_manage(args: argparse.Namespace) -> int:
    made = acting.manage(
        args.flow,
        args.run,
        agent=args.agent,
        duration=args.duration,
        grant=not args.off,
        actor=args.actor,
    )
    where = f"run {args.run}" if args.run else f"every run of {flow_text(args.flow)}"
    if isinstance(made, int):
        print(f"agent:{args.agent}: {made} live grant(s) on {where} revoked")
    else:
        until = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(made.until))
        print(
            f"agent:{args.agent} may decide the delegatable Gates of {where} until {until} "
            f"(granted by {made.by})"
        )
    return EXIT["ok"]


def cmd_accept(args: argparse.Namespace) -> int:
    state = acting.accept(
        args.flow, args.output, args.run, actor=args.actor, expect_revision=args.expect_revision
    )
    print(f"run {state.run}: {args.output} accepted as it is (revision {state.revision})")
    return EXIT["ok"]


def cmd_reject(args: argparse.Namespace) -> int:
    state = acting.reject(
        args.flow,
        args.reopen,
        args.note,
        args.run,
        expect_revision=args.expect_revision,
        gate=args.gate,
        attempt=args.attempt,
        actor=args.actor,
        receipts=args.receipts,
        edits=args.edits,
    )
    print(f"reopened {args.reopen} (revision {state.revision}); continuing", file=sys.stderr)
    return _advance(args.flow, state.run)


def cmd_gc(args: argparse.Namespace) -> int:
    swept = acting.gc(args.flow)
    print(
        f"removed {swept.objects} object(s), {swept.bytes / (1 << 20):.1f} MiB, that no run "
        f"holds; {swept.kept} kept"
    )
    return EXIT["ok"]


def cmd_rerun(args: argparse.Namespace) -> int:
    try:
        state = acting.rerun(
            args.flow,
            args.from_phase,
            args.run,
            expect_revision=args.expect_revision,
            params=_params(args),
            reuse=not args.no_reuse,
            edits=args.edits,
            partition=args.partition,
        )
    except BadParam as exc:
        raise Usage(str(exc)) from None
    stale = [p.id for p in state.phases if p.status == "stale"]
    print(
        f"run {state.run} will re-run from {args.from_phase}"
        + (f"; stale: {', '.join(stale)}" if stale else "")
    )
    advance = Command("advance", flow_text(load(args.flow)), run=state.run)
    print("next: " + command(advance.line()))
    return EXIT["ok"]


def cmd_publish(args: argparse.Namespace) -> int:
    return _publish(args.flow, args.run)


def _publish(flow_ref: str, run_id: str | None) -> int:
    """Publish the run's approved outputs (``publish:``), a line for each; a refusal or a
    failed entry is raised, its one line and next command printed as every error's."""
    for outcome in acting.publish(flow_ref, run_id):
        print(escape(outcome.line()))
    return EXIT["ok"]


def cmd_cancel(args: argparse.Namespace) -> int:
    state, now = acting.cancel(args.flow, args.run, expect_revision=args.expect_revision)
    if now:
        print(f"run {state.run} cancelled")
    else:
        print(f"run {state.run}: cancel requested; the advancing process stops the phase")
    return EXIT["ok"]


def cmd_read(args: argparse.Namespace) -> int:
    """Print a file of the run (escaped) and record a receipt of reading it for the reader."""
    import json
    import os

    run = open_run(args.flow, args.run)
    rel = _in_run(run, args.path)
    got = acting.read(run.flow, rel, run.id, actor=args.actor)
    binary = b"\0" in got.head[:8192]
    text = "" if binary else got.head.decode("utf-8", errors="replace")
    truncated = binary or len(got.head) < got.size
    if args.json:
        print(json.dumps({
            "path": args.path, "receipt": got.receipt, "sha256": got.sha256, "bytes": got.size,
            "binary": binary, "truncated": truncated, "text": escape(text),
        }, indent=1))  # fmt: skip
        return EXIT["ok"]
    sys.stdout.write(escape(text) if text.endswith("\n") else escape(text) + os.linesep)
    more = f"; shown: the first {len(got.head)} bytes" if truncated else ""
    print(f"receipt: {got.receipt} ({args.path}, {got.size} bytes{more})", file=sys.stderr)
    return EXIT["ok"]


def _in_run(run: RunHandle, path: str) -> str:
    """``path`` (as the route names it: relative to the current folder, or an output's name)
    relative to the run's folder; Usage when it is not a file of the run."""
    import os

    root = os.path.abspath(run.root)
    for candidate in (os.path.abspath(path), os.path.abspath(run.paths.out(path))):
        rel = os.path.relpath(candidate, root)
        if rel != "." and not rel.startswith(".."):
            return Path(rel).as_posix()
    raise Usage(
        f"{path} is not a file of run {run.id}: name one below {shown(run.root)}/ or an "
        f"output ({Command('status', flow_text(run.flow), run=run.id).line()} lists route.read)"
    )
