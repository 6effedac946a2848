"""One partition of a fan-out (DESIGN.md §17), run by a worker thread in its own sandbox.

A worker never writes the run's state or its events: it tells the phase loop what happened
(``report``: started, and where) and returns an ``Outcome`` (done with its outputs' hashes,
or failed with the error); the loop records both (``fanout.py``, the one writer). What the
phase's executor emits is kept in the outcome, appended by the loop.

A partition's outputs go to ``output/<phase>/<partition>/``, its record to
``records/<phase>/<partition>.ipynb`` (an earlier attempt's, both, to
``attempts/<phase>/partitions/<partition>/<n>/``); its workspace is
``partitions/<phase>/<partition>/workspace/`` (``RunPaths``).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandbox import Kernel, Sandbox, close_thread_loop

from ..definition import kinds
from ..definition.digest import sha256_of
from ..model.events import Event
from ..model.flow import Flow, Phase
from ..store.record import Record
from . import checks
from .context import PhaseContext, PhaseError
from .handout import Handout
from .options import DEFAULT, RunOptions

# (workspace folder, sandbox name) -> an open sandbox of the run's backend over that folder
OpenBox = Callable[[Path, str], Sandbox]
MAX_ERROR = 4000


@dataclass(frozen=True)
class Job:
    """What one attempt of a partition needs, decided by the loop before the worker starts."""

    phase: Phase
    name: str  # the partition
    attempt: int
    params: dict[str, Any]  # the run's, with the partition's value as ``fanout.param``
    folder: Path  # runs/<run>/partitions/<phase>/<partition>: workspace/, staging/
    output: Path  # runs/<run>/output/<phase>/<partition>
    record: Path  # runs/<run>/records/<phase>/<partition>.ipynb
    archive: Path  # runs/<run>/attempts/<phase>/partitions/<partition>/<attempt - 1>
    uploads: dict[str, Path]  # workspace name -> host file (inputs, the partition's file)
    timeout: float
    run_id: str
    run_dir: Path
    key: str = ""  # its reuse key (fanout.py)
    # `praxis cancel`'s request file, and the loop's own stop (Ctrl-C): either interrupts
    # the partition's code
    cancel: Path | None = None
    stop: threading.Event = field(default_factory=threading.Event)


@dataclass
class Outcome:
    name: str
    ok: bool
    error: str = ""
    node: str = ""
    hashes: dict[str, str] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)


def work(
    job: Job,
    flow: Flow,
    open_box: OpenBox,
    started: Callable[[str, str], None],
    options: RunOptions = DEFAULT,
) -> Outcome:
    """Run ``job`` in a sandbox of its own: ``started(partition, node)`` once it is open."""
    out = Outcome(job.name, ok=False)
    record = Record(
        {"flow": flow.name, "run": job.run_id, "phase": job.phase.id, "partition": job.name}
    )
    record.metadata.update(attempt=job.attempt, params=dict(job.params))
    _archive(job)
    box: Sandbox | None = None
    try:
        if job.stop.is_set():
            raise PhaseError("stopped before it began")
        box = open_box(job.folder / "workspace", f"{job.run_id}-{job.phase.id}-{job.name}")
        box.open()
        out.node = str(box.describe().get("node") or "")
        record.metadata["node"] = out.node
        started(job.name, out.node)
        for name, src in job.uploads.items():
            box.upload(src, name)
        _execute(job, flow, box, record, out, options)
        box.quiesce()
        out.hashes = _collect(job, box)
        failures = [f for n, s in job.phase.checks.items() for f in _check(flow, box, job, n, s)]
        if failures:
            raise PhaseError(checks.summary(failures))
        out.ok = True
    except Exception as exc:  # the partition fails; the others go on
        text = str(exc) or type(exc).__name__
        out.error = text if len(text) <= MAX_ERROR else text[:MAX_ERROR] + " …"
        record.error(out.error)
    finally:
        if box is not None:
            box.close()
        record.metadata["status"] = "done" if out.ok else "failed"
        job.record.parent.mkdir(parents=True, exist_ok=True)
        record.save(job.record)
        shutil.rmtree(job.folder / "staging", ignore_errors=True)
        close_thread_loop()  # the one jupyter_client left on this worker thread
    return out


def _execute(
    job: Job,
    flow: Flow,
    box: Sandbox,
    record: Record,
    out: Outcome,
    options: RunOptions,
) -> None:
    staging = job.folder / "staging"
    staging.mkdir(parents=True, exist_ok=True)
    handout = Handout(box, job.params, None, job.timeout)
    try:
        ctx = PhaseContext(
            flow=flow,
            phase=job.phase,
            run_id=job.run_id,
            attempt=job.attempt,
            run_dir=job.run_dir,
            sandbox=box,
            kernel=handout.kernel(),
            timeout=job.timeout,
            emit=out.events.append,
            record=record,
            staging=staging,
            params=dict(job.params),
            given=options.given_to(job.phase.kind),
        )
        done = threading.Event()
        watch = threading.Thread(target=_watch, args=(job, ctx.kernel, done), daemon=True)
        watch.start()
        try:
            kinds.get(job.phase.kind).run(ctx)
        finally:
            done.set()
            watch.join(timeout=2)
    finally:
        handout.close()


def _watch(job: Job, kernel: Kernel, done: threading.Event) -> None:
    """While the partition's code runs, interrupt it on a cancel or the loop's stop."""
    while not done.wait(0.3):
        if job.stop.is_set() or (job.cancel is not None and job.cancel.exists()):
            kernel.interrupt()
            return


def _collect(job: Job, box: Sandbox) -> dict[str, str]:
    """The declared outputs into output/<phase>/<partition>/ (an executor's staged file, or
    the workspace's): name -> sha256. PhaseError naming one the partition did not write."""
    job.output.mkdir(parents=True, exist_ok=True)
    listed = box.listing()
    hashes: dict[str, str] = {}
    for name in job.phase.outputs:
        dest = job.output / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        staged = job.folder / "staging" / name
        if name in listed:
            box.fetch(name, dest)
        elif staged.is_file() and not staged.is_symlink():
            os.replace(staged, dest)
        else:
            raise PhaseError(f"partition {job.name}: declared output {name!r} was not written")
        hashes[name] = sha256_of(dest)
    return hashes


def _check(flow: Flow, box: Sandbox, job: Job, name: str, spec: dict[str, Any]) -> list[Any]:
    failures = checks.evaluate(name, spec, job.output / name)
    if "script" in spec and not failures:
        failures += checks.script_in_kernel(box, flow, name, spec["script"])
    return failures


def _archive(job: Job) -> None:
    """An earlier attempt's record and outputs move to its attempt's folder (nothing a
    partition wrote is overwritten); the workspace starts empty."""
    if job.attempt > 1 and (job.record.is_file() or job.output.is_dir()):
        job.archive.mkdir(parents=True, exist_ok=True)
        if job.record.is_file():
            os.replace(job.record, job.archive / "record.ipynb")
        if job.output.is_dir():
            os.replace(job.output, job.archive / "output")
    shutil.rmtree(job.folder / "workspace", ignore_errors=True)
    job.folder.mkdir(parents=True, exist_ok=True)
