"""The entry points that change runs: begin, advance, approve, reject, rerun, cancel.

``advance`` is the only one that runs phases. Every entry point that changes a run takes
that run's lock (``handle.held``: a caller meeting an advancing holder gets ``Busy`` naming
it at once; one meeting a brief holder, a decision or a sandbox closing, waits a moment)
and, where a person looked at the run first, checks ``expect_revision``. Creating and
deleting runs take the Flow's lock, briefly: nothing holds it while a phase runs, so the
runs of one flow advance, and are decided, independently.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox import Sandbox, open_backend
from sandbox.files import fsync_folder, open_nofollow, replace_file

from ...argv import flow_arg
from ...errors import Refused
from ..definition import contract, host_resources, isolation, packages, sandbox_config
from ..definition import digests as definition
from ..definition.digest import sha256_of
from ..model import decisions
from ..model.events import DecisionRefused, EditsCarried, Event, SandboxEnded, SandboxOpened
from ..model.flow import Flow
from ..model.machine import IllegalTransition
from ..model.moves import Transition
from ..model.params import resolve as resolve_params
from ..model.state import RunState
from ..model.transitions import (
    Accept,
    Approve,
    Cancel,
    End,
    Gate,
    Manage,
    Params,
    Pause,
    Recover,
    Reject,
    Rerun,
)
from ..store import snapshot
from ..store.handle import Clock, RunHandle, held
from ..store.killed import report_of
from ..store.layout import (
    RunPaths,
    leftovers,
    list_by_creation,
    lock_path,
    run_paths,
    unlist_run,
    writable,
)
from ..store.lock import ADVANCING, PATIENCE, Busy, Lock
from ..store.objects import RunStore, Swept, sweep
from ..store.upgrade import refuse_old
from . import acks as acks_of
from . import binding, carry, checks, collect, reconcile
from .binding import Unbound as Unbound  # where callers found it
from .context import OnMessage
from .discard import put_back
from .notify import Notifier, tell
from .opening import Opening
from .phase import run_phase
from .reuse import ahead as reuse_ahead
from .reuse import index_dir as reuse_index
from .reuse import prune as prune_reuse

if TYPE_CHECKING:
    from .notify import Notifier

SandboxFactory = Callable[[Flow, RunHandle], Sandbox]


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
    params: dict[str, str] | None = None,
    clock: Clock = time.time,
    on_begun: Callable[[RunHandle], None] | None = None,
    managed: bool = False,
    actor: str | None = None,
    make_sandbox: SandboxFactory | None = None,
    on_message: OnMessage = lambda message: None,
    on_event: Callable[[Event], None] | None = None,
    given: Mapping[str, object] | None = None,
    reuse: bool = True,
    notifier: Notifier | None = None,
) -> RunState:
    """Begin a run and advance it: the run appears with its lock already held by this
    process, so no other advances it first. ``managed``: a person lets an agent decide the
    run's delegatable Gates (recorded before the first phase). The other options are
    ``advance``'s; as there, the run left at a Gate, failed or done is told (``notifier``)
    once the lock is let go."""
    flow = load_flow(flow_ref)
    if managed:
        _person_only(actor, "put a run in managed mode")
    make = default_sandbox if make_sandbox is None else make_sandbox
    if make is default_sandbox:
        isolation.confine(flow.sandbox)  # refused before a run is made
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
        if not (reuse and reuse_index(flow.root).is_dir()):
            opening = Opening(partial(make, flow, handle))  # starts while we go on
        try:
            if managed:
                _set_managed(handle, True, "person")
            if on_begun is not None:
                on_begun(handle)
        except BaseException:
            if opening is not None:
                opening.abandon()
            raise
        state = _advance(
            flow,
            handle.id,
            clock=clock,
            opening=opening,
            lock=locks[0],
            make_sandbox=make,
            on_message=on_message,
            on_event=on_event,
            given=given,
            reuse=reuse,
        )
    finally:
        for lock in locks:
            lock.release()
    tell(RunHandle.open(flow, state.run, clock), notifier or Notifier.from_env())
    return state


def default_sandbox(flow: Flow, run: RunHandle, *, chosen: bool = False) -> Sandbox:
    """The sandbox flow.yaml's ``sandbox:`` names, as the person allowed it (isolation.py);
    ``chosen``: the caller, not the flow, named the backend (``praxis.advance(sandbox=)``)."""

    settings = flow.sandbox
    backend = isolation.backend_of(settings) if chosen else isolation.confine(settings)
    options = sandbox_config.opening(settings, backend, flow.root)
    options = packages.image_options(flow, backend, options)  # the image of the flow's packages
    box = open_backend(backend, options, workspace=run.paths.workspace, name=run.id)
    box.watch_report = run.paths.watchdog  # if this process dies first (recover reads it)
    return box


def advance(
    flow_ref: Flow | str | Path,
    run_id: str | None = None,
    *,
    clock: Clock = time.time,
    make_sandbox: SandboxFactory | None = None,
    on_message: OnMessage = lambda message: None,
    on_event: Callable[[Event], None] | None = None,
    given: Mapping[str, object] | None = None,
    reuse: bool = True,
    opening: Opening | None = None,
    notifier: Notifier | None = None,
    expect_revision: int | None = None,
) -> RunState:
    """Run phases until a Gate, a failure, the end, or a cancel. Returns the state reached.
    Holds the run's lock throughout (another advance of the run gets Busy at once);
    ``expect_revision``: refused, nothing changed, when the run is no longer at it.

    ``make_sandbox`` (``(flow, run) -> Sandbox``; None: ``default_sandbox``), ``on_message``
    (texts for a person), ``on_event`` (each ``Event`` as it is recorded), ``given`` (what
    the phases of a kind are handed, by kind: an agent's model and approver, opaque here),
    ``reuse`` (False: run stale phases even when nothing they depend on changed),
    ``opening`` (a sandbox opened ahead: ``praxis serve``), ``notifier`` (default from the
    environment). Once the lock is let go, a run left at a Gate, failed or done is told to
    the profile's targets flow.yaml's ``notify:`` names and to the person's command; a
    notifier's failure (a target the profile lacks included) is recorded, never raised.
    """
    flow = load_flow(flow_ref)
    ahead = opening  # this call owns it: _advance uses it or closes it, else it is abandoned
    try:
        with held(flow, run_id, ADVANCING) as lock:
            ahead = None
            before = RunHandle.open(flow, lock.run, clock).state.revision
            state = _advance(
                flow,
                lock.run,
                clock=clock,
                lock=lock,
                make_sandbox=default_sandbox if make_sandbox is None else make_sandbox,
                on_message=on_message,
                on_event=on_event,
                given=given,
                reuse=reuse,
                opening=opening,
                expect_revision=expect_revision,
            )
    except BaseException:
        if ahead is not None:  # Busy, NoRun: never ran, so it must not outlive this call
            ahead.abandon()
        raise
    if state.revision != before:  # it moved: to a Gate, a failure or the end, it is told
        tell(RunHandle.open(flow, state.run, clock), notifier or Notifier.from_env())
    return state


def _advance(
    flow: Flow,
    run_id: str | None,
    *,
    make_sandbox: SandboxFactory = default_sandbox,
    on_message: OnMessage = lambda message: None,
    on_event: Callable[[Event], None] | None = None,
    clock: Clock = time.time,
    given: Mapping[str, object] | None = None,
    reuse: bool = True,
    opening: Opening | None = None,
    lock: Lock | None = None,
    expect_revision: int | None = None,
) -> RunState:
    try:
        if make_sandbox is default_sandbox:
            isolation.confine(flow.sandbox)  # refused before anything of the run changes
        run = RunHandle.open(flow, run_id, clock)
        refuse_old(run.paths)  # a run from before the flow's store: praxis upgrade, once
        run.catch_up()  # the events of a change a process that died did not append
        _check_revision(run, expect_revision)  # before recover: what the caller saw
        if on_event is not None:
            run.listeners.append(on_event)
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
        if reuse and opening is None and reuse_ahead(run, store):
            if run.paths.cancel_request.exists():
                _do_cancel(run)
                return run.state
            if run.state.next_phase is None:
                run.change(End())  # every phase left was settled work: no sandbox needed
                return run.state
        opening = opening or Opening(partial(make_sandbox, flow, run))
    except BaseException:
        if opening is not None:
            opening.abandon()
        raise
    try:
        box = opening.box()  # SandboxUnavailable leaves run.json as it was: nothing ran
        try:
            _note_sandbox(run, box)
            ws = snapshot.Workspace(box, store, known=_known(run))
            _loop(run, box, ws, on_message, given, reuse)
        finally:
            if lock is not None:
                lock.now("closing")  # no phase runs any more: a decision waits, not refused
            box.close()
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


def _runnable(state: RunState) -> bool:
    return state.status == "paused" and state.waiting is None


def _note_sandbox(run: RunHandle, box: Sandbox) -> None:
    """The sandbox this advance runs its phases in (each attempt records its own backend)."""
    info = box.describe()
    backend, isolated = str(info.get("backend")), bool(info.get("isolated"))
    run.emit(SandboxOpened(backend=backend, isolated=isolated, detail=info))


def _loop(
    run: RunHandle,
    box: Sandbox,
    ws: snapshot.Workspace,
    on_message: OnMessage,
    given: Mapping[str, object] | None,
    reuse: bool,
) -> None:
    while True:
        if run.paths.cancel_request.exists():
            _do_cancel(run)
            return
        nxt = run.state.next_phase
        if nxt is None:
            run.change(End())
            return
        phase = run.flow.phase(nxt.id)
        ok = run_phase(
            run,
            phase,
            box,
            on_message=on_message,
            given=given,
            workspace=ws,
            reuse=reuse,
        )
        if run.paths.cancel_request.exists():
            _do_cancel(run)
            return
        if not ok:
            return
        if phase.gated:
            carried = carry.carry_over(run, phase) if run.state.phase(phase.id).carry else []
            run.change(Gate(phase=phase.id, writable=list(phase.outputs)))
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


class EditsAtRisk(Refused):
    """Raised for a re-run or reopen that would replace outputs edited at a Gate, without a
    choice (``--keep-edits`` or ``--discard-edits``), or with ``--keep-edits`` for an output
    whose edit cannot be re-applied; ``command`` is the one to try."""

    def __init__(self, message: str, command: str, edited: list[str]) -> None:
        super().__init__(message)
        self.command = command
        self.edited = edited

    def next(self, flow: str) -> str:
        return self.command


EDIT_CHOICES = ("keep", "discard")


def _choose_edits(
    run: RunHandle, phase: str, edits: str | None, command: str
) -> tuple[str, list[str]]:
    """The choice for the Gate edits going back to ``phase`` may replace, and those outputs;
    EditsAtRisk when there are some and no choice (or one that cannot be kept)."""
    found = carry.at_risk(run.state, phase)
    if not found:
        return "", []
    names = [n for n, _ in found]
    listed = ", ".join(f"{n} (at the Gate after {p})" for n, p in found)
    if edits not in EDIT_CHOICES:
        raise EditsAtRisk(
            f"run {run.id}: going back to {phase} would replace {listed}, edited by a "
            "reviewer: choose --keep-edits (re-applied to the new output by row key) or "
            "--discard-edits (each put back as its phase wrote it; the edits stay in edits/)",
            f"{command} --keep-edits",
            names,
        )
    cannot = carry.keyless(run.flow, found) if edits == "keep" else []
    if cannot:
        raise EditsAtRisk(
            f"run {run.id}: --keep-edits cannot re-apply the edit of {', '.join(cannot)}: it "
            "is not a table with a row key (declare key: [columns] under its checks: in "
            "flow.yaml), or choose --discard-edits",
            f"{command} --discard-edits",
            names,
        )
    twice = carry.repeated_columns(run, found) if edits == "keep" else []
    if twice:
        raise EditsAtRisk(
            f"run {run.id}: --keep-edits cannot re-apply the edit of {carry.refusal(*twice[0])}",
            f"{command} --discard-edits",
            names,
        )
    return str(edits), names


def _command(run: RunHandle, *words: str) -> str:

    return " ".join(["praxis", words[0], flow_arg(run.flow), "--run", run.id, *words[1:]])


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


@contextmanager
def _opened(
    flow_ref: Flow | str | Path,
    run_id: str | None,
    expect_revision: int | None,
    clock: Clock,
    *,
    bound: tuple[str, str | None, int | None] | None = None,
) -> Iterator[RunHandle]:
    """The run, under its lock, reconciled with its files (hand edits recorded), after
    checking the revision the caller saw. ``bound`` (decision, gate, attempt): a decision
    must name the revision, the Gate or the attempt it was made on."""
    flow = load_flow(flow_ref)
    with held(flow, run_id, "changing") as lock:
        run = RunHandle.open(flow, lock.run, clock)
        refuse_old(run.paths)  # a run from before the flow's store: praxis upgrade, once
        run.catch_up()  # the events of a change a process that died did not append
        reconcile.reconcile(run)
        if bound is not None and expect_revision is None and bound[1:] == (None, None):
            binding.unbound(run, bound[0])
        _check_revision(run, expect_revision)
        yield run


def read(
    flow_ref: Flow | str | Path,
    path: str,
    run_id: str | None = None,
    *,
    actor: str | None = None,
    limit: int = acks_of.READ_BYTES,
    clock: Clock = time.time,
) -> acks_of.Read:
    """Read the run's file ``path`` (relative to the run's folder) and record a receipt of
    it for ``actor`` (``acks``); hand edits are recorded first, so the receipt is of the
    file as the run now has it."""
    who = decisions.actor_of(actor)
    with _opened(flow_ref, run_id, None, clock) as run:
        return acks_of.read(run, path, who, limit=limit)


def _authorize(
    run: RunHandle, actor: str, decision: str, gate: str, receipts: list[str] | None
) -> list[dict[str, str]]:
    """Refused (and recorded) when ``actor`` may not take ``decision`` at this Gate, or
    passes no receipt of a file to read as it is; the receipts it passed."""
    phase = run.flow.phase(gate)
    failing = checks.gate_failures(run, reconcile.phase_version(run, gate))

    why = decisions.refusal(
        actor,
        decision,
        phase,
        managed=run.state.managed,
        failing=len(failing),
        run=run.id,
        flow=flow_arg(run.flow),
    )
    if why is None:
        try:
            return acks_of.verify(run, actor, receipts)
        except acks_of.NotAcknowledged as exc:
            run.emit(DecisionRefused(phase=gate, decision=decision, actor=actor, reason=str(exc)))
            raise
    if failing:
        why += ": " + checks.summary(failing)
    run.emit(DecisionRefused(phase=gate, decision=decision, actor=actor, reason=why))
    raise Refused(f"run {run.id}: {actor} may not {decision}: {why}", revision=run.state.revision)


def _person_only(actor: str | None, what: str) -> str:
    who = decisions.actor_of(actor)
    if who != "person":
        raise Refused(f"only a person may {what}")
    return who


def _set_managed(run: RunHandle, granted: bool, actor: str) -> None:
    run.change(Manage(managed=granted, actor=actor))


def manage(
    flow_ref: Flow | str | Path,
    run_id: str | None = None,
    *,
    grant: bool = True,
    actor: str | None = None,
    expect_revision: int | None = None,
    clock: Clock = time.time,
) -> RunState:
    """A person lets an agent decide the run's delegatable Gates (``grant=False`` takes it
    back). Recorded as a ``managed_mode`` event; an agent may not grant it."""
    who = _person_only(actor, "grant or take back managed mode")
    with _opened(flow_ref, run_id, expect_revision, clock) as run:
        _set_managed(run, grant, who)
        return run.state


def accept(
    flow_ref: Flow | str | Path,
    name: str,
    run_id: str | None = None,
    *,
    actor: str | None = None,
    expect_revision: int | None = None,
    clock: Clock = time.time,
) -> RunState:
    """A person accepts output ``name``, changed outside praxis, as its phase's (recorded:
    ``output_accepted``, the new version kept in the content store)."""
    who = _person_only(actor, "accept an output changed outside praxis")
    with _opened(flow_ref, run_id, expect_revision, clock) as run:
        found = [c for c in reconcile.changed_outputs(run) if c.name == name]
        if not found:
            raise Refused(f"run {run.id}: output {name} is as its phase recorded it")
        c = found[0]
        if not c.now:
            raise Refused(f"run {run.id}: output {name} is missing: re-run {c.phase}")
        sha, _ = RunStore(run.paths).add_file(run.paths.out(name))
        return _change(run, Accept(phase=c.phase, output=name, sha256=sha, actor=who))


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


def approve(
    flow_ref: Flow | str | Path,
    run_id: str | None = None,
    *,
    expect_revision: int | None = None,
    gate: str | None = None,
    attempt: int | None = None,
    actor: str | None = None,
    receipts: list[str] | None = None,
    clock: Clock = time.time,
) -> RunState:
    """Approve the Gate the run waits at; bound to ``expect_revision``, ``gate`` or
    ``attempt`` (else Unbound), refused for another Gate or attempt (``binding``). Hand edits
    are recorded first; an agent needs a delegatable Gate and managed mode, and passes a
    receipt of each file to read as it is (``receipts``); no one approves while a
    check fails, nor output a changed definition no longer makes. Does not advance."""
    who = decisions.actor_of(actor)
    bound = ("approve", gate, attempt)
    with _opened(flow_ref, run_id, expect_revision, clock, bound=bound) as run:
        at = binding.at_gate(
            run, "approve", gate=gate, attempt=attempt, expect_revision=expect_revision
        )
        check_definition(run)
        binding.refuse_changed(run, "approve", at)
        acked = _authorize(run, who, "approve", at, receipts)
        return _change(run, Approve(actor=who, acked=acked))


def edit(
    flow_ref: Flow | str | Path,
    name: str,
    data: bytes | Path,
    run_id: str | None = None,
    *,
    expect_revision: int | None = None,
    by: str = "reviewer",
    actor: str | None = None,
    diff: dict[str, Any] | None = None,
    clock: Clock = time.time,
) -> RunState:
    """Replace a writable artifact at the Gate (atomically) and record the edit with its
    diff (edits/<phase>/<attempt>.json). ``data`` is the new bytes, or a file already
    written beside the artifact's folder (same file system) that is moved into its place;
    ``diff``, when the caller knows it (a cell save), is recorded instead of comparing the
    two versions again."""
    who = decisions.actor_of(actor)
    with _opened(flow_ref, run_id, expect_revision, clock) as run:
        path = writable(run.flow, run.state, run.paths, name)
        old = run.state.phase(str(run.state.gate)).hashes.get(name, "")
        _write_atomic(path, data)
        reconcile.record_edit(run, name, old, by=by, actor=who, diff=diff)
        return run.state


def _write_atomic(path: Path, data: bytes | Path) -> None:
    """Replace ``path`` atomically; the edited file keeps its mode (a new one gets 0644)."""
    try:
        mode = os.stat(path, follow_symlinks=False).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    if isinstance(data, Path):
        fd = open_nofollow(data)
        try:
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(data, path)
        fsync_folder(path.parent)
        return
    replace_file(path, data, mode=mode)


def reject(
    flow_ref: Flow | str | Path,
    reopen: str,
    note: str,
    run_id: str | None = None,
    *,
    expect_revision: int | None = None,
    gate: str | None = None,
    attempt: int | None = None,
    actor: str | None = None,
    receipts: list[str] | None = None,
    edits: str | None = None,
    clock: Clock = time.time,
) -> RunState:
    """Reject at the Gate: ``reopen`` (the gated phase or an earlier) runs again with the note.
    Bound like ``approve``; an agent needs a delegatable Gate, managed mode, passing checks
    and receipts. ``edits`` (keep or discard) is needed when the reopen would
    replace outputs edited at a Gate (else EditsAtRisk)."""
    who = decisions.actor_of(actor)
    bound = ("reject", gate, attempt)
    with _opened(flow_ref, run_id, expect_revision, clock, bound=bound) as run:
        _known_phase(run.flow, reopen)
        at = binding.at_gate(
            run, "reject", gate=gate, attempt=attempt, expect_revision=expect_revision
        )
        acked = _authorize(run, who, "reject", at, receipts)
        command = _command(
            run, "reject", "--gate", at, "--attempt", str(run.state.phase(at).attempt),
            "--reopen", reopen, "--note", "'...'", "--expect-revision", str(run.state.revision),
        )  # fmt: skip
        choice, edited = _choose_edits(run, reopen, edits, command)
        back = put_back(run, Reject(phase=reopen)) if choice == "discard" else []
        _change(
            run,
            Reject(
                phase=reopen, note=note, edits=choice or None, put_back=back,
                actor=who, acked=acked, kept=_kept(run, reopen), edited=edited,
            ),
        )  # fmt: skip
        _archive(run, reopen)
        return run.state


def rerun(
    flow_ref: Flow | str | Path,
    from_phase: str,
    run_id: str | None = None,
    *,
    expect_revision: int | None = None,
    params: dict[str, str] | None = None,
    reuse: bool = True,
    edits: str | None = None,
    clock: Clock = time.time,
) -> RunState:
    """Go back to ``from_phase``: later done phases become stale (pending without ``reuse``:
    they run again whatever changed), the attempt is kept. ``params`` change the run's.
    ``edits`` (keep or discard) is needed when it would replace outputs edited at a Gate."""
    with _opened(flow_ref, run_id, expect_revision, clock) as run:
        recover(run)
        check_definition(run)
        _known_phase(run.flow, from_phase)
        command = _command(
            run, "rerun", "--from", from_phase, "--expect-revision", str(run.state.revision)
        )
        choice, edited = _choose_edits(run, from_phase, edits, command)
        if params:
            base = {**run.flow.params, **run.state.params}
            _change(run, Params(params=resolve_params(base, params)))
        back = put_back(run, Rerun(phase=from_phase)) if choice == "discard" else []
        _change(
            run,
            Rerun(
                phase=from_phase, reuse=reuse, edits=choice or None, put_back=back,
                kept=_kept(run, from_phase), edited=edited,
            ),
        )  # fmt: skip
        _archive(run, from_phase)
        return run.state


def delete_runs(flow: Flow, ids: list[str], *, keep: int | None = None) -> list[str]:
    """Delete runs ``ids`` (and, with ``keep``, all but the newest ``keep``), under the
    Flow's lock and each run's: a run being advanced is never deleted (Busy, and none is).
    Each leaves the listing at once; its files are removed after the locks are let go, then
    the objects of the flow's store that no run holds any more. The ids deleted."""
    locks: list[Lock] = []
    try:
        with flow_lock(flow, "deleting"):
            known = list_by_creation(flow.root)
            for run_id in ids:
                if run_id not in known:
                    raise Refused(f"{flow.name} has no run {run_id!r} (see: praxis runs)")
            doomed = list(ids)
            if keep is not None:
                doomed += [r for r in known[: max(0, len(known) - keep)] if r not in doomed]
            for run_id in doomed:
                paths = run_paths(flow.root, run_id)
                lock = Lock(paths.lock, "deleting", run=run_id, patience=PATIENCE)
                lock.acquire()
                locks.append(lock)
            gone = [unlist_run(run_paths(flow.root, run_id)) for run_id in doomed]
            gone += leftovers(flow.root)  # of deleters and creators that died: nobody's now
    finally:
        for lock in locks:
            lock.release()
    for folder in dict.fromkeys(gone):
        shutil.rmtree(folder, ignore_errors=True)
    gc(flow)  # the objects only they held
    return doomed


