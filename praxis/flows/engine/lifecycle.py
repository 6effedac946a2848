"""The run's lifecycle: begin, run, advance (the phase loop), recover.

``advance`` is the only one that runs phases. Every entry point that changes a run takes
that run's lock (``handle.held``: a caller meeting an advancing holder gets ``Busy`` naming
it at once; one meeting a brief holder, a decision or a sandbox closing, waits a moment)
and, where a person looked at the run first, checks ``expect_revision``. Creating and
deleting runs take the Flow's lock, briefly: nothing holds it while a phase runs, so the
runs of one flow advance, and are decided, independently.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from sandbox import Sandbox, open_backend
from sandbox.options import RayOptions

from ...errors import Refused
from ..definition import contract, host_resources, isolation, packages, sandbox_config
from ..definition import digests as definition
from ..definition.digest import sha256_of
from ..model import decisions
from ..model.events import EditsCarried, SandboxEnded, SandboxOpened
from ..model.flow import Flow
from ..model.machine import IllegalTransition
from ..model.moves import Transition
from ..model.params import resolve as resolve_params
from ..model.partition_moves import Backfill
from ..model.state import RunState
from ..model.transitions import Cancel, End, Gate, Manage, Pause, Recover
from ..store import snapshot
from ..store.handle import Clock, RunHandle, held
from ..store.killed import report_of
from ..store.layout import (
    RunPaths,
    leftovers,
    lock_path,
)
from ..store.lock import ADVANCING, PATIENCE, Lock
from ..store.objects import RunStore
from ..store.upgrade import refuse_old
from . import carry, reconcile
from .fanout import check_selection, run_fanout
from .main_box import MainBox
from .notify import Notifier, tell
from .opening import Opening
from .options import DEFAULT, RunOptions, SandboxFactory
from .partition import OpenBox
from .phase import run_phase
from .retry import again
from .reuse import ahead as reuse_ahead
from .reuse import index_dir as reuse_index


def load_flow(flow: Flow | str | Path) -> Flow:
    return flow if isinstance(flow, Flow) else contract.require(Path(flow))


def begin(
    flow_ref: Flow | str | Path,
    *,
    params: dict[str, str] | None = None,
    clock: Clock = time.time,
) -> RunHandle:
    """A new run, paused at its first phase. Created under the Flow's lock (held a moment;
    a flow whose lock stays busy gets Busy and no run). A flow that asks to notify a
    connection, cluster or target the person's profile lacks gets ProfileLacks and no run."""
    flow = load_flow(flow_ref)
    host_resources.require(flow)
    with flow_lock(flow, "creating"):
        return _begin(flow, params, clock)


def flow_lock(flow: Flow, doing: str) -> Lock:
    """The Flow's lock, for a moment's work on its runs (waits for another such moment)."""
    return Lock(lock_path(flow.root), doing, patience=PATIENCE)


def _begin(
    flow: Flow,
    params: dict[str, str] | None,
    clock: Clock,
    staged: Callable[[RunPaths], None] | None = None,
) -> RunHandle:
    typed = resolve_params(flow.params, params or {})
    for left in leftovers(flow.root):  # under the Flow's lock: their makers are gone
        if left.name.startswith(".new-"):
            shutil.rmtree(left, ignore_errors=True)
    return RunHandle.create(
        flow, clock, params=typed, definition=definition.of_flow(flow), staged=staged
    )


