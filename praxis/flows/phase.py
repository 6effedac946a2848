"""One phase, in the seven steps of DESIGN.md §5.

Anything that goes wrong fails the phase, and the failure is in run.json and events.jsonl
before the exception leaves: a half-done phase never writes a confident artifact.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

from sandbox import Kernel, Sandbox, SandboxError
from sandbox.paths import confined

from . import collect, live
from .context import Approver, PhaseContext, PhaseError, PhaseOutcome
from .events import (
    FilesCollected,
    InputsUploaded,
    PhaseDone,
    PhaseFailed,
    PhasesStale,
    PhaseStarted,
)
from .handle import RunHandle
from .model import Phase
from .record import Record
from .state import STOPPED

Progress = Callable[[str], None]


def run_phase(
    run: RunHandle,
    phase: Phase,
    sandbox: Sandbox,
    *,
    approver: Approver | None = None,
    progress: Progress = lambda message: None,
    extra: dict | None = None,
) -> bool:
    """Run ``phase``; True when it is done, False when it failed (and is recorded so)."""
    previous = run.state.phase(phase.id).attempt
    record = Record()
    started = run.clock()
    mark_running(run, phase, previous)
    attempt = run.state.phase(phase.id).attempt
    record.metadata.update(_metadata(run, phase, attempt, started))
    kernel: Kernel | None = None
    try:
        gather(run, phase, sandbox)
        before = sandbox.listing()
        kernel = sandbox.kernel()
        outcome = execute(run, phase, sandbox, kernel, record, approver, progress, extra)
        outputs, scratch = collect.collect(sandbox, before, run.paths.staging, run.paths, phase)
        run.emit(FilesCollected(phase=phase.id, outputs=outputs, scratch=scratch))
        collect.check_outputs(run.paths, phase)
        finish(run, phase, started, record, outcome)
        return True
    except (PhaseError, SandboxError, OSError) as exc:
        fail(run, phase, started, record, _message(exc))
        return False
    except BaseException:
        fail(run, phase, started, record, STOPPED)
        raise
    finally:
        if kernel is not None:
            kernel.shutdown()
        shutil.rmtree(run.paths.staging, ignore_errors=True)


def mark_running(run: RunHandle, phase: Phase, previous: int) -> None:
    """Step 1: keep the previous attempt's files, mark the phase (and the run) running."""
    if previous:
        collect.archive_attempt(run.paths, phase, previous)
    run.change("start", phase=phase.id, pid=os.getpid())
    run.emit(PhaseStarted(phase=phase.id, attempt=run.state.phase(phase.id).attempt))


def gather(run: RunHandle, phase: Phase, sandbox: Sandbox) -> list[str]:
    """Step 2: upload every working input (replacing what the workspace holds)."""
    t0 = run.clock()
    for name in phase.working:
        sandbox.upload(source_of(run, name), name)
    run.emit(InputsUploaded(phase=phase.id, files=list(phase.working), seconds=run.clock() - t0))
    return list(phase.working)


def source_of(run: RunHandle, name: str) -> Path:
    """Where a working/reference input lives on the host: an earlier output, or a flow file."""
    if run.flow.producer(name) is not None:
        return confined(run.paths.output, name)
    return confined(run.flow.root, name)


def execute(
    run: RunHandle,
    phase: Phase,
    sandbox: Sandbox,
    kernel: Kernel,
    record: Record,
    approver: Approver | None,
    progress: Progress,
    extra: dict | None,
) -> PhaseOutcome:
    """Step 4: hand the phase to the executor of its kind, in a fresh kernel."""
    from praxis.phases import executor

    run.paths.staging.mkdir(parents=True, exist_ok=True)
    ctx = PhaseContext(
        flow=run.flow,
        phase=phase,
        run_id=run.id,
        attempt=run.state.phase(phase.id).attempt,
        run_dir=run.root,
        sandbox=sandbox,
        kernel=kernel,
        timeout=float(phase.timeout or run.flow.sandbox.get("timeout", 600)),
        emit=run.emit,
        record=record,
        staging=run.paths.staging,
        note=run.state.phase(phase.id).note,
        approver=approver,
        progress=progress,
        live=live.writer(run.root, phase.id, progress),
        waiting=lambda what: _set_waiting(run, phase, what),
        extra=dict(extra or {}),
    )
    with _CancelWatch(run.paths.cancel_request, kernel):
        return executor(phase.kind)(ctx)


def _set_waiting(run: RunHandle, phase: Phase, what: str | None) -> None:
    run.change("waiting", phase=phase.id, what=what)


def finish(
    run: RunHandle, phase: Phase, started: float, record: Record, outcome: PhaseOutcome
) -> None:
    """Step 7: record hashes, mark later done phases stale, write the record and run.json."""
    hashes = collect.hash_outputs(run.paths, phase)
    stale_before = {p.id for p in run.state.phases if p.status == "stale"}
    _save_record(run, phase, record, "done")
    run.change("finish", phase=phase.id, hashes=hashes)
    newly = [p.id for p in run.state.phases if p.status == "stale" and p.id not in stale_before]
    seconds = run.clock() - started
    run.emit(
        PhaseDone(
            phase=phase.id,
            attempt=run.state.phase(phase.id).attempt,
            seconds=seconds,
            hashes=hashes,
        )
    )
    if newly:
        run.emit(PhasesStale(phases=newly, because=f"{phase.id} ran again"))


def fail(run: RunHandle, phase: Phase, started: float, record: Record, error: str) -> None:
    record.error(error)
    try:
        _save_record(run, phase, record, "failed")
    finally:
        run.change("fail", phase=phase.id, error=error)
        run.emit(
            PhaseFailed(
                phase=phase.id,
                attempt=run.state.phase(phase.id).attempt,
                error=error,
                seconds=run.clock() - started,
            )
        )


def _save_record(run: RunHandle, phase: Phase, record: Record, status: str) -> None:
    record.metadata["status"] = status
    record.metadata["ended"] = run.clock()
    record.save(run.paths.record(phase.id))


def _metadata(run: RunHandle, phase: Phase, attempt: int, started: float) -> dict:
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


def _message(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if isinstance(exc, SandboxError) and type(exc).__name__ not in text:
        return f"{type(exc).__name__}: {text}" if type(exc).__name__ != "ExecTimeout" else text
    if isinstance(exc, OSError) and not isinstance(exc, SandboxError):
        return f"{type(exc).__name__}: {text}"
    return text


class _CancelWatch:
    """While code runs, interrupt the kernel when `praxis cancel` leaves a request file."""

    def __init__(self, request: Path, kernel: Kernel) -> None:
        self.request = request
        self.kernel = kernel
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(0.5):
            if self.request.exists():
                self.kernel.interrupt()
                return

    def __enter__(self) -> _CancelWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
