"""One phase, in the seven steps of DESIGN.md §5.

Anything that goes wrong fails the phase, and the failure is in run.json and events.jsonl
before the exception leaves: a half-done phase never writes a confident artifact.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from sandbox import Kernel, Sandbox

from ..definition import digests as definition
from ..definition import kinds
from ..definition.sandbox_config import MAX_DISK, MIN_COLLECT
from ..model.events import FilesCollected, WorkspaceRecorded
from ..model.flow import Phase
from ..model.forms import params_for
from ..model.hints import with_hint
from ..model.state import STOPPED
from ..model.transitions import Fail, Finish, Reuse, Start, Wait
from ..store import live, snapshot
from ..store.handle import RunHandle
from ..store.intact import ObjectTampered
from ..store.objects import RunStore
from ..store.record import Record
from . import checks, collect, retry
from . import reuse as other_runs
from .context import PhaseContext, PhaseError
from .handout import Handout
from .inputs import base_state, settle
from .options import DEFAULT, RunOptions

log = logging.getLogger("praxis")
MAX_ERROR = 4000  # characters of an error message kept in run.json, events and the record


def run_phase(
    run: RunHandle,
    phase: Phase,
    sandbox: Sandbox,
    options: RunOptions = DEFAULT,
    *,
    workspace: snapshot.Workspace | None = None,
) -> bool:
    """Run ``phase`` with the advance's ``options``; True when it is done (or reused), False
    when it failed (and is recorded so). ``workspace`` is what the sandbox's workspace holds
    (kept across phases)."""
    ws = workspace or snapshot.Workspace(sandbox, RunStore(run.paths))
    tampered: ObjectTampered | None = None  # what restoring the phase would have handed on
    try:
        if options.reuse and reused(run, phase, sandbox, ws):
            return True
    except ObjectTampered as exc:
        tampered = exc
    previous = run.state.phase(phase.id).attempt
    record = Record()
    started = run.clock()
    mark_running(run, phase, previous, sandbox)
    attempt = run.state.phase(phase.id).attempt
    record.metadata.update(_metadata(run, phase, attempt, started))
    handout: Handout | None = None
    digests: dict[str, str] = {}  # the attempt's, once recorded: a failure names them
    try:
        if tampered is not None:
            raise tampered  # the phase fails naming the object; its code never runs on it
        sandbox.quiesce()  # nothing of an earlier phase runs from here on
        state = run.state.phase(phase.id)
        handout = Handout(
            sandbox, params_for(run.state, phase.id), state.note, timeout_of(run, phase)
        )
        pre, digests = prepare(run, phase, sandbox, ws, base_state(run, phase, ws))
        execute(run, phase, sandbox, handout, record, options)
        handout.close()  # the kernel is shut down
        sandbox.quiesce()  # nothing of the phase runs while the host reads what it wrote
        t0 = run.clock()
        post = ws.snapshot(max_bytes=collect_limit(run))
        _recorded(run, phase, attempt, "post", post, ws, t0)
        outputs = collect.route(run.paths, phase, pre, post, ws.store, run.paths.staging)
        scratch = _scratch(pre, post, outputs)
        run.emit(FilesCollected(phase=phase.id, outputs=sorted(outputs), scratch=scratch))
        collect.check_outputs(run.paths, phase)
        checks.after_phase(run, phase, sandbox)  # flow.yaml checks: of the declared tables
        sandbox.quiesce()  # a check's kernel too: nothing runs once the phase is done
        ws.save(run.paths.snapshot(phase.id, attempt, "post"), post)
        finish(run, phase, started, record, outputs, digests)
        if isinstance(ws.store, RunStore):
            other_runs.remember(run, phase, ws.store, pre, post, outputs)
        return True
    except Exception as exc:  # any error of the phase's, of its files or of the sandbox
        cancelled = run.paths.cancel_request.exists()  # the interrupt came from `praxis cancel`
        error = STOPPED if cancelled else _message(exc, sandbox)
        cause = None if cancelled else retry.cause_of(exc)
        if handout is not None:
            handout.close()
        error = retry.spent(run, phase, cause, _stopped(sandbox, error))
        fail(run, phase, started, record, error, digests, cause)
        return False
    except BaseException:
        fail(run, phase, started, record, STOPPED)
        if handout is not None:
            handout.close()
        sandbox.quiesce()  # a sweep that fails now is raised, chained to the interrupt
        raise
    finally:
        if handout is not None:
            handout.close()
        shutil.rmtree(run.paths.staging, ignore_errors=True)


def _scratch(pre: snapshot.Manifest, post: snapshot.Manifest, outputs: dict[str, str]) -> list[str]:
    return sorted(
        n
        for n, item in post.items()
        if n not in outputs
        and not snapshot.is_folder(n)
        and (n not in pre or pre[n].sha256 != item.sha256)
    )


def _stopped(sandbox: Sandbox, error: str) -> str:
    """``error``, the failure of a phase, once nothing of the phase runs: a sweep that cannot
    stop its processes (or remove what they left) is never swallowed, it joins the error."""
    try:
        sandbox.quiesce()
    except Exception as exc:
        swept = _message(exc, sandbox)
        return error if swept in error else f"{error}; and {swept}"
    return error


def mark_running(run: RunHandle, phase: Phase, previous: int, sandbox: Sandbox) -> None:
    """Step 1: keep the previous attempt's files, mark the phase (and the run) running."""
    if previous:
        collect.archive_attempt(run.paths, phase, previous)
    info = sandbox.describe()
    run.change(
        Start(
            phase=phase.id,
            pid=os.getpid(),
            backend=str(info.get("backend")),
            isolated=bool(info.get("isolated")),
        )
    )