def run(
    flow_ref: Flow | str | Path,
    *,
    options: RunOptions = DEFAULT,
    params: dict[str, str] | None = None,
    clock: Clock = time.time,
    on_begun: Callable[[RunHandle], None] | None = None,
    managed: bool = False,
    actor: str | None = None,
    partitions: str | None = None,
) -> RunState:
    """Begin a run and advance it with ``options``: the run appears with its lock already
    held by this process, so no other advances it first. ``managed``: a person lets an agent
    decide the run's delegatable Gates (recorded before the first phase). As for ``advance``,
    the run left at a Gate, failed or done is told once the lock is let go. ``partitions``
    (``a..b`` or ``a,b``): a backfill, the run runs only those partitions of each fan-out
    (refused, no run made, unless each has them)."""
    flow = load_flow(flow_ref)
    if partitions:
        check_selection(flow, partitions)
    if managed:
        _person_only(actor, "put a run in managed mode")
    make = confined(flow, options.make_sandbox or default_sandbox)
    host_resources.require(flow)  # an entry the profile lacks: refused, no run made
    locks: list[Lock] = []

    def take(staging: RunPaths) -> None:
        lock = Lock(staging.lock, ADVANCING, run=staging.id.removeprefix(".new-"))
        lock.acquire()
        locks.append(lock)

    try:
        with flow_lock(flow, "creating"):
            handle = _begin(flow, params, clock, staged=take)
        opening = None  # settled work is restored before a sandbox is asked for, if any
        if not (options.reuse and reuse_index(flow.root).is_dir()) and not _fans_out_next(handle):
            opening = Opening(partial(make, flow, handle))  # starts while we go on
        try:
            if managed:
                _set_managed(handle, True, "person")
            if partitions:
                handle.change(Backfill(only=partitions))
            if on_begun is not None:
                on_begun(handle)
        except BaseException:
            if opening is not None:
                opening.abandon()
            raise
        confined_options = dataclasses.replace(options, make_sandbox=make)
        state = _advance(
            flow, handle.id, confined_options, clock=clock, opening=opening, lock=locks[0]
        )
    finally:
        for lock in locks:
            lock.release()
    tell(RunHandle.open(flow, state.run, clock), options.notifier or Notifier.from_env())
    return state


def default_sandbox(flow: Flow, run: RunHandle, *, chosen: bool = False) -> Sandbox:
    """The sandbox flow.yaml's ``sandbox:`` names, as the person allowed it (isolation.py);
    ``chosen``: the caller, not the flow, named the backend (``praxis.advance(sandbox=)``)."""
    settings = flow.sandbox
    backend = isolation.backend_of(settings) if chosen else isolation.confine(settings)
    return _open(flow, run, backend=backend)


def confined(flow: Flow, make: SandboxFactory) -> SandboxFactory:
    """``make``; for ``default_sandbox``, flow.yaml's backend confined here, once per run or
    advance (``LocalRefused`` before anything of a run is made or changed): the sandbox
    opened later is of that backend, not confined again."""
    if make is not default_sandbox:
        return make
    return partial(_open, backend=isolation.confine(flow.sandbox))


def _open(flow: Flow, run: RunHandle, *, backend: str) -> Sandbox:
    settings = flow.sandbox
    options = sandbox_config.opening(settings, backend, flow.root)
    options = packages.image_options(flow, backend, options)  # the image of the flow's packages
    box = open_backend(backend, options, workspace=run.paths.workspace, name=run.id)
    box.watch_report = run.paths.watchdog  # if this process dies first (recover reads it)
    return box


def partition_sandbox(flow: Flow, run: RunHandle) -> OpenBox:
    """Opens the sandbox of one partition of a fan-out: flow.yaml's backend, as the person
    allowed it, over the partition's own workspace (each its own container or kernels)."""
    backend = isolation.confine(flow.sandbox)
    options = sandbox_config.opening(flow.sandbox, backend, flow.root)
    options = packages.image_options(flow, backend, options)
    if isinstance(options, RayOptions):  # a cluster's: partitions over its nodes
        options = dataclasses.replace(options, spread=True)

    def open_box(workspace: Path, name: str) -> Sandbox:
        return open_backend(backend, options, workspace=workspace, name=name)

    return open_box


