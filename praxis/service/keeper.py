"""The keeper: what starts a flow's runs when nobody types ``praxis run`` (DESIGN §16).

``tend(flow, clock=..., start=...)`` looks at one flow once, under the flow's keeper lock
(``<flow>/.praxis/keeper.lock``): its ``schedule:`` ticks due by ``clock()``, its
``trigger:`` files that settled, and its Gates waiting past their ``deadline:``. Each tick and
each version of a file (path, size, mtime_ns) starts exactly one run (``start``; by default
``acting.begin``, paused at its first phase, for the caller to advance), recorded in
``keeper.json`` (``store/keeper_state.py``): claimed before the run is begun, marked started
after, and a claim a crash left settled by finding its run (by its ``tick``/``file``
parameter) among the runs created since the claim, so neither a restart nor a second keeper
on the folder starts one twice. ``praxis serve`` tends every flow it serves, once a second;
``praxis schedule FLOW --once`` tends one flow once, for a system cron.

Time is the caller's ``Clock`` (epoch seconds): ``time.time``, or, for tests, ``file_clock``
(``$PRAXIS_TEST_CLOCK`` names a file holding the time). Nothing here sleeps. What status and
the pages show of it (next tick, last ones, a Gate's time left) is ``report/keeping.py``.
"""

from __future__ import annotations

import fnmatch
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox.files import folder_below

from ..errors import RecordCorrupt
from ..flows.definition import unattended
from ..flows.engine import notify, ticks
from ..flows.engine.notify import Notifier
from ..flows.model.flow import Flow
from ..flows.report.keeping import CLOCK_ENV, Clock, clock_from, file_clock, waiting_since
from ..flows.store import keeper_state
from ..flows.store.handle import RunHandle
from ..flows.store.layout import list_by_creation, newest, run_paths
from ..flows.store.lock import Lock
from ..flows.store.state_file import load as load_state
from . import acting

Start = Callable[[Flow, dict[str, str]], str]  # begin a run with these params; its id
PATIENCE = 30.0  # seconds a keeper waits for another one looking at the same flow
MAX_LISTED = 1000  # files of a trigger's folder looked at per look
MAX_RUNS_LOOKED = 200  # newest runs looked at for Gates past their deadline, claims left


__all__ = ["CLOCK_ENV", "Clock", "Started", "begin", "clock_from", "file_clock", "kept", "tend"]


@dataclass(frozen=True)
class Started:
    flow: Path
    run: str
    why: str  # "tick 2026-12-07T06:00:00+01:00", "file incoming/a.csv"


def begin(flow: Flow, params: dict[str, str]) -> str:
    return acting.begin(flow, params=params).id


def kept(flow: Flow) -> bool:
    """The flow has anything for a keeper to do."""
    return bool(flow.schedule or flow.trigger or any(p.deadline for p in flow.phases))


def tend(
    flow: Flow, *, clock: Clock = time.time, start: Start = begin, notifier: Notifier | None = None
) -> list[Started]:
    """Start what is due in ``flow`` now; tell the targets of Gates past their deadline."""
    if not kept(flow):
        return []
    keeper_state.folder(flow.root)
    with Lock(keeper_state.lock_path(flow.root), "keeping", patience=PATIENCE):
        record = keeper_state.read(flow.root)
        now = clock()
        started: list[Started] = []
        if flow.schedule is not None:
            started += _schedule(flow, record, now, start)
        if flow.trigger is not None:
            started += _files(flow, record, now, start)
        _deadlines(flow, now, notifier)
        keeper_state.write(flow.root, record)
    return started


# -- schedule ---------------------------------------------------------------------------------


def _schedule(flow: Flow, record: dict[str, Any], now: float, start: Start) -> list[Started]:
    sched = flow.schedule
    assert sched is not None
    mine = record.get("schedule")
    if not isinstance(mine, dict) or (mine.get("cron"), mine.get("timezone")) != (
        sched.cron,
        sched.timezone,
    ):  # new, or changed: ticks count from now
        mine = record["schedule"] = {
            "cron": sched.cron, "timezone": sched.timezone, "since": now, "last": None,
            "skipped": 0, "ticks": [],
        }  # fmt: skip
        keeper_state.write(flow.root, record)
    started = [
        s for t in mine["ticks"] if (s := _settle(flow, record, t, unattended.TICK_PARAM, start))
    ]
    last = mine["last"] if mine.get("last") is not None else mine["since"]
    due = ticks.due(sched, float(last), now)
    if due.last is None:
        return started
    mine["skipped"] = int(mine.get("skipped", 0)) + due.skipped
    mine["last"] = due.last
    claims = [_claim(flow, {"tick": ticks.iso(t, sched.timezone), "at": t}) for t in due.start]
    mine["ticks"].extend(claims)
    keeper_state.write(flow.root, record)
    for claim in claims:
        started.append(_start(flow, record, claim, unattended.TICK_PARAM, claim["tick"], start))
    return started


