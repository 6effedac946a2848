"""Which flows live below the served folder, and resolving the names a URL carries.

A flow is named in URLs by its folder relative to the root (``flows/sales-report``); a run
by its id. Both are checked here before any path is built from them: a flow must be a
folder below the root holding a flow.yaml, a run id must look like one and exist.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from praxis.errors import UsageError
from praxis.flows.definition import contract
from praxis.flows.model.flow import Flow
from praxis.flows.model.state import RunState
from praxis.flows.report import history, keeping
from praxis.flows.store.handle import RunHandle
from praxis.flows.store.layout import list_run_ids, run_paths
from praxis.flows.store.state_file import StateCorrupt
from praxis.flows.store.state_file import load as load_state
from sandbox.errors import PathRefused
from sandbox.paths import check_name

SKIP_DIRS = {"runs", "node_modules", "__pycache__", "site-packages", "build", "dist", "venv"}
TEST_DIRS = {"tests", "test"}
IGNORE_FILE = ".praxisignore"
MAX_IGNORE_LINES = 1000
RUN_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z_.-]{0,99}$")
MAX_DEPTH = 6


class NotFound(UsageError):
    """Raised when a URL names a flow, run or file that does not exist below the root."""


@dataclass
class RunRow:
    id: str
    state: RunState | None
    error: str | None = None  # run.json could not be read
    events: Path | None = None  # its events.jsonl, read for its Gate decisions when shown

    @cached_property
    def decisions(self) -> list[history.Decision]:
        """Its Gates' decisions, in order (read from its log when first asked: the flows
        page shows them; the page's polling never asks)."""
        return history.decisions(self.events) if self.events is not None else []

    @property
    def took(self) -> float | None:
        """Seconds from its first phase's start to its last phase's end (or now)."""
        return history.span(self.state) if self.state is not None else None


@dataclass
class FlowRow:
    ref: str  # folder relative to the root, as URLs name it
    name: str
    description: str = ""
    problem: str | None = None  # flow.yaml does not load
    runs: list[RunRow] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)  # flow.yaml's, for a new run's form
    schedule: dict[str, Any] = field(default_factory=dict)  # next tick, last ones (keeper)


def ignored_patterns(root: Path) -> list[str]:
    """Paths (glob patterns, relative to the root) that ``<root>/.praxisignore`` names."""
    try:
        lines = (root / IGNORE_FILE).read_text(encoding="utf-8").splitlines()[:MAX_IGNORE_LINES]
    except (OSError, UnicodeError):
        return []
    patterns = []
    for line in lines:
        line = line.strip().strip("/")
        if line and not line.startswith("#"):
            patterns.append(line)
    return patterns


def skipped(rel: str, name: str, patterns: list[str]) -> bool:
    """Whether the folder ``rel`` (relative to the root) is left out of the flow list."""
    if name.startswith(".") or name in SKIP_DIRS or name in TEST_DIRS:
        return True
    return any(fnmatch.fnmatchcase(rel, p) for p in patterns)


def find_flows(root: Path) -> list[str]:
    """Folders below ``root`` holding a flow.yaml, relative to it, sorted.

    Not walked: hidden folders, ``runs/`` and tool folders (SKIP_DIRS), folders named
    ``tests`` or ``test`` (their flow.yaml files are test material, often broken on
    purpose), and what ``<root>/.praxisignore`` names.
    """
    found: list[str] = []
    base = root.resolve()
    patterns = ignored_patterns(base)
    for here, dirs, files in os.walk(base):
        rel = Path(here).relative_to(base)
        if "flow.yaml" in files:
            found.append(rel.as_posix())
            dirs[:] = []
            continue
        if len(rel.parts) >= MAX_DEPTH:
            dirs[:] = []
            continue
        dirs[:] = sorted(d for d in dirs if not skipped((rel / d).as_posix(), d, patterns))
    return sorted(found)


def flow_rows(root: Path) -> list[FlowRow]:
    rows = []
    for ref in find_flows(root):
        folder = root.resolve() / ref
        flow, report = contract.load(folder)
        if flow is None:
            first = report.errors[0] if report.errors else "does not load"
            rows.append(FlowRow(ref=ref, name=folder.name, problem=str(first)))
            continue
        row = FlowRow(ref=ref, name=flow.name, description=flow.description)
        row.params = dict(flow.params)
        if flow.schedule is not None:
            row.schedule = keeping.schedule_facts(flow, keeping.clock_from()())
        row.runs = run_rows(folder)
        rows.append(row)
    return rows


def run_row(folder: Path, run_id: str) -> RunRow:
    try:
        return RunRow(run_id, load_state(run_paths(folder, run_id).state))
    except StateCorrupt as exc:
        return RunRow(run_id, None, exc.reason)


def run_rows(folder: Path) -> list[RunRow]:
    """The flow's runs, newest first (a run deleted while they are read is left out)."""
    rows = []
    for run_id in reversed(list_run_ids(folder)):
        paths = run_paths(folder, run_id)
        try:
            rows.append(RunRow(run_id, load_state(paths.state), events=paths.events))
        except StateCorrupt as exc:
            if paths.root.is_dir():
                rows.append(RunRow(run_id, None, exc.reason))
    return rows


def flow_folder(root: Path, ref: str) -> Path:
    """The folder of flow ``ref`` below ``root``; NotFound for anything else."""
    base = root.resolve()
    if ref in ("", "."):
        folder = base
    else:
        try:
            check_name(ref)
        except PathRefused as exc:
            raise NotFound(f"flow {ref!r}: {exc.reason}") from None
        folder = (base / ref).resolve()
    if not folder.is_relative_to(base) or not (folder / "flow.yaml").is_file():
        raise NotFound(f"no flow {ref!r} below {root}")
    return folder


def load_flow(root: Path, ref: str) -> Flow:
    return contract.require(flow_folder(root, ref))


def open_run(root: Path, ref: str, run_id: str) -> RunHandle:
    """The run ``run_id`` of flow ``ref``; NotFound when either does not exist."""
    if not RUN_ID.match(run_id or ""):
        raise NotFound(f"{run_id!r} is not a run id")
    flow = load_flow(root, ref)
    if run_id not in list_run_ids(flow.root):
        raise NotFound(f"{flow.name} has no run {run_id!r}")
    return RunHandle.open(flow, run_id)
