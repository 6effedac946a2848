"""Advancing runs in background threads of the server, each with its own approval queue.

After an approve, reject or re-run the reviewer's request returns at once; a thread calls
``runner.advance`` with an ``ApprovalQueue`` as the approver, so code an agent phase wants
to run waits on the run page until someone answers. The outcome (or the error that stopped
the advance) is kept for the page to show. ``close`` says no to every pending approval and
waits for the threads.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from praxis.agent.approvals import ApprovalQueue, ApprovalRequest
from praxis.flows import runner
from praxis.flows.handle import RunHandle
from praxis.flows.runner import SandboxFactory
from sandbox import close_thread_loop

from .warm import WarmSandboxes

Key = tuple[str, str]  # (flow folder, run id)


@dataclass
class Job:
    flow: Path
    run_id: str
    queue: ApprovalQueue
    thread: threading.Thread | None = None
    error: str | None = None  # why the last advance stopped early (Busy, sandbox unavailable)
    finished: bool = False

    @property
    def active(self) -> bool:
        return self.thread is not None and self.thread.is_alive()


class Advancer:
    """``keep``: how many runs waiting at a Gate keep their sandbox open ahead of the click
    that continues them (``praxis serve``: 1; praxis.web.warm)."""

    def __init__(
        self, make_sandbox: SandboxFactory = runner.default_sandbox, *, keep: int = 0
    ) -> None:
        self.make_sandbox = make_sandbox
        self.warm = WarmSandboxes(make_sandbox, keep=keep)
        self._jobs: dict[Key, Job] = {}
        self._lock = threading.Lock()
        self._closed = False

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
        """Advance the run in a thread; False when this server already advances it."""
        with self._lock:
            if self._closed:
                return False
            job = self._job(flow, run_id)
            if job.thread is not None:
                return False
            job.thread = threading.Thread(
                target=self._advance, args=(job,), name=f"praxis-advance-{run_id}", daemon=True
            )
            job.thread.start()
            return True

    def prepare(self, run: RunHandle) -> None:
        """Open the sandbox of a run that waits at a Gate, unless this server advances it."""
        job = self.job(run.flow.root, run.id)
        if run.state.waiting == "gate" and not (job is not None and job.active):
            self.warm.prepare(run)

    def _advance(self, job: Job) -> None:
        try:
            runner.advance(
                job.flow,
                job.run_id,
                make_sandbox=self.make_sandbox,
                approver=job.queue,
                opening=self.warm.take(job.flow, job.run_id),
            )
        except Exception as exc:  # shown on the run page; the run's own record has the rest
            job.error = f"{type(exc).__name__}: {exc}"
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
            from praxis.agent.approvals import ApprovalRefused

            raise ApprovalRefused(request_id, "this server is not running that run any more")
        job.queue.answer(request_id, approve)

    def wait(self, timeout: float | None = None) -> None:
        """Wait for every running advance (tests, shutdown)."""
        with self._lock:
            threads = [j.thread for j in self._jobs.values() if j.thread is not None]
        for t in threads:
            t.join(timeout)

    def close(self, timeout: float | None = 30.0) -> None:
        with self._lock:
            self._closed = True
            jobs = list(self._jobs.values())
        for job in jobs:
            job.queue.close()
        self.wait(timeout)
        self.warm.close()
