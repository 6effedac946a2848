"""Housekeeping of a flow's runs: deleting runs, and gc of the flow's store."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import Refused
from ..model.flow import Flow
from ..store.layout import (
    leftovers,
    list_by_creation,
    run_paths,
    unlist_run,
)
from ..store.lock import PATIENCE, Lock
from ..store.objects import Swept, sweep
from .reuse import prune as prune_reuse

if TYPE_CHECKING:
    pass


from .lifecycle import flow_lock, load_flow


def delete_runs(flow: Flow, ids: list[str], *, keep: int | None = None) -> list[str]:
    """Delete runs ``ids`` (and, with ``keep``, all but the newest ``keep``), under the
    Flow's lock and each run's: a run being advanced is never deleted (Busy, and none is).
    Each leaves the listing at once; its files are removed after the locks are let go, then
    the objects of the flow's store that no run holds any more. The ids deleted."""
    locks: list[Lock] = []
    try:
        with flow_lock(flow, "deleting"):
            known = list_by_creation(flow.root)
            for run_id in ids:
                if run_id not in known:
                    raise Refused(f"{flow.name} has no run {run_id!r} (see: praxis runs)")
            doomed = list(ids)
            if keep is not None:
                doomed += [r for r in known[: max(0, len(known) - keep)] if r not in doomed]
            for run_id in doomed:
                paths = run_paths(flow.root, run_id)
                lock = Lock(paths.lock, "deleting", run=run_id, patience=PATIENCE)
                lock.acquire()
                locks.append(lock)
            gone = [unlist_run(run_paths(flow.root, run_id)) for run_id in doomed]
            gone += leftovers(flow.root)  # of deleters and creators that died: nobody's now
    finally:
        for lock in locks:
            lock.release()
    for folder in dict.fromkeys(gone):
        shutil.rmtree(folder, ignore_errors=True)
    gc(flow)  # the objects only they held
    return doomed


def gc(flow_ref: Flow | str | Path) -> Swept:
    """Remove from the flow's store every object no run holds, and what a creator or deleter
    that died left in ``runs/``; safe while other runs of the flow advance (store.py)."""
    flow = load_flow(flow_ref)
    with flow_lock(flow, "deleting"):
        gone = leftovers(flow.root)  # under the Flow's lock: their makers are gone
        for folder in gone:
            shutil.rmtree(folder, ignore_errors=True)
        prune_reuse(flow.root, list_by_creation(flow.root))
    return sweep(flow.root)
