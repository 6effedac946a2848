"""Run folders from before the flow had a content store, upgraded once (``praxis upgrade``).

Such a run keeps its own ``runs/<id>/objects/`` and has no ``refs``. It reads as it is
(``RunPaths.object``); a command that would change it is refused (``OldLayout``) until
``praxis upgrade FLOW`` moved its objects into the flow's store, each held by the run. No
other command looks for old runs or moves anything.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from ...errors import Refused
from ..model.flow import Flow
from .handle import held, listing
from .layout import RunPaths, run_paths
from .objects import RunStore, store_lock


class OldLayout(Refused):
    """Raised for a change of a run made before the flow's store, until it is upgraded."""

    def __init__(self, run: str) -> None:
        super().__init__(
            f"run {run} keeps its files in runs/{run}/objects/, from before the flow's store:"
            " move them into the store once, then try again"
        )

    def next(self, flow: str) -> str:
        return f"praxis upgrade {flow}"


def is_old(paths: RunPaths) -> bool:
    legacy = paths.legacy_objects
    return not legacy.is_symlink() and legacy.is_dir()


def refuse_old(paths: RunPaths) -> None:
    """OldLayout when the run is one from before the flow's store (one stat)."""
    if is_old(paths):
        raise OldLayout(paths.id)


def migrate(paths: RunPaths) -> int:
    """Move a run's own ``objects/`` (a run from before the flow's store) into the store,
    holding each; the objects moved. The caller holds the run's lock."""
    if not is_old(paths):
        return 0
    legacy = paths.legacy_objects
    store = RunStore(paths)
    names = [e.name for e in os.scandir(legacy) if len(e.name) == 64 and e.is_file()]
    with store_lock(store.flow_root):
        store.root.mkdir(parents=True, exist_ok=True)
        store._hold(names)
        for name in names:
            if not store.has(name):
                os.link(legacy / name, store.path(name))  # the same read-only inode
    shutil.rmtree(legacy)
    return len(names)


@dataclass(frozen=True)
class Upgraded:
    runs: int  # runs upgraded
    objects: int  # objects they held, now in the flow's store


def upgrade(flow: Flow) -> Upgraded:
    """Every old run of the flow upgraded, each under its lock (Busy names a run that is
    advancing: upgrade again once it is done). Runs already upgraded are left as they are."""
    runs = objects = 0
    with listing(flow) as ids:
        for run_id in ids:
            if not is_old(run_paths(flow.root, run_id)):
                continue
            with held(flow, run_id, "changing"):
                objects += migrate(run_paths(flow.root, run_id))
                runs += 1
    return Upgraded(runs, objects)
