"""One warm kernel, started in the background, so a phase never waits for start-up.

``take`` hands out the warm kernel (waiting if it is still starting) and at once starts the
next one. A kernel handed out is never taken back: every phase gets a fresh interpreter.
Kernels start one at a time on a single worker thread, so a busy machine is not asked to
start two at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from .base import Kernel

log = logging.getLogger("sandbox")


class Standby:
    """Keeps ONE spare kernel made by ``start`` (which should leave pandas imported)."""

    def __init__(self, start: Callable[[], Kernel]) -> None:
        self._start = start
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._spare: Future[Kernel] | None = None
        self.started = 0  # kernels whose start was requested

    def warm(self) -> None:
        """Start the spare now if none is ready or starting. Idempotent."""
        with self._lock:
            if self._spare is None:
                self._spare = self._submit()

    def take(self) -> Kernel:
        """The warm kernel (waiting for it if needed); the next one starts in the background.

        Raises whatever ``start`` raised for this kernel (e.g. SandboxUnavailable).
        """
        with self._lock:
            current = self._spare if self._spare is not None else self._submit()
            self._spare = self._submit()
        return current.result()

    def close(self) -> None:
        """Shut down the spare (waiting for it to finish starting). Idempotent."""
        with self._lock:
            spare, self._spare = self._spare, None
            pool, self._pool = self._pool, None
        if spare is not None and not spare.cancel():
            try:
                spare.result().shutdown()
            except Exception:  # a spare that failed to start has nothing to stop
                log.debug("standby kernel failed to start", exc_info=True)
        if pool is not None:
            pool.shutdown(wait=True)

    def _submit(self) -> Future[Kernel]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-standby")
        self.started += 1
        return self._pool.submit(self._start)
