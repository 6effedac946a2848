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
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
    turn: int = 0  # its place among the jobs: slots are taken in this order
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
    skipped: bool = False  # stopped before it ran: nothing of it is recorded


def work(
    job: Job,
    flow: Flow,
    open_box: OpenBox,
    started: Callable[[str, str], None],
    options: RunOptions = DEFAULT,
    slots: Slots | None = None,
) -> Outcome:
    """Run ``job`` in a sandbox of its own: ``started(partition, node)`` once it runs.

    ``slots`` (the fan-out's ``parallel``): the sandbox is opened, the inputs placed and a
    kernel handed out with ``params`` set before a slot is free (its container and kernel
    start while other partitions run; none of the phase's code runs in it before),
    the code runs holding one, and the sandbox closes after it is let go. A job stopped
    before it held a slot is ``skipped``: it never ran. The seconds of each step are in the
    record's metadata (``steps``)."""
    out = Outcome(job.name, ok=False)
    record = Record(
        {"flow": flow.name, "run": job.run_id, "phase": job.phase.id, "partition": job.name}
    )
    record.metadata.update(attempt=job.attempt, params=dict(job.params))
    shutil.rmtree(job.folder / "workspace", ignore_errors=True)  # it starts empty
    job.folder.mkdir(parents=True, exist_ok=True)
    box: Sandbox | None = None
    handout: Handout | None = None
    steps = _Steps()
    held = tried = False  # a run slot held; asked for one
    try:
        if job.stop.is_set():
            out.skipped = True
            raise PhaseError("stopped before it began")
        with steps("open"):
            box = open_box(job.folder / "workspace", f"{job.run_id}-{job.phase.id}-{job.name}")
            box.open()
            for name, src in job.uploads.items():
                box.upload(src, name)
            handout = Handout(box, job.params, None, job.timeout)  # a kernel, params set
            kernel = handout.kernel()
        with steps("wait"):
            held = slots.take(job.turn, job.stop) if slots else not job.stop.is_set()
        tried = True
        # a cancel asked for while it waited (a slot another partition let go as the cancel
        # interrupted it, before the loop stopped the rest): it never runs either
        if not held or job.stop.is_set() or (job.cancel is not None and job.cancel.exists()):
            out.skipped = True
            raise PhaseError("stopped before it began")
        _archive(job)
        out.node = str(box.describe().get("node") or "")
        record.metadata["node"] = out.node
        started(job.name, out.node)
        with steps("run"):
            _execute(job, flow, box, kernel, record, out, options)
        with steps("collect"):
            box.quiesce()
            out.hashes = _collect(job, box)
            failures = [
                f for n, s in job.phase.checks.items() for f in _check(flow, box, job, n, s)
            ]
        if failures:
            raise PhaseError(checks.summary(failures))
        out.ok = True
    except Exception as exc:  # the partition fails; the others go on
        text = str(exc) or type(exc).__name__
        out.error = text if len(text) <= MAX_ERROR else text[:MAX_ERROR] + " …"
        record.error(out.error)
    finally:
        if slots is not None and held:
            slots.release()  # the next partition runs while this sandbox closes
        elif slots is not None and not tried:
            slots.give_up(job.turn)
        if box is not None:
            with steps("close"):
                if handout is not None:
                    handout.close()
                box.close()
        record.metadata["status"] = "done" if out.ok else "failed"
        record.metadata["steps"] = steps.seconds
        if not out.skipped:
            job.record.parent.mkdir(parents=True, exist_ok=True)
            record.save(job.record)
        shutil.rmtree(job.folder / "staging", ignore_errors=True)
        close_thread_loop()  # the one jupyter_client left on this worker thread
    return out


class Slots:
    """The fan-out's ``parallel`` run slots, taken in the partitions' order (``Job.turn``):
    a partition whose sandbox opened first still waits for the ones before it."""

    def __init__(self, parallel: int) -> None:
        self._free = parallel
        self._next = 0  # the first turn that has not taken a slot nor given up
        self._over: set[int] = set()  # turns that took a slot or gave up
        self._cond = threading.Condition()

    def take(self, turn: int, stop: threading.Event) -> bool:
        """A slot (True), or False once the loop stops every partition first."""
        with self._cond:
            while not stop.is_set():
                if self._next == turn and self._free > 0:
                    self._free -= 1
                    self._pass(turn)
                    return True
                self._cond.wait(0.2)
            self._pass(turn)
            return False

    def give_up(self, turn: int) -> None:
        """``turn`` takes no slot (its sandbox did not open): the next ones go on."""
        with self._cond:
            self._pass(turn)

    def release(self) -> None:
        with self._cond:
            self._free += 1
            self._cond.notify_all()

    def _pass(self, turn: int) -> None:
        self._over.add(turn)
        while self._next in self._over:
            self._next += 1
        self._cond.notify_all()


class _Steps:
    """Seconds spent in each step of a partition (``with steps("open"): ...``)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = round(time.perf_counter() - t0, 3)


def _execute(
    job: Job,
    flow: Flow,
    box: Sandbox,
    kernel: Kernel,
    record: Record,
    out: Outcome,
    options: RunOptions,
) -> None:
    staging = job.folder / "staging"
    staging.mkdir(parents=True, exist_ok=True)
    ctx = PhaseContext(
        flow=flow,
        phase=job.phase,
        run_id=job.run_id,
        attempt=job.attempt,
        run_dir=job.run_dir,
        sandbox=box,
        kernel=kernel,
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
    partition wrote is overwritten)."""
    if job.attempt > 1 and (job.record.is_file() or job.output.is_dir()):
        job.archive.mkdir(parents=True, exist_ok=True)
        if job.record.is_file():
            os.replace(job.record, job.archive / "record.ipynb")
        if job.output.is_dir():
            os.replace(job.output, job.archive / "output")
