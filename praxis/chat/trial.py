"""Trying what the chat wrote, away from the flow's own runs.

``try_phases`` copies the flow folder (without ``runs/``, ``run.lock`` and ``.chat/``) to a
temporary folder and runs phases there through ``praxis.service``: begin, then advance until
the chosen phase is done. A Gate on the way is passed in that throwaway run only. The copy is
removed afterwards; the flow's own folder and its runs are never touched.

``Scratch`` is the sandbox ``run_python`` uses: the flow's sandbox configuration, a temporary
workspace holding a copy of the flow's files, one kernel kept for the chat.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from praxis.errors import Refused
from praxis.flows.definition import contract, isolation, sandbox_config
from praxis.flows.model.flow import DEFAULT_TIMEOUT, Flow, SandboxSettings
from praxis.flows.store.handle import RunHandle
from praxis.flows.store.lock import Busy
from praxis.llm.given import Approver
from praxis.service import acting
from sandbox import Kernel, Sandbox, open_backend

PREVIEW_CHARS = 600
PREVIEW_LINES = 8
IGNORED = ("runs", "run.lock", ".chat", "__pycache__")
MAX_UPLOAD_BYTES = 200 * 1024 * 1024


def with_sandbox(flow: Flow, override: Mapping[str, Any] | None) -> Flow:
    """``flow`` with ``override`` laid over its ``sandbox:`` section (SandboxInvalid for an
    option the backend does not take)."""
    if not override:
        return flow
    return dataclasses.replace(
        flow, sandbox=sandbox_config.overlay(flow.sandbox, override, flow.root)
    )


def try_phases(
    folder: Path,
    phase_id: str | None,
    *,
    sandbox: Mapping[str, Any] | None = None,
    approver: Approver | None = None,
) -> str:
    """Run the flow up to ``phase_id`` (None: until its first Gate or its end) in a throwaway
    copy, and describe the outcome for a person or a model."""
    flow, report = contract.load(folder)
    if flow is None:
        lines = "\n".join(report.lines())
        return f"cannot run: flow.yaml has errors (fix them first; `check` lists them):\n{lines}"
    ids = [p.id for p in flow.phases]
    if phase_id is not None and phase_id not in ids:
        return f"refused: no phase {phase_id!r}; phases: {', '.join(ids)}"
    try:
        return _try_copy(folder, ids, phase_id, sandbox, approver)
    except (contract.FlowInvalid, sandbox_config.SandboxInvalid, Refused, Busy) as exc:
        return f"cannot run: {type(exc).__name__}: {exc}"


def _try_copy(
    folder: Path,
    ids: list[str],
    phase_id: str | None,
    sandbox: Mapping[str, Any] | None,
    approver: Approver | None,
) -> str:
    with tempfile.TemporaryDirectory(prefix="praxis-try-") as tmp:
        copy = Path(tmp) / folder.name
        shutil.copytree(folder, copy, symlinks=True, ignore=shutil.ignore_patterns(*IGNORED))
        trial = contract.require(copy)
        if phase_id is not None:
            trial = dataclasses.replace(trial, phases=trial.phases[: ids.index(phase_id) + 1])
        trial = with_sandbox(trial, sandbox)
        chosen = sandbox is not None and "backend" in sandbox  # the caller's, not the flow's
        return _run(trial, phase_id, approver, chosen)


def _run(flow: Flow, target: str | None, approver: Approver | None, chosen: bool) -> str:
    make = (
        partial(acting.default_sandbox, chosen=True)
        if chosen
        else acting.confined(flow, acting.default_sandbox)  # switched to local: refused, no run
    )
    run = acting.begin(flow)
    passed: list[str] = []
    while True:
        state = acting.advance(flow, run.id, approver=approver, sandbox=make)
        if state.waiting == "gate" and target is not None and state.gate != target:
            passed.append(str(state.gate))
            acting.approve(flow, run.id, expect_revision=state.revision)
            continue
        break
    handle = RunHandle.open(flow, run.id)
    return describe_outcome(handle, passed)


def describe_outcome(run: RunHandle, passed: list[str]) -> str:
    state = run.state
    at_gate = f", at the Gate after {state.gate}" if state.waiting == "gate" else ""
    lines = [f"throwaway run on the {state.backend or '?'} backend: {state.status}{at_gate}"]
    for gate in passed:
        lines.append(f"(the Gate after {gate} was passed without review in this throwaway run)")
    for ps in state.phases:
        lines.append(f"- phase {ps.id}: {ps.status}")
        if ps.status == "failed":
            lines.append(f"  error: {state.error or 'failed'}")
            failing = failing_line(run, ps.id)
            if failing:
                lines.append(f"  failing line: {failing}")
        if ps.status != "done":
            continue
        for name in run.flow.phase(ps.id).outputs:
            path = run.paths.out(name)
            if path.is_file():
                lines.append(f"  output {name} ({path.stat().st_size:,} bytes):")
                lines.append(_indent(preview(path)))
    return "\n".join(lines)


def preview(path: Path) -> str:
    """The first lines of an output, with `...` when there is more."""
    with open(path, "rb") as fh:
        data = fh.read(PREVIEW_CHARS * 2)
    lines = data.decode("utf-8", errors="replace").splitlines()
    joined = "\n".join(lines[:PREVIEW_LINES])
    more = len(data) < path.stat().st_size or len(lines) > PREVIEW_LINES
    more = more or len(joined) > PREVIEW_CHARS
    return joined[:PREVIEW_CHARS] + ("\n..." if more else "")


def failing_line(run: RunHandle, phase: str) -> str | None:
    """The last traceback frame line of the phase's record (``----> 7 x = 1/0``), if any."""
    path = run.paths.record(phase)
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    found = None
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            for line in out.get("traceback", []):
                for row in _strip_ansi(line).splitlines():
                    if row.lstrip().startswith("---->") or row.strip().startswith("File "):
                        found = row.strip()
    return found