def gc(flow_ref: Flow | str | Path) -> Swept:
    """Remove from the flow's store every object no run holds, and what a creator or deleter
    that died left in ``runs/``; safe while other runs of the flow advance (store.py)."""
    flow = load_flow(flow_ref)
    with flow_lock(flow, "deleting"):
        gone = leftovers(flow.root)  # under the Flow's lock: their makers are gone
        for folder in gone:
            shutil.rmtree(folder, ignore_errors=True)
        prune_reuse(flow.root, list_by_creation(flow.root))
    return sweep(flow.root)


def cancel(
    flow_ref: Flow | str | Path,
    run_id: str | None = None,
    *,
    expect_revision: int | None = None,
    clock: Clock = time.time,
) -> tuple[RunState, bool]:
    """Cancel the run; (state, True) if done now, (state, False) if the advancing process will."""
    try:
        with _opened(flow_ref, run_id, expect_revision, clock) as run:
            recover(run)
            _do_cancel(run)
            return run.state, True
    except Busy:
        run = RunHandle.open(load_flow(flow_ref), run_id, clock)
        run.paths.cancel_request.write_text(f"{os.getpid()}\n")
        return run.state, False


def _do_cancel(run: RunHandle) -> None:
    run.paths.cancel_request.unlink(missing_ok=True)
    _change(run, Cancel())


def _known_phase(flow: Flow, phase_id: str) -> None:
    if phase_id not in [p.id for p in flow.phases]:
        names = ", ".join(p.id for p in flow.phases)
        raise Refused(f"{flow.name} has no phase {phase_id!r} (phases: {names})")


def _kept(run: RunHandle, phase_id: str) -> list[str]:
    """The folder going back to ``phase_id`` keeps its last attempt's files in (``_archive``,
    just after the change: a crash between is made good by the phase's next start, which
    archives them there), if it has any."""
    p, paths = run.state.phase(phase_id), run.paths
    outputs = [paths.out(n) for n in run.flow.phase(phase_id).outputs]
    has_files = any(o.is_file() or o.is_symlink() for o in outputs) or any(
        f.exists() for f in (paths.scratch_of(phase_id), paths.record(phase_id))
    )
    if not p.attempt or not has_files:
        return []
    return [str(run.paths.attempt(phase_id, p.attempt).relative_to(run.root))]


def _archive(run: RunHandle, phase_id: str) -> None:
    p = run.state.phase(phase_id)
    if p.attempt:
        collect.archive_attempt(run.paths, run.flow.phase(phase_id), p.attempt)
