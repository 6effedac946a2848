"""The local backend: ipykernel subprocesses of this interpreter, in a host folder. NO isolation.

For machines without Docker. Kernels run as the current user with its environment and
network; the only thing this backend shares with the docker one is the contract. Transport
is ZMQ ``ipc`` (unix sockets in a private runtime folder under the temp dir), as in the
docker backend: no TCP ports, no port races.
"""

from __future__ import annotations

import asyncio
import getpass
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import KernelManager

from .base import FileStat, Kernel, Sandbox
from .client import DISPLAY_LIMIT, GRACE, STREAM_LIMIT, JupyterKernel
from .errors import SandboxUnavailable
from .standby import Standby
from .workspace import Workspace

log = logging.getLogger("sandbox")


class _ThisPython(KernelSpecManager):
    """A kernel spec manager that knows one kernel: ipykernel on this interpreter."""

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        return KernelSpec(
            argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            display_name="Python 3 (praxis local)",
            language="python",
            interrupt_mode="signal",
            env={},
        )


def _exit_cause(proc: subprocess.Popen[Any] | None) -> str | None:
    code = proc.poll() if proc is not None else None
    if code is None:
        return None
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class LocalSandbox(Sandbox):
    """Kernels as subprocesses of this Python, working directory the workspace. Not isolated."""

    backend = "local"
    isolated = False

    def __init__(
        self,
        *,
        workspace: Path,
        name: str,
        stream_limit: int = STREAM_LIMIT,
        display_limit: int = DISPLAY_LIMIT,
        grace: float = GRACE,
        start_timeout: float = 60.0,
        warm: bool = True,
        **options: Any,
    ) -> None:
        if options:
            log.debug("local sandbox ignores options %s", ", ".join(sorted(options)))
        self.workspace = Workspace(Path(workspace), mode=None)
        self.name = name
        self.stream_limit = stream_limit
        self.display_limit = display_limit
        self.grace = grace
        self.start_timeout = start_timeout
        self.warm = warm
        self._runtime: Path | None = None
        self._standby: Standby | None = None
        self._kernels: list[Kernel] = []
        self._count = 0
        self._lock = threading.Lock()

    @property
    def warning(self) -> str:
        return f"local sandbox: code runs as {getpass.getuser()} on this machine, WITHOUT isolation"

    def open(self) -> None:
        if self._standby is not None:
            return
        self.workspace.open()
        self._runtime = Path(tempfile.mkdtemp(prefix="praxis-rt-"))
        log.warning(self.warning)
        self._standby = Standby(self._start)
        if self.warm:
            self._standby.warm()

    def upload(self, src: Path, name: str) -> None:
        self.workspace.upload(src, name)

    def listing(self) -> dict[str, FileStat]:
        return self.workspace.listing()

    def fetch(self, name: str, dest: Path) -> None:
        self.workspace.fetch(name, dest)

    def kernel(self) -> Kernel:
        if self._standby is None:
            raise SandboxUnavailable("the local sandbox is not open; call open() first")
        kernel = self._standby.take()
        with self._lock:
            self._kernels = [k for k in self._kernels if not getattr(k, "_closed", False)]
            self._kernels.append(kernel)
        return kernel

    @property
    def kernels_started(self) -> int:
        return self._standby.started if self._standby is not None else 0

    def close(self) -> None:
        standby, self._standby = self._standby, None
        if standby is not None:
            standby.close()
        with self._lock:
            kernels, self._kernels = self._kernels, []
        for kernel in kernels:
            kernel.shutdown()
        if self._runtime is not None:
            shutil.rmtree(self._runtime, ignore_errors=True)
            self._runtime = None

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "python": sys.executable, "warning": self.warning}

    def _start(self) -> JupyterKernel:
        """Start one kernel, wait until it answers, import pandas. Runs on the standby thread."""
        with self._lock:
            self._count += 1
            n = self._count
        assert self._runtime is not None
        km = KernelManager(kernel_spec_manager=_ThisPython(), kernel_name="python3")
        km.transport = "ipc"
        km.ip = str(self._runtime / f"k{n}")
        km.connection_file = str(self._runtime / f"k{n}.json")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        try:
            km.start_kernel(cwd=str(self.workspace.root), env=env)
        except (OSError, RuntimeError) as exc:
            raise SandboxUnavailable(
                f"cannot start a local kernel with {sys.executable}: {exc}; "
                "check that ipykernel is installed"
            ) from exc
        proc = getattr(km.provisioner, "process", None)

        def kill() -> None:
            km.shutdown_kernel(now=True)

        try:
            kernel = JupyterKernel(
                km,
                is_alive=lambda: proc is not None and proc.poll() is None,
                kill=kill,
                death_cause=lambda: _exit_cause(proc),
                grace=self.grace,
                stream_limit=self.stream_limit,
                display_limit=self.display_limit,
            )
        except BaseException:
            kill()
            _close_thread_loop()
            raise
        try:
            kernel.start_up(self.start_timeout)
        except BaseException:
            kernel.shutdown()
            raise
        finally:
            _close_thread_loop()
        return kernel


def _close_thread_loop() -> None:
    """Close the event loop jupyter_client's sync wrappers left on this (standby) thread.

    Left open, it is collected with the thread and warns about an unclosed event loop.
    """
    if threading.current_thread() is threading.main_thread():
        return
    try:
        loop = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:
        return
    if not loop.is_running():
        loop.close()
        asyncio.set_event_loop(None)