def _strip_ansi(text: str) -> str:

    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


class Scratch:
    """A scratch sandbox for ``run_python``: opened on first use, closed with the chat."""

    def __init__(self, folder: Path, name: str, override: Mapping[str, Any] | None) -> None:
        self.folder = folder
        self.name = name
        self.override = dict(override or {})
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._box: Sandbox | None = None
        self._kernel: Kernel | None = None
        self._uploaded: dict[str, tuple[int, int]] = {}
        self.timeout = float(DEFAULT_TIMEOUT)

    def kernel(self, files: list[tuple[str, int]]) -> tuple[Sandbox, Kernel]:
        """The open sandbox and its kernel, with the flow's current files uploaded."""
        if self._box is None:
            settings, backend = self._settings()
            options = sandbox_config.opening(settings, backend, self.folder)
            self.timeout = settings.timeout
            self._tmp = tempfile.TemporaryDirectory(prefix="praxis-chat-")
            workspace = Path(self._tmp.name) / "workspace"
            box = open_backend(backend, options, workspace=workspace, name=self.name)
            box.open()
            self._box = box
        self._upload(files)
        if self._kernel is None:
            self._kernel = self._box.kernel()
        return self._box, self._kernel

    def _settings(self) -> tuple[SandboxSettings, str]:
        """The flow's sandbox settings with the chat's override, and the backend to open."""
        flow, _ = contract.load(self.folder)
        settings = flow.sandbox if flow is not None else SandboxSettings()
        settings = sandbox_config.overlay(settings, self.override, self.folder)
        if "backend" in self.override:  # the caller's choice, not the flow's
            return settings, isolation.backend_of(settings)
        return settings, isolation.confine(settings)  # LocalRefused: flow.yaml may not grant it

    def _upload(self, files: list[tuple[str, int]]) -> None:
        assert self._box is not None
        for rel, size in files:
            if size > MAX_UPLOAD_BYTES:
                continue
            path = self.folder / rel
            try:
                st = os.lstat(path)
            except OSError:
                continue
            key = (st.st_size, st.st_mtime_ns)
            if self._uploaded.get(rel) != key:
                self._box.upload(path, rel)
                self._uploaded[rel] = key

    def close(self) -> None:
        if self._kernel is not None:
            self._kernel.shutdown()
            self._kernel = None
        if self._box is not None:
            self._box.close()
            self._box = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
