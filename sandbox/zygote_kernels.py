"""Fresh kernels forked by a sandbox's zygote: how the local and the docker backend both get
a kernel (fork it dormant, wrap it, hand it its identity when it is taken).

jupyter_client is imported when the first kernel is made, not with the backend: a container
starts before its client library has loaded."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base import ExecResult, Kernel, close_thread_loop
from .errors import SandboxUnavailable
from .forkserver import ForkedKernel, ZygoteSupervisor
from .output import start_code
from .standby import StandbyKernels

if TYPE_CHECKING:
    from jupyter_client.blocking.client import BlockingKernelClient

    from .client import JupyterKernel


class ZygoteKernels(StandbyKernels):
    """``kernel()`` from a ``Standby`` whose kernels the zygote ``_zygote`` forks."""

    _zygote: ZygoteSupervisor | None
    _lock: threading.Lock
    _count: int
    stream_limit: int
    display_limit: int
    grace: float
    start_timeout: float

    def _next_key(self) -> str:
        with self._lock:
            self._count += 1
            return f"k{self._count}"

    def _fork(
        self,
        key: str,
        client: BlockingKernelClient,
        info: dict[str, Any],
        *,
        fallback_kill: Callable[[int], None],
        files: Iterable[Path] = (),
        death_cause: Callable[[ForkedKernel], str | None] | None = None,
    ) -> JupyterKernel:
        """Fork kernel ``key`` (``client``: its connection here; ``info``: as the zygote sees
        it), dormant, with the output cap installed. ``files`` of it go when it is killed or
        fails to start. Standby thread."""
        from .client import JupyterKernel
        from .collector import warm_ahead

        warm_ahead()  # while the zygote imports: the first output's nbformat schema compiled
        zygote = self._zygote
        if zygote is None:
            raise SandboxUnavailable(f"the {self.backend} sandbox is closed")
        files = list(files)

        def drop_files() -> None:
            for path in files:
                path.unlink(missing_ok=True)

        try:
            pid = zygote.spawn(key, info, start_code(self.stream_limit))
        except BaseException:
            zygote.server.forget(key)
            drop_files()
            raise
        forked = ForkedKernel(zygote.server, key, pid, fallback_kill=fallback_kill)

        def kill() -> None:
            forked.kill()
            drop_files()

        try:
            return JupyterKernel(
                client,
                is_alive=forked.is_alive,
                kill=kill,
                death_cause=forked.death_cause
                if death_cause is None
                else (lambda: death_cause(forked)),
                grace=self.grace,
                stream_limit=self.stream_limit,
                display_limit=self.display_limit,
                name=key,
            )
        except BaseException:
            kill()
            raise
        finally:
            close_thread_loop()

    def _activate(
        self, kernel: Kernel, code: str | None = None, timeout: float = 60.0
    ) -> ExecResult | None:
        """Let a dormant spare take its identity and answer; wait until it does. ``code``, if
        any, is the first probe of its readiness: its result is returned."""
        from .client import JupyterKernel

        assert isinstance(kernel, JupyterKernel)
        if self._zygote is None:
            raise SandboxUnavailable(f"the {self.backend} sandbox is closed")
        self._zygote.server.activate(kernel.name)
        if code is None:
            kernel.ready(self.start_timeout)
            return None
        return kernel.ready_running(code, max(self.start_timeout, timeout))
