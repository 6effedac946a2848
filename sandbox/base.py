"""The sandbox contract: a workspace that outlives its kernels, and fresh kernels in it.

Modelled on jupyter_client's ``KernelProvisionerBase``: a few primitives, policy stays with
the caller. The caller (the flows runner) decides what to upload, when to snapshot and what
to collect; a backend only moves files and runs code. The contract in three parts:

    SandboxCore          DESIGN.md §2: open, upload, listing, fetch, kernel, close
                         (+ optional hooks with defaults: describe, usable, kernel_running)
    Sweeps               quiesce: nothing a phase started survives between phases
    WorkspaceEdits       remove, make_folder, remove_folder, clear (+ folders, strays,
                         survey with defaults): the runner's restores and Gate edits
    Sandbox              SandboxCore + Sweeps + WorkspaceEdits: what the flows runner drives,
                         and what every backend (docker, local, ray, fake) implements

Each method's docstring says who calls it and when. A backend's file half may come from a
component: ``workspace.WorkspaceFolder`` is the host-folder one the docker, local and fake
backends share (``workspace.OnFolder``).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

OutputCallback = Callable[[str, str], None]  # (stream name, text) as output arrives
GRACE = 5.0  # seconds an interrupted kernel gets to go idle before it is killed


@dataclass(frozen=True)
class FileStat:
    """What ``listing`` reports of one workspace file."""

    size: int
    mtime_ns: int
    ino: int = 0  # with ctime_ns: changes whenever the content can have (0: not known)
    ctime_ns: int = 0


@dataclass
class ExecResult:
    """What one ``execute`` produced.

    ``outputs`` holds the nbformat v4 outputs as Jupyter keeps them (``stream``,
    ``display_data``, ``execute_result``, ``error``: cleared by ``clear_output``, updated by
    ``display_id``), so a record notebook can be built from it as is. ``stdout``/``stderr``
    are the streams as printed, joined. Both are capped: past the limit the text ends with a
    truncation marker and ``truncated`` is true.

    ``execution_count`` is the kernel's (from ``execute_input``), ``execution`` the timings
    nbclient records in a cell's ``metadata.execution``. ``display_ids`` names the outputs
    shown with a ``display_id`` (index in ``outputs`` -> id), and ``display_updates`` the
    last bundle (``data``, ``metadata``) this execute gave each id it showed or updated, for
    a caller that holds an earlier execute's outputs with that id.
    """

    status: str  # "ok" | "error"
    stdout: str = ""
    stderr: str = ""
    result: dict[str, Any] | None = None  # execute_result mime bundle
    display: list[dict[str, Any]] = field(default_factory=list)  # display_data mime bundles
    outputs: list[dict[str, Any]] = field(default_factory=list)
    ename: str | None = None
    evalue: str | None = None
    traceback: list[str] = field(default_factory=list)
    wall: float = 0.0
    truncated: bool = False
    execution_count: int | None = None
    execution: dict[str, str] = field(default_factory=dict)
    display_ids: dict[int, str] = field(default_factory=dict)
    display_updates: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class Kernel(ABC):
    """A fresh interpreter whose working directory is the workspace."""

    # True once ``shutdown`` (or a backend's own release) ran: the kernel runs nothing more.
    # Read by ``Standby`` to forget kernels handed out and ended since.
    closed: bool = False

    @abstractmethod
    def execute(
        self,
        code: str,
        *,
        timeout: float,
        on_output: OutputCallback | None = None,
        store_history: bool = False,
        stop_on_error: bool = True,
    ) -> ExecResult:
        """Run ``code`` and wait for it. Called by the runner, once per cell or tool call.

        ``on_output(stream_name, text)`` ("stdout" or "stderr") is called as stream output
        arrives, with text already within the output cap. ``store_history`` and
        ``stop_on_error`` are the execute_request's: with ``store_history`` the code takes the
        kernel's next execution count (``In [n]``), as a notebook's cells do.

        Raises ``ExecTimeout`` past ``timeout`` seconds (after interrupting, then killing the
        kernel), ``KernelDied`` if the process ends. A Python exception in the code is not
        an error here: it comes back as ``status == "error"`` with ename/evalue/traceback.
        """

    def unfinished(self) -> ExecResult | None:
        """What the last ``execute`` had produced when it was stopped (a timeout, the kernel's
        death, an exception in the caller's thread such as Ctrl-C): its outputs as far as they
        arrived, with the error the kernel sent if it sent one. None when it finished, or when
        the backend cannot tell. Called by an executor after ``execute`` raised."""
        return None

    @abstractmethod
    def interrupt(self) -> None:
        """Send SIGINT to the running code; returns at once."""

    @abstractmethod
    def shutdown(self) -> None:
        """Stop the kernel process. Idempotent; never raises for a kernel already gone."""


class SandboxCore(ABC):
    """One per run: a workspace folder and the kernels that run in it (DESIGN.md §2)."""

    backend: str = "?"
    isolated: bool = True
    # kernel() may run on another thread while this one moves workspace files. The fake runs
    # code in this very process, in the workspace as its working folder: it says False.
    kernel_in_thread: bool = True
    # Set by the caller before open(): where the sandbox's watchdog writes what it ended if
    # the owning process dies without closing the sandbox (``watchdog.py``); None: nowhere.
    watch_report: Path | None = None

    @abstractmethod
    def open(self) -> None:
        """Create or attach the workspace and whatever hosts kernels. Idempotent. Called by
        the runner before a run's first phase (and by ``with``)."""

    @abstractmethod
    def upload(self, src: Path, name: str) -> None:
        """Place host file ``src`` at workspace-relative ``name``, replacing a same-named file.
        Called by the runner for a phase's inputs and a restore's files."""

    @abstractmethod
    def listing(self) -> dict[str, FileStat]:
        """Every regular file of the workspace: relative posix path -> FileStat. Cheap.
        Called by the runner after each phase, to see what it wrote."""

    @abstractmethod
    def fetch(self, name: str, dest: Path) -> str | None:
        """Copy workspace file ``name`` to host path ``dest`` (regular files only). Returns
        the sha256 of what was copied when the backend computed it on the way, else None.
        Called by the runner to collect a phase's outputs into the run folder."""

    @abstractmethod
    def kernel(self) -> Kernel:
        """A FRESH interpreter for one phase; a warm standby makes this fast. Called by the
        runner once per phase (and per check run at a Gate)."""

    @abstractmethod
    def close(self) -> None:
        """Stop kernels and remove the container. Never deletes the workspace. Idempotent.
        Called by the runner when a run stops or waits at a Gate (and by ``with``)."""

    # -- optional hooks: a backend overrides them when it can do better --------------------

    def kernel_running(self, code: str, *, timeout: float) -> tuple[Kernel, ExecResult]:
        """A fresh kernel, and the result of ``code`` run in it first, once. Called by the
        runner's hand-out (a phase's prologue). A backend may send ``code`` as part of the
        hand-over (one round trip fewer); this default runs it after ``kernel()``."""
        kernel = self.kernel()
        return kernel, kernel.execute(code, timeout=timeout)

    def usable(self) -> bool:
        """Whether this opened sandbox can still run code (docker: its container is still
        there and running). Called by the runner before it reuses a sandbox kept open at a
        Gate. Backends that cannot tell say True."""
        return True

    def describe(self) -> dict[str, Any]:
        """What the run's record says about this sandbox (backend, image, isolation). Called
        by the runner when a run's sandbox opens and when a phase's error is worded."""
        return {"backend": self.backend, "isolated": self.isolated}

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Sweeps(ABC):
    """The extension that ends what a phase started: the flows runner needs it, so that files
    carry state between phases and processes never do."""

    @abstractmethod
    def quiesce(self) -> None:
        """Stop every process that code in this sandbox started (its kernels included) and
        return once none runs. The runner calls it after a phase's code ends and before it
        touches the workspace or asks for the next kernel: nothing of a phase survives it.
        Where the backend can, every workspace file is then read-only to later code (docker:
        root's, 0444). Backends without processes of their own (the fake) have nothing to
        stop."""


class WorkspaceEdits(ABC):
    """The extension that changes the workspace beyond ``upload``: the runner's restore of a
    recorded workspace (a rerun from a phase, a reused result) and a Gate's edits call it."""

    @abstractmethod
    def listing(self) -> dict[str, FileStat]:
        """As ``SandboxCore.listing``: the defaults below are built on it."""

    @abstractmethod
    def remove(self, name: str) -> None:
        """Remove workspace file (or link, FIFO, ...) ``name``, never following a link, and
        the folders it leaves empty; a name that is not there is not an error. Called by a
        restore for a file the recorded workspace does not hold."""

    @abstractmethod
    def make_folder(self, name: str) -> None:
        """Create workspace folder ``name`` (and those above it). Called by a restore for a
        recorded empty folder."""

    @abstractmethod
    def remove_folder(self, name: str) -> None:
        """Remove workspace folder ``name`` if it is empty; otherwise leave it. Called by a
        restore, deepest first, for a folder the recorded workspace does not hold."""

    @abstractmethod
    def clear(self) -> None:
        """Remove everything in the workspace, whatever its depth or number of entries.
        Called by a restore of a workspace a walk refused: it starts from nothing."""

    def folders(self) -> set[str]:
        """Every folder of the workspace (relative posix paths), empty ones included. Called
        by a restore and by the runner's record of a workspace. Backends that cannot list
        folders report those that hold a file (this default)."""
        found: set[str] = set()
        for name in self.listing():
            parts = name.split("/")[:-1]
            found.update("/".join(parts[: i + 1]) for i in range(len(parts)))
        return found

    def strays(self) -> set[str]:
        """Workspace entries that are neither regular files nor folders (links, FIFOs,
        sockets, devices), never followed. Called by the runner's record of a workspace, to
        remove them. Backends that cannot tell report none (this default)."""
        return set()

    def survey(self) -> tuple[dict[str, FileStat], set[str], set[str]]:
        """``listing()``, ``folders()`` and ``strays()`` at once; a backend that can look at
        its workspace once for all three does. Called by the runner after each phase."""
        return self.listing(), self.folders(), self.strays()


class Sandbox(SandboxCore, Sweeps, WorkspaceEdits):
    """What the flows runner drives: the core and both extensions. Every backend is one."""


def close_thread_loop() -> None:
    """Close the event loop jupyter_client's sync wrappers left on this thread. Call it
    at the end of a thread that used a kernel: left open, the loop is collected with the
    thread and warns about an unclosed event loop (and its sockets)."""
    if threading.current_thread() is threading.main_thread():
        return
    import asyncio  # here: `import sandbox` stays light for the quick commands

    try:
        loop = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:
        return
    if not loop.is_running():
        if not loop.is_closed():
            loop.close()
        asyncio.set_event_loop(None)
