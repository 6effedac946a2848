"""A phase's retries (flow.yaml ``retries:``): how often a failed attempt is tried again, how
long to wait first, and for which causes. Plain data; ``definition/retry_spec`` builds it.

A retry restores the phase's recorded pre-state (the workspace as the phase before it left
it, its inputs uploaded again), so it is safe by construction for a phase whose code reads
only its workspace: script and notebook phases. An agent phase retries only when the flow
says so (``agent: true``): a model's turn may have acted outside its workspace.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The causes of a failure the engine tells apart, in the words flow.yaml uses.
TIMEOUT = "timeout"
KERNEL_DIED = "kernel_died"
OUT_OF_MEMORY = "out_of_memory"
CAUSES = (TIMEOUT, KERNEL_DIED, OUT_OF_MEMORY)
MAX_COUNT = 20
MAX_BACKOFF = 24 * 3600.0  # one wait, seconds, exponential growth included


@dataclass(frozen=True)
class RetryPolicy:
    """``count`` retries after the first attempt, ``backoff`` seconds before the first,
    doubled before each next one when ``exponential`` (capped at a day); only for a failure
    whose cause is in ``on``."""

    count: int = 1
    backoff: float = 0.0
    on: tuple[str, ...] = CAUSES
    exponential: bool = False
    agent: bool = False

    def wait(self, number: int) -> float:
        """Seconds to wait before retry ``number`` (1-based)."""
        if not self.exponential:
            return self.backoff
        return min(self.backoff * 2.0 ** (number - 1), MAX_BACKOFF)

    def covers(self, cause: str | None, number: int) -> bool:
        """Whether a failure of ``cause`` is tried again as retry ``number``."""
        return cause is not None and cause in self.on and number <= self.count


def words(retry: Mapping[str, Any], now: float) -> str:
    """A phase's retry as status and the page say it: ``retrying in 10 s (2 of 3)`` while it
    waits, ``retry 2 of 3`` while it runs; empty for none."""
    if not retry:
        return ""
    which = f"{retry.get('number')} of {retry.get('of')}"
    if "due" not in retry:
        return f"retry {which}"
    left = max(0, math.ceil(float(retry["due"]) - now))
    return f"retrying in {left} s ({which})"