def prepare(
    run: RunHandle,
    phase: Phase,
    sandbox: Sandbox,
    ws: snapshot.Workspace,
    base: snapshot.Manifest | None,
) -> tuple[snapshot.Manifest, dict[str, str]]:
    """Steps 2-3: the workspace as the phase before left it, this phase's inputs uploaded;
    recorded as the attempt's pre-state (manifest and digests)."""
    t0 = run.clock()
    pre = settle(run, phase, sandbox, ws, base)
    attempt = run.state.phase(phase.id).attempt
    _recorded(run, phase, attempt, "pre", pre, ws, t0)
    digests = {"pre": snapshot.digest(pre)}
    digests |= definition.digests_of(run.flow, phase, params_for(run.state, phase.id))
    ws.save(run.paths.snapshot(phase.id, attempt), pre, **digests)
    return pre, digests


def collect_limit(run: RunHandle) -> int:
    """Bytes of new files one phase may leave: flow.yaml sandbox.collect, else 1 GiB."""

    value = run.flow.sandbox.collect
    limit = value or snapshot.MAX_BYTES
    if not MIN_COLLECT <= limit <= MAX_DISK:  # `praxis check` refuses it too
        raise PhaseError(
            f"sandbox.collect is {value!r} bytes, outside 1m to 16t; set it within (e.g. 4g)"
        )
    return limit


def _recorded(
    run: RunHandle,
    phase: Phase,
    attempt: int,
    which: str,
    manifest: snapshot.Manifest,
    ws: snapshot.Workspace,
    t0: float,
) -> None:
    files, size = ws.stored
    run.emit(
        WorkspaceRecorded(
            phase=phase.id,
            attempt=attempt,
            which=which,
            files=len(manifest),
            stored=files,
            stored_bytes=size,
            seconds=run.clock() - t0,
        )
    )


def reused(run: RunHandle, phase: Phase, sandbox: Sandbox, ws: snapshot.Workspace) -> bool:
    """Whether the phase is restored from a done attempt rather than run: its own last one
    (early cutoff), else one of any run of the flow with the same reuse key."""
    if not other_runs.applies(phase):
        return False
    if reusable(run, phase) and try_reuse(run, phase, sandbox, ws):
        return True
    store = ws.store
    if not isinstance(store, RunStore) or not other_runs.from_other_runs(run, phase):
        return False
    return other_runs.try_other_runs(run, phase, sandbox, ws, store)


def reusable(run: RunHandle, phase: Phase) -> bool:
    p = run.state.phase(phase.id)
    return p.status == "stale" and kinds.get(phase.kind).reusable and bool(p.digests)


def try_reuse(run: RunHandle, phase: Phase, sandbox: Sandbox, ws: snapshot.Workspace) -> bool:
    """Early cutoff: a stale phase whose inputs and definition are what its last done attempt
    had is not run; its outputs, scratch and record stay, the workspace is as it left it."""
    p = run.state.phase(phase.id)
    try:
        post = ws.load(run.paths.snapshot(phase.id, p.attempt, "post"))
        sandbox.quiesce()
        pre = settle(run, phase, sandbox, ws, base_state(run, phase, ws))
        ws.settled = (phase.id, pre)  # if it runs after all, it starts from this
        same = (
            post is not None
            and snapshot.digest(pre) == p.digests.get("pre")
            and p.digests.get("definition")
            == definition.digest_of(run.flow, phase, params_for(run.state, phase.id))
            and collect.hash_outputs(run.paths, phase) == p.hashes
        )
        if not same or post is None:
            return False
        ws.settled = None
        ws.restore(post)
    except Exception:  # whatever failed here fails the phase for real when it runs
        log.debug("phase %s cannot be reused", phase.id, exc_info=True)
        return False
    run.change(Reuse(phase=phase.id))
    return True


