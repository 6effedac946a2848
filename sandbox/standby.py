"""Warm kernels, started in the background, so a phase never waits for start-up.

``take`` hands out the oldest warm kernel (waiting if it is still starting), after
``activate`` (a spare may wait dormant, out of reach of running code, until it is handed out),
and then starts another. A kernel handed out is never taken back: every phase gets a fresh
interpreter. ``spares`` kernels are kept (each started on its own worker thread), so that
phases shorter than one kernel start, back to back, still find one ready. Until the first
kernel is handed out, only it starts: on a cold sandbox it has the CPUs to itself.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from .base import ExecResult, Kernel
from .errors import KernelDied, SandboxError, SandboxUnavailable
from .options import SPARES

log = logging.getLogger("sandbox")


# Hands a dormant spare its identity: (kernel, first code or None, its timeout) -> the code's
# result (None without code).
Activate = Callable[[Kernel, str | None, float], ExecResult | None]


class Standby:
    """Keeps ``spares`` kernels made by ``start`` (which should leave pandas imported)."""

    def __init__(
        self,
        start: Callable[[], Kernel],
        *,
        spares: int = SPARES,
        activate: Activate | None = None,
    ) -> None:
        self._start = start
        self._activate = activate
        self.spares = max(1, int(spares))
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._ready: deque[Future[Kernel]] = deque()
        self._out: list[Kernel] = []  # handed out and maybe still running
        self.started = 0  # kernels whose start was requested

    def warm(self) -> None:
        """Start a kernel now, unless one is ready or starting (the other spares start once
        one is handed out). Idempotent."""
        with self._lock:
            if not self._ready:
                self._ready.append(self._submit())

    def take(self, usable: Callable[[Kernel], bool] | None = None) -> Kernel:
        """``take_running`` without code."""
        return self.take_running(usable)[0]

    def take_running(
        self,
        usable: Callable[[Kernel], bool] | None = None,
        code: str | None = None,
        timeout: float = 60.0,
    ) -> tuple[Kernel, ExecResult | None]:
        """The oldest warm kernel (waiting for it if needed); another starts in the background.

        A kernel that failed to start, or that ``usable`` rejects (it died while waiting, e.g.
        killed by the phase before), is dropped and the next one tried, ``spares`` + 1 times
        in all; then whatever ``start`` raised (e.g. SandboxUnavailable) is raised.
        ``code`` (optional) runs first in the kernel handed out, within the hand-over when
        ``activate`` takes it; its result comes with the kernel.
        """
        error: Exception | None = None
        for _ in range(self.spares + 1):
            with self._lock:
                current = self._ready.popleft() if self._ready else self._submit()
            try:
                kernel = current.result()
            except SandboxError as exc:
                log.debug("standby kernel failed to start (%s); trying the next", exc)
                error = exc
                continue
            if usable is None or usable(kernel):
                result = None
                if self._activate is not None:
                    try:
                        result = self._activate(kernel, code, timeout)
                    except SandboxError as exc:
                        log.debug("standby kernel failed to activate (%s); next", exc)
                        kernel.shutdown()
                        error = exc
                        continue
                with self._lock:
                    self._out = [k for k in self._out if not k.closed]
                    self._out.append(kernel)
                    self._fill()  # after the hand-over: the kernel taken started alone
                if code is not None and result is None:
                    result = kernel.execute(code, timeout=timeout)
                return kernel, result
            kernel.shutdown()
            error = KernelDied("the warm kernel ended before it was handed out")
        assert error is not None
        raise error

    def handed_out(self) -> list[Kernel]:
        """The kernels handed out and not yet shut down."""
        with self._lock:
            self._out = [k for k in self._out if not k.closed]
            return list(self._out)

    def close(self) -> list[Kernel]:
        """Shut down the spares (waiting for those still starting); the kernels handed out
        and not yet shut down, for the caller to release. Idempotent."""
        with self._lock:
            spares, self._ready = list(self._ready), deque()
            pool, self._pool = self._pool, None
            out, self._out = [k for k in self._out if not k.closed], []
        for spare in spares:
            if spare.cancel():
                continue
            try:
                spare.result().shutdown()
            except Exception:  # a spare that failed to start has nothing to stop
                log.debug("standby kernel failed to start", exc_info=True)
        if pool is not None:
            pool.shutdown(wait=True)
        return out

    def _fill(self) -> None:
        while len(self._ready) < self.spares:
            self._ready.append(self._submit())

    def _submit(self) -> Future[Kernel]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                max_workers=self.spares, thread_name_prefix="sandbox-standby"
            )
        self.started += 1
        return self._pool.submit(self._start)


class StandbyKernels:
    """``kernel()`` for a sandbox whose fresh kernels come from a ``Standby`` (``_standby``)."""

    backend: str
    _standby: Standby | None

    def kernel(self) -> Kernel:
        return self._take(None, 0.0)[0]

    def kernel_running(self, code: str, *, timeout: float) -> tuple[Kernel, ExecResult]:
        kernel, result = self._take(code, timeout)
        assert result is not None
        return kernel, result

    def _handing_out(self) -> None:
        """Called before every kernel is handed out (by ``kernel`` and ``kernel_running``
        alike): code may run in the sandbox from then on."""

    def _take(self, code: str | None, timeout: float) -> tuple[Kernel, ExecResult | None]:
        if self._standby is None:
            raise SandboxUnavailable(f"the {self.backend} sandbox is not open; call open() first")
        from .client import alive  # jupyter_client: once a kernel is wanted, not to open

        self._handing_out()
        return self._standby.take_running(usable=alive, code=code, timeout=timeout)

    @property
    def kernels_started(self) -> int:
        return self._standby.started if self._standby is not None else 0
