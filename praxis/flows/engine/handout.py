"""A phase's kernel, handed out on a thread while the runner prepares the workspace.

Handing out a warm kernel (it takes its uid and starts answering) and setting ``params`` and
``note`` in it take one round trip to the kernel (the params cell is the hand-over's first
probe: ``Sandbox.kernel_running``); restoring the workspace and uploading the inputs take
host file operations. Neither needs the other, so they overlap. Only the
runner's own code runs in the kernel before ``kernel()`` returns it: the phase's code runs
after the workspace is ready and recorded.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from sandbox import Kernel, Sandbox, close_thread_loop

from .context import PhaseError


class Handout:
    """``sandbox.kernel()`` and the params cell, started now, on a thread when the sandbox
    allows it (``Sandbox.kernel_in_thread``), else at ``kernel()``."""

    def __init__(
        self, sandbox: Sandbox, params: dict[str, Any], note: str | None, timeout: float
    ) -> None:
        self._sandbox = sandbox
        self._code = variables_cell(params, note)
        self._timeout = timeout
        self._kernel: Kernel | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if sandbox.kernel_in_thread:
            self._thread = threading.Thread(target=self._take, name="kernel-handout", daemon=True)
            self._thread.start()

    def _take(self) -> None:
        try:
            self._kernel, result = self._sandbox.kernel_running(self._code, timeout=self._timeout)
            if not result.ok:
                raise PhaseError(f"could not set params and note in the kernel: {result.evalue}")
        except BaseException as exc:  # raised on the runner's thread by kernel()
            self._error = exc
        finally:
            if self._thread is not None:
                close_thread_loop()

    def kernel(self) -> Kernel:
        """The kernel, ``params`` and ``note`` set; raises what handing it out raised."""
        if self._thread is None:
            self._take()
        else:
            self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._kernel is not None
        return self._kernel

    def close(self) -> None:
        """Wait for the hand-out and shut the kernel down (idempotent)."""
        if self._thread is not None:
            self._thread.join()
        if self._kernel is not None:
            self._kernel.shutdown()


def variables_cell(params: dict[str, Any], note: str | None) -> str:
    """Code that sets ``params`` and ``note`` in the kernel's namespace, from JSON."""
    literal = json.dumps(json.dumps({"params": params, "note": note}))
    return (
        f"import json as _j\n_v = _j.loads({literal})\n"
        "params, note = _v['params'], _v['note']\ndel _j, _v\n"
    )