# -- files ------------------------------------------------------------------------------------


def _files(flow: Flow, record: dict[str, Any], now: float, start: Start) -> list[Started]:
    trig = flow.trigger
    assert trig is not None
    seen = record.setdefault("files", {})
    started = [
        s for e in seen.values() if (s := _settle(flow, record, e, unattended.FILE_PARAM, start))
    ]
    listed, whole = _listing(flow.root, trig.files)
    for rel, sig in listed.items():
        entry = seen.get(rel)
        if entry is None or entry.get("sig") != sig:
            handled = entry.get("handled") if entry else None
            seen[rel] = {"file": rel, "sig": sig, "since": now, "handled": handled}
            continue
        if entry.get("handled") == sig or now - float(entry["since"]) < trig.settle:
            continue
        entry.update(_claim(flow, {"handled": sig}))
        keeper_state.write(flow.root, record)
        started.append(_start(flow, record, entry, unattended.FILE_PARAM, rel, start))
    if whole:  # forget files that are gone (a listing cut short forgets nothing)
        for rel in [r for r in seen if r not in listed and seen[r].get("state") != "starting"]:
            del seen[rel]
    if len(seen) > keeper_state.MAX_FILES:
        for rel in list(seen)[: len(seen) - keeper_state.MAX_FILES]:
            del seen[rel]
    return started


def _listing(root: Path, pattern: str) -> tuple[dict[str, list[int]], bool]:
    """{relative path: [size, mtime_ns]} of the regular files matching ``pattern`` (no link
    followed, dot files skipped), and whether the listing is whole."""
    folder, names = unattended.split(pattern)
    found: dict[str, list[int]] = {}
    try:
        with folder_below(root, [p for p in folder.split("/") if p]) as fd, os.scandir(fd) as it:
            for entry in it:
                if len(found) >= MAX_LISTED:
                    return found, False
                if entry.name.startswith(".") or not fnmatch.fnmatchcase(entry.name, names):
                    continue
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode):
                    rel = f"{folder}/{entry.name}" if folder else entry.name
                    found[rel] = [st.st_size, st.st_mtime_ns]
    except (FileNotFoundError, NotADirectoryError):
        return {}, True
    except OSError:  # a link on the way, a folder that cannot be read: nothing to start
        return {}, False
    return found, True


# -- a claim, its run -------------------------------------------------------------------------


def _claim(flow: Flow, entry: dict[str, Any]) -> dict[str, Any]:
    return {**entry, "state": "starting", "after": newest(flow.root) or "", "run": None}


def _start(
    flow: Flow, record: dict[str, Any], entry: dict[str, Any], param: str, value: str, start: Start
) -> Started:
    entry["run"] = start(flow, {param: value})
    entry["state"] = "started"
    keeper_state.write(flow.root, record)
    return Started(flow.root, entry["run"], f"{param} {value}")


def _settle(
    flow: Flow, record: dict[str, Any], entry: Any, param: str, start: Start
) -> Started | None:
    """A claim a crash left (``starting``): its run if one was begun since, else begin it."""
    if not isinstance(entry, dict) or entry.get("state") != "starting":
        return None
    value = str(entry.get("tick") or entry.get("file"))
    after = str(entry.get("after") or "")
    for run_id in reversed(list_by_creation(flow.root)[-MAX_RUNS_LOOKED:]):
        if run_id <= after:
            break
        try:
            params = load_state(run_paths(flow.root, run_id).state).params
        except (RecordCorrupt, OSError):
            continue
        if params.get(param) == value:
            entry["run"], entry["state"] = run_id, "started"
            keeper_state.write(flow.root, record)
            return None
    return _start(flow, record, entry, param, value, start)


# -- deadlines --------------------------------------------------------------------------------


def _deadlines(flow: Flow, now: float, notifier: Notifier | None) -> None:
    timed = {p.id: p for p in flow.phases if p.deadline is not None and p.escalate}
    if not timed:
        return
    for run_id in list_by_creation(flow.root)[-MAX_RUNS_LOOKED:]:
        try:
            state = load_state(run_paths(flow.root, run_id).state)
        except (RecordCorrupt, OSError):
            continue
        phase = timed.get(state.gate or "") if state.waiting == "gate" else None
        if phase is None or phase.deadline is None:
            continue
        run = RunHandle.open(flow, run_id)
        since, told = waiting_since(run)
        if since is not None and not told and now >= since + phase.deadline:
            notify.escalate(run, phase.escalate, since, notifier)
