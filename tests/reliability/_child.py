"""Code run in child processes of the reliability suite (importable by spawned processes)."""

from __future__ import annotations

import os
import time
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

from praxis.flows.definition import contract
from praxis.flows.engine import runner
from praxis.flows.model.events import PhaseStarted
from praxis.flows.store.lock import Busy, Lock


def advance_rounds(flow_root: str, run_ids: list[str], barrier: Barrier, results: Any) -> None:
    """For each run: wait for every worker at the barrier, then all call advance at once.

    Puts (round, pid, outcome, detail) on ``results``: outcome is "advanced" (this process
    held the lock and ran the run to its end), "busy" (detail: the pid Busy named, and its
    message) or "idle" (the lock was free but the run had nothing left to run).
    """
    flow = contract.require(Path(flow_root))
    for n, run_id in enumerate(run_ids):
        barrier.wait(timeout=60)
        started: list[PhaseStarted] = []
        try:
            state = runner.advance(
                flow,
                run_id,
                options=runner.RunOptions(
                    on_event=lambda e, seen=started: (
                        seen.append(e) if isinstance(e, PhaseStarted) else None
                    )
                ),
            )
            results.put((n, os.getpid(), "advanced" if started else "idle", state.status))
        except Busy as busy:
            results.put((n, os.getpid(), "busy", (busy.pid, str(busy))))


def hold_lock(lock: str, ready: str) -> None:
    """Take a lock (a run's, as an advancing process does), say so in ``ready``, and hold it
    until killed."""
    with Lock(Path(lock)):
        Path(ready).write_text(str(os.getpid()))
        while True:
            time.sleep(60)