def advance(
    flow_ref: Flow | str | Path,
    run_id: str | None = None,
    *,
    options: RunOptions = DEFAULT,
    clock: Clock = time.time,
    opening: Opening | None = None,
    expect_revision: int | None = None,
) -> RunState:
    """Run phases until a Gate, a failure, the end, or a cancel, with ``options`` (what the
    sandbox is, who watches, what phases are given: ``RunOptions``). Returns the state
    reached. Holds the run's lock throughout (another advance of the run gets Busy at once);
    ``expect_revision``: refused, nothing changed, when the run is no longer at it;
    ``opening``: a sandbox opened ahead (``praxis serve``). Once the lock is let go, a run
    left at a Gate, failed or done is told to the profile's targets flow.yaml's ``notify:``
    names and to the person's command; a notifier's failure (a target the profile lacks
    included) is recorded, never raised.
    """
    flow = load_flow(flow_ref)
    ahead = opening  # this call owns it: _advance uses it or closes it, else it is abandoned
    try:
        with held(flow, run_id, ADVANCING) as lock:
            ahead = None
            before = RunHandle.open(flow, lock.run, clock).state.revision
            state = _advance(
                flow, lock.run, options, clock=clock, lock=lock, opening=opening,
                expect_revision=expect_revision,
            )  # fmt: skip
    except BaseException:
        if ahead is not None:  # Busy, NoRun: never ran, so it must not outlive this call
            ahead.abandon()
        raise
    if state.revision != before:  # it moved: to a Gate, a failure or the end, it is told
        tell(RunHandle.open(flow, state.run, clock), options.notifier or Notifier.from_env())
    return state


def _advance(
    flow: Flow,
    run_id: str | None,
    options: RunOptions,
    *,
    clock: Clock = time.time,
    opening: Opening | None = None,
    lock: Lock | None = None,
    expect_revision: int | None = None,
) -> RunState:
    try:
        # refused before anything of the run changes
        make_sandbox = confined(flow, options.make_sandbox or default_sandbox)
        run = RunHandle.open(flow, run_id, clock)
        refuse_old(run.paths)  # a run from before the flow's store: praxis upgrade, once
        run.catch_up()  # the events of a change a process that died did not append
        _check_revision(run, expect_revision)  # before recover: what the caller saw
        if options.on_event is not None:
            run.listeners.append(options.on_event)
        recover(run)
        reconcile.reconcile(run)
        if not _runnable(run.state):
            if opening is not None:
                opening.abandon()
            return run.state
        check_definition(run)
        blocked = reconcile.refuse_changed(run)
        if blocked:
            raise Refused(f"run {run.id}: {blocked}", revision=run.state.revision)
        store = RunStore(run.paths)
        if options.reuse and opening is None and reuse_ahead(run, store):
            if run.paths.cancel_request.exists():
                _do_cancel(run)
                return run.state
            if run.state.next_phase is None:
                run.change(End())  # every phase left was settled work: no sandbox needed
                return run.state
    except BaseException:
        if opening is not None:
            opening.abandon()
        raise
    try:
        # SandboxUnavailable leaves run.json as it was: nothing ran. A fan-out next: the
        # run's sandbox is opened only if a later phase needs it (main_box.py)
        main = MainBox(partial(make_sandbox, flow, run), opening, lazy=_fans_out_next(run),
                       on_open=partial(_note_sandbox, run))  # fmt: skip
        try:
            ws = snapshot.Workspace(main.box, store, known=_known(run))
            _loop(run, main, ws, options)
        finally:
            if lock is not None:
                lock.now("closing")  # no phase runs any more: a decision waits, not refused
            main.box.close()
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: a cancel, recorded before it leaves
        recover(run)
        if run.state.status in ("paused", "failed", "running"):
            _do_cancel(run)
        raise
    except Exception:
        recover(run)  # an unexpected error never leaves the run `running`
        raise
    return run.state


def check_definition(run: RunHandle) -> None:
    """Refuse to go on when flow.yaml's phases are not those the run began with."""
    began = run.state.definition.get("phases")
    now = [p.id for p in run.flow.phases]
    if began is not None and began != now:
        raise Refused(
            f"flow.yaml changed since run {run.id} began: its phases were "
            f"{', '.join(began)}, now {', '.join(now)}; restore flow.yaml, or cancel this run "
            "and start a new one",
            revision=run.state.revision,
        )


def _known(run: RunHandle) -> snapshot.Manifest:
    """What the workspace held when this run last stopped: as the last done phase left it."""
    index = run.state.cursor - 1
    if index < 0:
        return {}
    last = run.state.phases[index]
    return snapshot.load_manifest(run.paths.snapshot(last.id, last.attempt, "post")) or {}