def execute(
    run: RunHandle,
    phase: Phase,
    sandbox: Sandbox,
    kernel: Kernel | Handout,
    record: Record,
    options: RunOptions,
) -> None:
    """Step 4: hand the phase to the executor of its kind, in a fresh kernel (or the one
    ``kernel``, a hand-out, gives once it has it: what needs no kernel is ready before)."""
    run.paths.staging.mkdir(parents=True, exist_ok=True)
    context = partial(
        PhaseContext,
        flow=run.flow,
        phase=phase,
        run_id=run.id,
        attempt=run.state.phase(phase.id).attempt,
        run_dir=run.root,
        sandbox=sandbox,
        timeout=timeout_of(run, phase),
        emit=run.emit,
        record=record,
        staging=run.paths.staging,
        note=run.state.phase(phase.id).note,
        params=params_for(run.state, phase.id),
        on_message=options.on_message,
        live=live.writer(run.root, phase.id, options.on_message),
        waiting=lambda what: _set_waiting(run, phase, what),
        given=options.given_to(phase.kind),
    )
    run_kind = kinds.get(phase.kind).run
    with _CancelWatch(run.paths.cancel_request) as watch:
        if isinstance(kernel, Handout):
            kernel = kernel.kernel()  # params and note are set in it
        watch.kernel = kernel
        ctx = context(kernel=kernel)
        record_params(ctx)
        run_kind(ctx)


def record_params(ctx: PhaseContext) -> None:
    """The record's metadata shows the ``params`` and ``note`` the kernel was given (the
    hand-out set them before any of the phase's code runs)."""
    ctx.record.metadata["params"] = dict(ctx.params)
    ctx.record.metadata["note"] = ctx.note


def timeout_of(run: RunHandle, phase: Phase) -> float:
    """Seconds the phase's code may run: the phase's own timeout, else the flow's."""
    return float(phase.timeout or run.flow.sandbox.timeout)


def _set_waiting(run: RunHandle, phase: Phase, what: str | None) -> None:
    run.change(Wait(phase=phase.id, what=what))


def finish(
    run: RunHandle,
    phase: Phase,
    started: float,
    record: Record,
    hashes: dict[str, str],
    digests: dict[str, str],
) -> None:
    """Step 7: record hashes, mark later done phases stale, write the record and run.json."""
    _save_record(run, phase, record, "done")
    seconds = run.clock() - started
    run.change(Finish(phase=phase.id, hashes=hashes, digests=digests, seconds=seconds))


def fail(
    run: RunHandle,
    phase: Phase,
    started: float,
    record: Record,
    error: str,
    digests: dict[str, str] | None = None,
    cause: str | None = None,
) -> None:
    record.error(error)
    try:
        _save_record(run, phase, record, "failed")
    finally:
        seconds = run.clock() - started
        failed = Fail(phase=phase.id, error=error, digests=digests or {}, seconds=seconds)
        run.change(replace(failed, cause=cause))


def _save_record(run: RunHandle, phase: Phase, record: Record, status: str) -> None:
    record.metadata["status"] = status
    record.metadata["ended"] = run.clock()
    record.save(run.paths.record(phase.id))


def _metadata(run: RunHandle, phase: Phase, attempt: int, started: float) -> dict[str, Any]:
    return {
        "flow": run.flow.name,
        "run": run.id,
        "phase": phase.id,
        "kind": phase.kind,
        "attempt": attempt,
        "started": started,
        "backend": run.state.backend,
        "isolated": run.state.isolated,
    }


def _message(exc: Exception, sandbox: Sandbox) -> str:
    """The error's own words (with its type where they do not say it), bounded; a full disk
    names the workspace's quota."""
    text = str(exc) or type(exc).__name__
    name = type(exc).__name__
    if not isinstance(exc, PhaseError) and name != "ExecTimeout" and name not in text:
        text = f"{name}: {text}"
    if "No space left on device" in text:
        quota = sandbox.describe().get("disk")
        if quota:
            text += f" (the workspace's disk quota is {quota >> 20} MiB: sandbox.disk)"
    if len(text) > MAX_ERROR:
        text = text[:MAX_ERROR] + f" … [{len(text) - MAX_ERROR} characters cut]"
    return with_hint(text, isolated=sandbox.isolated)


class _CancelWatch:
    """While code runs, interrupt the kernel when `praxis cancel` leaves a request file.
    Started before the kernel is there (``kernel`` is set once it is)."""

    def __init__(self, request: Path) -> None:
        self.request = request
        self.kernel: Kernel | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(0.5):
            kernel = self.kernel
            if kernel is not None and self.request.exists():
                kernel.interrupt()
                return

    def __enter__(self) -> _CancelWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
