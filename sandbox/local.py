"""The local backend: kernels forked from a zygote of this interpreter, in a host folder.

NO isolation. For machines without Docker. Kernels run as the current user with its
environment and network; the only thing this backend shares with the docker one is the
contract (and the zygote: every kernel is a fork of one process that imported ipykernel and
pandas once, see ``sandbox/forkserver.py``). Transport is ZMQ ``ipc`` (unix sockets in a
private runtime folder under the temp dir), as in the docker backend: no TCP ports, no port
races.
"""

from __future__ import annotations

import getpass
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .client import JupyterKernel
from .errors import SandboxUnavailable
from .forkserver import (
    ForkServer,
    ZygoteSupervisor,
    connection_files,
    start_local,
    stop_local,
)
from .options import LocalOptions
from .standby import Standby
from .watchdog import Watchdog
from .workspace import FolderSandbox, WorkspaceFolder
from .zygote_kernels import ZygoteKernels

log = logging.getLogger("sandbox")


def _kill_group(pid: int) -> None:
    """SIGKILL the process group ``pid`` leads, if it still does (the zygote is gone)."""
    try:
        if os.getpgid(pid) == pid and os.getsid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


INLINE_BACKEND = "module://matplotlib_inline.backend_inline"  # matplotlib's, in kernels


class LocalSandbox(ZygoteKernels, FolderSandbox):
    """Kernels as subprocesses of this Python, working directory the workspace. Not isolated."""

    backend = "local"
    isolated = False

    def __init__(self, *, workspace: Path, name: str, options: LocalOptions | None = None) -> None:
        o = self.options = options or LocalOptions()
        self.workspace = WorkspaceFolder(Path(workspace), mode=None)
        self.name = name
        self.stream_limit = o.stream_limit
        self.display_limit = o.display_limit
        self.grace = o.grace
        self.start_timeout = o.start_timeout
        self.warm = o.warm
        self.spares = int(o.spares)
        self._runtime: Path | None = None
        self._standby: Standby | None = None
        self._count = 0
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None  # the zygote's
        self._zygote: ZygoteSupervisor | None = None
        self.server: ForkServer | None = None
        self._watchdog: Watchdog | None = None

    @property
    def warning(self) -> str:
        return f"local sandbox: code runs as {getpass.getuser()} on this machine, WITHOUT isolation"

    def open(self) -> None:
        if self._standby is not None:
            return
        self.workspace.open()
        self._runtime = Path(tempfile.mkdtemp(prefix="praxis-rt-"))
        self._watchdog = Watchdog(self.watch_report)  # ends the kernel server if we die first
        log.warning(self.warning)
        self.server = ForkServer(self._runtime)
        self._zygote = ZygoteSupervisor(
            self.server, self._launch_zygote, timeout=self.start_timeout
        )
        self._standby = Standby(self._start, spares=self.spares, activate=self._activate)
        if self.warm:
            self._standby.warm()

    def close(self) -> None:
        standby, self._standby = self._standby, None
        for kernel in standby.close() if standby is not None else []:
            kernel.shutdown()
        process, self._process, self._zygote = self._process, None, None
        if process is not None:
            stop_local(process)
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.close()
        if self._runtime is not None:
            shutil.rmtree(self._runtime, ignore_errors=True)
            self._runtime = None

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "python": sys.executable, "warning": self.warning}

    # -- kernels ---------------------------------------------------------------------------

    def _launch_zygote(self) -> Callable[[], bool]:
        """Start a zygote process (it imports in the background); tell whether it ended."""
        assert self._runtime is not None
        if self._process is not None:
            stop_local(self._process)
            self._tell("ungroup", self._process.pid)
        # figures a cell leaves open are shown, as in Jupyter (whatever the host's MPLBACKEND);
        # a module a phase imports leaves no __pycache__ among its files, as in the container
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "MPLBACKEND": INLINE_BACKEND,
        }
        process = self._process = start_local(self._runtime, cwd=self.workspace.root, env=env)
        self._tell("group", process.pid)  # its SIGTERM ends every kernel it forked
        return lambda: process.poll() is not None

    def _tell(self, word: str, pid: int) -> None:
        if self._watchdog is not None:
            self._watchdog.watch(word, pid)

    def _start(self) -> JupyterKernel:
        """Fork one dormant kernel (it answers once ``_activate`` lets it)."""
        key = self._next_key()
        if self._runtime is None:
            raise SandboxUnavailable("the local sandbox is closed")
        client, info = connection_files(
            key, self._runtime, str(self._runtime / key), str(self._runtime / key)
        )
        return self._fork(key, client, info, fallback_kill=_kill_group)

    def quiesce(self) -> None:
        """Kill the kernels handed out (each with its process group). Not isolated: a process
        that left its group (setsid) is out of reach here; the docker backend kills by uid."""
        if self._standby is not None:
            for kernel in self._standby.handed_out():
                kernel.shutdown()