def _fans_out_next(run: RunHandle) -> bool:
    nxt = run.state.next_phase
    return nxt is not None and run.flow.phase(nxt.id).fanout is not None


def _runnable(state: RunState) -> bool:
    return state.status == "paused" and state.waiting is None


def _note_sandbox(run: RunHandle, box: Sandbox) -> None:
    """The sandbox this advance runs its phases in (each attempt records its own backend)."""
    info = box.describe()
    backend, isolated = str(info.get("backend")), bool(info.get("isolated"))
    run.emit(SandboxOpened(backend=backend, isolated=isolated, detail=info))


def _loop(run: RunHandle, main: MainBox, ws: snapshot.Workspace, options: RunOptions) -> None:
    while True:
        if run.paths.cancel_request.exists():
            _do_cancel(run)
            return
        nxt = run.state.next_phase
        if nxt is None:
            run.change(End())
            return
        phase = run.flow.phase(nxt.id)
        if phase.fanout is not None:
            opener = partition_sandbox(run.flow, run)
            box = main.box if main.opened else None
            ok = run_fanout(run, phase, box, ws, opener, options)
        else:
            ok = run_phase(run, phase, main.need(), options, workspace=ws)
        if run.paths.cancel_request.exists():
            _do_cancel(run)
            return
        if not ok:
            if again(run, phase, options.sleep):  # flow.yaml retries: recorded, waited for
                continue
            return
        if phase.gated:
            carried = carry.carry_over(run, phase) if run.state.phase(phase.id).carry else []
            writable = [] if phase.fanout else list(phase.outputs)  # a fan-out's: reviewed
            run.change(Gate(phase=phase.id, writable=writable))
            for name, outcome in carried:
                _record_carried(run, phase.id, name, outcome)
            return


def _record_carried(run: RunHandle, phase: str, name: str, outcome: carry.Outcome) -> None:
    """An edit kept across a re-run, re-applied at the Gate: recorded as an edit by
    ``carried`` (its diff beside the attempt), and what did and did not apply."""
    p = run.state.phase(phase)
    old = p.hashes.get(name, "")
    path = run.paths.out(name)
    if outcome.applied and path.is_file() and sha256_of(path) != old:
        reconcile.record_edit(run, name, old, by="carried", actor="person")
    run.emit(
        EditsCarried(
            phase=phase,
            attempt=p.attempt,
            name=name,
            applied=outcome.applied,
            skipped=outcome.skipped,
        )
    )


def recover(run: RunHandle) -> None:
    """A phase left running by a process that died becomes failed; a run it left running
    between two phases is paused before the next (we hold the lock). What that process's
    sandbox watchdog ended is recorded (``sandbox_ended``)."""
    ended = report_of(run.paths.watchdog)
    if ended is not None:
        run.catch_up()
        run.emit(SandboxEnded(**ended))
        run.paths.watchdog.unlink(missing_ok=True)
    for p in run.state.phases:
        if p.status == "running":
            run.change(Recover(phase=p.id))
    if run.state.status == "running":
        run.change(Pause())


def _check_revision(run: RunHandle, expect: int | None) -> None:
    if expect is not None and expect != run.state.revision:
        raise Refused(
            f"run {run.id} is at revision {run.state.revision}, not {expect}: "
            "it changed since you looked",
            revision=run.state.revision,
        )


def _change(run: RunHandle, transition: Transition) -> RunState:
    try:
        return run.change(transition)
    except IllegalTransition as exc:
        raise Refused(f"run {run.id}: {exc}", revision=run.state.revision) from None


def _do_cancel(run: RunHandle) -> None:
    run.paths.cancel_request.unlink(missing_ok=True)
    _change(run, Cancel())


def _person_only(actor: str | None, what: str) -> str:
    who = decisions.actor_of(actor)
    if decisions.kind_of(who) != "person":
        raise Refused(f"only a person may {what}")
    return who


def _set_managed(run: RunHandle, granted: bool, actor: str) -> None:
    run.change(Manage(managed=granted, actor=actor))
