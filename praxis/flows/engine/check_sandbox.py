"""The sandbox a ``checks: {script: ...}`` runs in at a Gate: never this host's Python.

After a phase a check script runs in a fresh kernel of the run's own sandbox. At a Gate
(a web save, ``status``, ``approve``, ``reject``) no run's sandbox is open, so one is opened
for the check: the flow's ``sandbox:`` section (its image and packages, as the person
allowed it: ``isolation``), a workspace of its own holding only the table, and a fresh
kernel that runs the script with ``sys.argv = [script, name]``. A check that cannot run (no
Docker daemon, a local backend not allowed) fails, naming why: it never passes unrun.

A table and script checked once are not checked again by the same process (``_seen``, by
their sha256): the run page, ``status`` and ``approve`` of one edit open one sandbox.
"""

from __future__ import annotations

import hashlib
import tempfile
import threading
import uuid
from pathlib import Path

from sandbox import Options, SandboxError, close_thread_loop, open_backend

from ...errors import PraxisError
from ..definition import flow_files, isolation, packages, sandbox_config
from ..model.flow import Flow

MAX_SCRIPT_BYTES = 1 << 20
SCRIPT_TIMEOUT = 120.0  # seconds a check script may run
_seen: dict[tuple[str, str, str, str], str | None] = {}  # -> the failure's message, or None
_lock = threading.Lock()


def script_text(flow: Flow, script: str) -> str:
    """The check script's source, read by descriptor inside the flow folder (no link)."""
    return flow_files.text(flow.root, script, MAX_SCRIPT_BYTES)


def prologue(script: str, name: str) -> str:
    """What runs before a check script: its ``sys.argv``, as ``python script name`` gives."""
    return f"import sys\nsys.argv = [{script!r}, {name!r}]\n"


def run_at_gate(flow: Flow, name: str, script: str, data: bytes) -> str | None:
    """Run check ``script`` on table bytes ``data`` (output ``name``) in a sandbox opened for
    it; None when it passed, else why not (one line)."""
    try:
        text = script_text(flow, script)
    except (OSError, SandboxError) as exc:
        return f"{script}: not run: {exc}"
    key = (
        str(flow.root),
        name,
        hashlib.sha256(text.encode()).hexdigest(),
        hashlib.sha256(data).hexdigest(),
    )
    with _lock:
        if key in _seen:
            return _seen[key]
    found = _run(flow, name, script, text, data)
    with _lock:
        _seen[key] = found
    return found


def _run(flow: Flow, name: str, script: str, text: str, data: bytes) -> str | None:
    try:
        backend, options = _options(flow)
    except (PraxisError, SandboxError) as exc:  # a local backend not allowed, no image
        return f"{script}: not run: {exc}"
    with tempfile.TemporaryDirectory(prefix="praxis-check-") as tmp:
        table = Path(tmp) / "table"
        table.write_bytes(data)
        try:
            box = open_backend(
                backend,
                options,
                workspace=Path(tmp) / "workspace",
                name=f"check-{uuid.uuid4().hex[:8]}",
            )
            box.open()
        except SandboxError as exc:
            return f"{script}: not run: no sandbox for the check ({exc})"
        try:
            box.upload(table, name)
            kernel = box.kernel()
            try:
                result = kernel.execute(prologue(script, name) + text, timeout=SCRIPT_TIMEOUT)
            finally:
                kernel.shutdown()
        except SandboxError as exc:
            return f"{script}: {type(exc).__name__}: {exc}"[:500]
        finally:
            box.close()
            close_thread_loop()  # a web request's thread: the kernel client's loop and sockets
    if getattr(result, "status", "ok") == "ok":
        return None
    message = f"{result.ename}: {result.evalue}" if result.evalue else str(result.ename)
    return f"{script}: {message}"[:500]


def _options(flow: Flow) -> tuple[str, Options]:
    """The backend and options a run of ``flow`` would open, for a check."""

    backend = isolation.confine(flow.sandbox)
    options = sandbox_config.opening(flow.sandbox, backend, flow.root)
    return backend, packages.image_options(flow, backend, options)
