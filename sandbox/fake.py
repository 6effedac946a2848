"""An in-process sandbox for tests of code that drives sandboxes (httpx MockTransport style).

``FakeSandbox`` is public and passed like any backend (``open_sandbox({"backend": "fake"})``
or directly). Its workspace is a real folder; ``execute`` runs the code with ``exec`` in a
fresh namespace per kernel, the working directory set to the workspace, stdout/stderr
captured. A ``handler(code, workspace) -> ExecResult`` (which may raise ExecTimeout or
KernelDied) replaces that for scripted behaviour. NOT isolated, and not thread-safe: the
working directory is the process's own.
"""

from __future__ import annotations

import contextlib
import io
import os
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .base import ExecResult, Kernel, OutputCallback
from .errors import KernelDied, SandboxUnavailable
from .options import FakeOptions
from .workspace import FolderSandbox, WorkspaceFolder

Handler = Callable[[str, Path], ExecResult]


class FakeKernel(Kernel):
    """One fresh namespace; records what it ran in its sandbox's ``executed``."""

    def __init__(self, sandbox: FakeSandbox) -> None:
        self.sandbox = sandbox
        self.namespace: dict[str, Any] = {"__name__": "__main__"}
        self.closed = False

    def execute(
        self,
        code: str,
        *,
        timeout: float,
        on_output: OutputCallback | None = None,
        store_history: bool = False,
        stop_on_error: bool = True,
    ) -> ExecResult:
        if self.closed:
            raise KernelDied("the kernel was shut down")
        self.sandbox.executed.append(code)
        root = self.sandbox.workspace.root
        if self.sandbox.handler is not None:
            result = self.sandbox.handler(code, root)
        else:
            result = _run(code, self.namespace, root)
        if on_output is not None:  # all at once: the fake has no stream to follow
            for out in result.outputs:
                if out.get("output_type") == "stream" and out.get("text"):
                    on_output(str(out.get("name", "stdout")), str(out["text"]))
        return result

    def interrupt(self) -> None:
        pass

    def shutdown(self) -> None:
        self.closed = True


def _run(code: str, namespace: dict[str, Any], cwd: Path) -> ExecResult:
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    previous = os.getcwd()
    error: BaseException | None = None
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            with warnings.catch_warnings():  # a kernel's own process would not warn either
                warnings.simplefilter("ignore", ResourceWarning)
                exec(compile(code, "<cell>", "exec"), namespace)
    except (Exception, SystemExit) as exc:  # the code's own error, reported like IPython's
        error = exc
    finally:
        os.chdir(previous)
    outputs: list[dict[str, Any]] = []
    for name, buf in (("stdout", out), ("stderr", err)):
        if buf.getvalue():
            outputs.append({"output_type": "stream", "name": name, "text": buf.getvalue()})
    result = ExecResult(
        status="ok",
        stdout=out.getvalue(),
        stderr=err.getvalue(),
        outputs=outputs,
        wall=time.monotonic() - started,
    )
    if error is not None:
        result.status = "error"
        result.ename = type(error).__name__
        result.evalue = str(error)
        result.traceback = traceback.format_exception(error)
        outputs.append(
            {
                "output_type": "error",
                "ename": result.ename,
                "evalue": result.evalue,
                "traceback": result.traceback,
            }
        )
    return result


class FakeSandbox(FolderSandbox):
    """In-process backend: a real workspace folder, ``exec`` (or ``handler``) for code."""

    backend = "fake"
    isolated = False
    kernel_in_thread = False

    def __init__(
        self,
        *,
        workspace: Path,
        name: str,
        options: FakeOptions | None = None,
        handler: Handler | None = None,
    ) -> None:
        self.workspace = WorkspaceFolder(Path(workspace), mode=None)
        self.name = name
        self.handler = handler
        self.options = options or FakeOptions()
        self.executed: list[str] = []
        self.kernels_started = 0
        self.opened = False
        self.closed = False

    def open(self) -> None:
        self.workspace.open()
        self.opened = True
        self.closed = False

    def kernel(self) -> Kernel:
        if not self.opened:
            raise SandboxUnavailable("the fake sandbox is not open; call open() first")
        self.kernels_started += 1
        return FakeKernel(self)

    def quiesce(self) -> None:
        """Nothing runs in the fake between calls: there is nothing to stop."""

    def close(self) -> None:
        self.opened = False
        self.closed = True
