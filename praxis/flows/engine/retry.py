"""A phase's retries (flow.yaml ``retries:``): what caused a failure, whether it is tried
again, and the wait before it.

The cause is what the sandbox already told: ``ExecTimeout`` (the phase's timeout), a
``KernelDied`` whose cause the backend read as out of memory (the container's OOM counter
went up), any other ``KernelDied`` (a signal, an exit). The next attempt is the phase run
again (``run_phase``): it starts from the phase's recorded pre-state, restored, its inputs
uploaded again; the failed attempt's record and files are kept under ``attempts/``.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import ExecTimeout, KernelDied

from ..model.flow import Phase
from ..model.retry_policy import KERNEL_DIED, OUT_OF_MEMORY, TIMEOUT
from ..model.transitions import Retry
from ..store.handle import RunHandle

Sleep = Callable[[float], None]
STEP = 0.5  # seconds between two looks for a cancel while waiting


def cause_of(exc: BaseException) -> str | None:
    """timeout, kernel_died or out_of_memory, from the error or an error it came from (a
    notebook phase's error names the cell and chains the sandbox's); None for any other."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, ExecTimeout):
            return TIMEOUT
        if isinstance(seen, KernelDied):
            return OUT_OF_MEMORY if "out of memory" in seen.cause else KERNEL_DIED
        seen = seen.__cause__ or seen.__context__
    return None


def spent(run: RunHandle, phase: Phase, cause: str | None, error: str) -> str:
    """``error``, saying the retries were spent when this failure was one they covered."""
    policy, number = phase.retries, int(run.state.phase(phase.id).retry.get("number", 0))
    if policy is None or number < policy.count or cause not in policy.on:
        return error  # no retry yet, one left, or a failure retries do not cover
    attempt = run.state.phase(phase.id).attempt
    return (
        f"{error} (retries spent: attempts {attempt - number} to {attempt} failed, all kept; "
        f"flow.yaml retries: count {policy.count})"
    )


def again(run: RunHandle, phase: Phase, sleep: Sleep) -> bool:
    """Whether the phase that just failed is tried again: its cause is one flow.yaml's
    ``retries`` covers and a retry is left. If so the retry is recorded (``phase_retrying``)
    and waited for (``sleep``, in steps, ending early at a cancel)."""
    policy, p = phase.retries, run.state.phase(phase.id)
    number = int(p.retry.get("number", 0)) + 1
    cause = p.failure.get("cause")
    if policy is None or not policy.covers(cause, number) or run.paths.cancel_request.exists():
        return False
    backoff = policy.wait(number)
    run.change(Retry(phase=phase.id, number=number, of=policy.count, cause=str(cause),
                     backoff=backoff))  # fmt: skip
    left = backoff
    while left > 0 and not run.paths.cancel_request.exists():
        step = min(STEP, left)
        sleep(step)
        left -= step
    return True
