"""What a flow's keeper did and will do, as `praxis status`, `praxis check` and the pages show
it: the next tick of a schedule and the last ones (``.praxis/keeper.json``), and the time left
before a Gate's deadline (from its ``gate_waiting`` event). Reads only; the keeper that starts
runs is ``praxis.service.keeper``. The time is a ``Clock``: ``time.time``, or the file that
``$PRAXIS_TEST_CLOCK`` names (tests drive a server's time by writing it).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import units
from ...errors import RecordCorrupt
from ..engine import ticks
from ..model.flow import Flow
from ..store import keeper_state

if TYPE_CHECKING:  # `check` reads a schedule without the run machinery
    from ..store.handle import RunHandle

Clock = Callable[[], float]
CLOCK_ENV = "PRAXIS_TEST_CLOCK"  # tests: a file holding the time (epoch seconds)


def file_clock(path: Path) -> Clock:
    """A clock that reads the time from ``path`` (tests drive it by writing the file)."""

    def now() -> float:
        return float(path.read_text().strip())

    return now


def clock_from(env: Mapping[str, str] = os.environ) -> Clock:
    """``time.time``, or the test clock ``$PRAXIS_TEST_CLOCK`` names."""
    named = env.get(CLOCK_ENV)
    return file_clock(Path(named)) if named else time.time


def waiting_since(run: RunHandle) -> tuple[float | None, bool]:
    """When the run's Gate began waiting, and whether its deadline was told already."""
    since, told = None, False
    for ev in run.log.iter():  # by kind: `praxis status` loads the events' classes only here
        if ev.kind == "gate_waiting" and getattr(ev, "phase", None) == run.state.gate:
            since, told = ev.at, False
        elif ev.kind == "gate_escalated" and getattr(ev, "since", None) == since:
            told = True
    return since, told


def time_left(flow: Flow, run: RunHandle, now: float) -> float | None:
    """Seconds until the Gate the run waits at passes its deadline (negative: past it)."""
    if run.state.waiting != "gate" or not run.state.gate:
        return None
    try:
        deadline = flow.phase(run.state.gate).deadline
    except KeyError:  # flow.yaml changed since: no such phase now
        return None
    if deadline is None:
        return None
    since, _ = waiting_since(run)
    return None if since is None else since + deadline - now


def left_words(left: float) -> str:
    """``1 d 23 h left`` or ``passed 2 h 05 min ago (escalated)``."""
    if left >= 0:
        return f"{units.duration(left)} left"
    return f"passed {units.duration(-left)} ago (its targets are told)"


def schedule_facts(flow: Flow, now: float) -> dict[str, Any]:
    """The schedule as ``status --json`` and the page show it: the next tick, the last ones."""
    sched = flow.schedule
    if sched is None:
        return {}
    try:
        mine = keeper_state.read(flow.root).get("schedule") or {}
    except RecordCorrupt as exc:
        mine = {"problem": str(exc)}
    if (mine.get("cron"), mine.get("timezone")) != (sched.cron, sched.timezone):
        mine = {"problem": mine.get("problem")} if mine.get("problem") else {}
    return {
        "cron": sched.cron,
        "timezone": sched.timezone,
        "catchup": sched.catchup,
        "next": ticks.iso(ticks.after(sched, now), sched.timezone),
        "last": [
            {"tick": t.get("tick"), "run": t.get("run")}
            for t in (mine.get("ticks") or [])[-5:]
            if isinstance(t, dict)
        ],
        "skipped": int(mine.get("skipped") or 0),
        "problem": mine.get("problem"),
    }


def schedule_lines(flow: Flow, now: float) -> list[str]:
    """``praxis status``'s lines of the schedule: the next tick and the last ones."""
    facts = schedule_facts(flow, now)
    if not facts:
        return []
    out = [
        f"schedule: {facts['cron']} ({facts['timezone']}, catchup {facts['catchup']}); "
        f"next tick {facts['next']}"
    ]
    if facts["problem"]:
        out.append(f"  {facts['problem']}")
    for t in facts["last"]:
        out.append(f"  tick {t['tick']}: run {t['run'] or '(starting)'}")
    if facts["skipped"]:
        out.append(f"  {facts['skipped']} missed ticks skipped (catchup {facts['catchup']})")
    return out
