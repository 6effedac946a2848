"""Advancing runs in the server's background, several at once, each with its own approval
queue and its own sandbox.

After an approve, reject, re-run or a new run, the reviewer's request returns at once; the
run's advance waits for a place in a bounded pool (``max_runs`` at once: ``praxis serve
--max-runs N``) and then calls the service's ``advance`` with an ``ApprovalQueue`` as the
approver, so code an agent phase wants to run waits on the run page until someone answers. Each run
holds only its own lock: runs of one flow advance side by side, and a decision on one is
never refused because another advances. The outcome (or the error that stopped the
advance) is kept for the page to show. ``close`` says no to every pending approval, drops
the advances still queued, and waits for those running.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from dataclasses import dataclass
from pathlib import Path

from praxis.agent.approvals import ApprovalQueue, ApprovalRefused, ApprovalRequest
from praxis.flows.engine.notify import Notifier
from praxis.flows.store.handle import RunHandle
from praxis.service import acting
from praxis.service.acting import SandboxFactory
from sandbox import close_thread_loop

from .warm import WarmSandboxes

Key = tuple[str, str]  # (flow folder, run id)
MAX_RUNS = 4  # runs a server advances at once unless told otherwise
MAX_RUNS_LIMIT = 64
WARM_IDLE = 30.0  # seconds: a warm sandbox whose run's page was shown since is kept for it


@dataclass
class Job:
    flow: Path
    run_id: str
    queue: ApprovalQueue
    future: Future[None] | None = None
    advancing: bool = False  # False while it waits for a place in the pool
    error: str | None = None  # why the last advance stopped early (Busy, sandbox unavailable)
    finished: bool = False
    again: bool = False  # asked to start while it advanced: it advances once more when done

    @property
    def active(self) -> bool:
        """Queued or advancing in this server."""
        return self.future is not None and not self.future.done()

    @property
    def queued(self) -> bool:
        return self.active and not self.advancing


class Advancer:
    """``max_runs``: how many runs advance at once (more wait, in the order asked for);
    ``keep``: how many runs waiting at a Gate keep their sandbox open ahead of the click that
    continues them (``praxis serve``: 1; praxis.web.warm)."""

    def __init__(
        self,
        make_sandbox: SandboxFactory = acting.default_sandbox,
        *,
        keep: int = 0,
        max_runs: int = MAX_RUNS,
        notifier: Notifier | None = None,
    ) -> None:
        self.make_sandbox = make_sandbox
        self.notifier = notifier  # who is told when a run waits, fails or is done
        self.max_runs = min(max(1, int(max_runs)), MAX_RUNS_LIMIT)
        self.warm = WarmSandboxes(make_sandbox, keep=keep)
        self._pool = ThreadPoolExecutor(self.max_runs, thread_name_prefix="praxis-advance")
        self._jobs: dict[Key, Job] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._warmed: Key | None = None  # the run whose sandbox was opened ahead last
        self._seen: dict[Key, float] = {}  # when each run's page was last shown or polled

    def job(self, flow: Path, run_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get((str(flow), run_id))

    def queue_for(self, flow: Path, run_id: str) -> ApprovalQueue:
        """The approval queue this server serves for the run (the next advance's approver)."""
        with self._lock:
            return self._job(flow, run_id).queue

    def _job(self, flow: Path, run_id: str) -> Job:
        key = (str(flow), run_id)
        job = self._jobs.get(key)
        if job is None or job.finished:
            job = self._jobs[key] = Job(flow=flow, run_id=run_id, queue=ApprovalQueue())
        return job

    def start(self, flow: Path, run_id: str) -> bool:
        """Queue the run's advance; False when this server advances (or queued) it already.
        A start while the run advances (a decision recorded as its advance is ending, after
        it read the run) makes that advance go once more before it ends: none is lost."""
        with self._lock:
            if self._closed:
                return False
            job = self._job(flow, run_id)
            if job.future is not None:
                if job.advancing:
                    job.again = True
                return False
            job.future = self._pool.submit(self._advance, job)
            return True

    def counts(self) -> tuple[int, int]:
        """(advancing, queued) runs in this server now."""
        with self._lock:
            jobs = [j for j in self._jobs.values() if j.active]
        advancing = sum(1 for j in jobs if j.advancing)
        return advancing, len(jobs) - advancing

    def seen(self, flow: Path, run_id: str) -> None:
        """A reviewer shows or polls the run's page (its warm sandbox is kept while so)."""
        with self._lock:
            self._seen[(str(flow), run_id)] = time.monotonic()

    def prepare(self, run: RunHandle) -> None:
        """Open the sandbox of a run that waits at a Gate, unless this server advances it.
        One run's at a time: another run's page takes it over only once the page of the run
        holding it was not shown for ``WARM_IDLE`` seconds (so that reviewers on several
        pages never make the server open and close containers in turn)."""
        key = (str(run.flow.root), run.id)
        job = self.job(run.flow.root, run.id)
        if run.state.waiting != "gate" or (job is not None and job.active):
            return
        now = time.monotonic()
        with self._lock:
            self._seen = {k: t for k, t in self._seen.items() if now - t < WARM_IDLE}
            self._seen[key] = now
            holder = self._warmed
            if holder not in (None, key) and holder in self._seen:
                return
            self._warmed = key
        self.warm.prepare(run)

    def _advance(self, job: Job) -> None:
        key = (str(job.flow), job.run_id)
        try:
            while True:
                with self._lock:
                    job.advancing = True
                    job.again = False
                    if self._warmed == key:
                        self._warmed = None
                job.error = None
                try:
                    acting.advance(
                        job.flow,
                        job.run_id,
                        sandbox=self.make_sandbox,
                        approver=job.queue,
                        opening=self.warm.take(job.flow, job.run_id),
                        notifier=self.notifier,
                    )
                except Exception as exc:  # shown on the run page; the run's record has the rest
                    job.error = f"{type(exc).__name__}: {exc}"
                with self._lock:  # decided with start's lock: a start now sees it finished
                    if not job.again or self._closed:
                        job.finished = True
                        break
        finally:
            job.finished = True
            job.queue.close()
            close_thread_loop()

    def pending(self, flow: Path, run_id: str) -> list[ApprovalRequest]:
        job = self.job(flow, run_id)
        return job.queue.pending() if job is not None else []

    def answer(self, flow: Path, run_id: str, request_id: str, approve: bool) -> None:
        job = self.job(flow, run_id)
        if job is None:
            raise ApprovalRefused(request_id, "this server is not running that run any more")
        job.queue.answer(request_id, approve)

    def wait(self, timeout: float | None = None) -> None:
        """Wait for every queued and running advance (tests, shutdown)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                futures = [j.future for j in self._jobs.values() if j.active and j.future]
            if not futures:
                return
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            wait_for(futures, left)
            if deadline is not None and time.monotonic() >= deadline:
                return

    def close(self, timeout: float | None = 30.0) -> None:
        """Say no to pending approvals, drop queued advances (their runs stay as they are:
        approved, paused before their next phase), wait for the running ones."""
        with self._lock:
            self._closed = True
            jobs = list(self._jobs.values())
        for job in jobs:
            if job.future is not None and job.future.cancel():
                job.finished = True
            job.queue.close()
        self.wait(timeout)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.warm.close()
