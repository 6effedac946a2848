"""Flows below a folder that is not a flow: what ``praxis status`` and ``praxis runs`` show
when FLOW (``.`` by default) holds no flow.yaml and no folder above it does.

The walk is bounded (a few levels, a few hundred folders), follows no link, and does not
enter a flow's folder, run folders or hidden folders.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

DEFINITION = "flow.yaml"
DEPTH = 3  # levels below the folder: ./flows/<flow>/flow.yaml is two
FOLDERS = 500  # folders looked at, at most
SKIP = {"runs", "node_modules", "__pycache__", "site-packages"}


@dataclass(frozen=True)
class Found:
    """A flow found below the folder: its path as shown, and its newest run's state."""

    path: str
    name: str
    newest: str  # "no runs yet", "20261130-...: paused at the Gate after flag", ...
    run: str | None = None  # the newest run's id


def flows_below(root: Path, *, depth: int = DEPTH, folders: int = FOLDERS) -> list[Path]:
    """Flow folders below ``root`` (not ``root`` itself), nearest first, then by name."""
    found: list[Path] = []
    level = [root]
    seen = 0
    for _ in range(depth):
        below: list[Path] = []
        for folder in level:
            try:
                with os.scandir(folder) as entries:
                    names = sorted(
                        e.name
                        for e in entries
                        if e.is_dir(follow_symlinks=False)
                        and not e.name.startswith(".")
                        and e.name not in SKIP
                    )
            except OSError:
                continue
            for name in names:
                seen += 1
                if seen > folders:
                    return found
                path = folder / name
                if _is_definition(path / DEFINITION):
                    found.append(path)  # a flow's own folders are not looked into
                else:
                    below.append(path)
        level = below
    return found


def _is_definition(path: Path) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False

    return stat.S_ISREG(st.st_mode)


def describe(root: Path, paths: list[Path]) -> list[Found]:
    """Each flow's name (from its folder) and its newest run's state, read without a lock."""
    from .flows.store.layout import newest, run_paths
    from .flows.store.state_file import StateCorrupt, load

    out = []
    for path in paths:
        shown = _shown(root, path)
        run_id = newest(path)
        if run_id is None:
            out.append(Found(shown, path.name, "no runs yet"))
            continue
        try:
            state = load(run_paths(path, run_id).state)
        except StateCorrupt as exc:
            out.append(Found(shown, path.name, f"run {run_id}: unreadable ({exc.reason})", run_id))
            continue
        where = f" at the Gate after {state.gate}" if state.waiting == "gate" else ""
        out.append(Found(shown, path.name, f"run {run_id}: {state.status}{where}", run_id))
    return out


def latest(found: list[Found]) -> Found | None:
    """The flow whose newest run was made last (run ids sort by creation time)."""
    with_runs = [f for f in found if f.run is not None]
    return max(with_runs, key=lambda f: f.run or "") if with_runs else None


def _shown(root: Path, path: Path) -> str:
    rel = os.path.relpath(path, Path.cwd())
    return rel if not rel.startswith("..") else str(path.resolve())
