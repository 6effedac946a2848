"""A schedule's ticks: which are due, given the last one started and the time now.

Pure: the time is passed in (epoch seconds from the keeper's clock), croniter computes the
ticks in the schedule's timezone (so ``0 6 * * 1-5`` is six o'clock in Berlin, summer and
winter). Missed ticks (due before now, none started) follow ``catchup``:

- ``latest``: only the newest missed tick starts a run;
- ``all``: each missed tick, oldest first, at most ``MAX_CATCHUP`` (the older ones are
  skipped, and said so);
- ``none``: missed ticks are skipped; only a tick due within ``GRACE`` seconds starts a run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from ..model.flow import Schedule

MAX_CATCHUP = 24  # missed ticks started at most by catchup: all, per look
GRACE = 60.0  # seconds: a tick seen this late is on time (not missed) under catchup: none
MAX_SCAN = 10_000  # ticks walked at most, back from now (a schedule left alone for years)


@dataclass(frozen=True)
class Due:
    start: tuple[float, ...]  # ticks to start a run for, oldest first
    skipped: int  # missed ticks not started
    last: float | None  # the newest tick due (what the record says was handled up to)


def _cron(schedule: Schedule, since: float) -> Any:
    """croniter over ``schedule`` from ``since``, in its timezone (croniter, ~50 ms, loads
    here: `praxis status` of a flow with no schedule never needs it)."""
    from croniter import croniter

    return croniter(schedule.cron, datetime.fromtimestamp(since, ZoneInfo(schedule.timezone)))


def iso(tick: float, zone: str) -> str:
    """A tick as its run's ``tick`` parameter: ISO 8601 in the schedule's timezone."""
    return datetime.fromtimestamp(tick, ZoneInfo(zone)).isoformat()


def after(schedule: Schedule, since: float) -> float:
    """The first tick strictly after ``since``."""
    return float(_cron(schedule, since).get_next(float))


def due(schedule: Schedule, last: float, now: float) -> Due:
    """The ticks in (``last``, ``now``] and which of them to start. Walked back from now,
    at most ``MAX_SCAN`` of them (older ones are not counted among the skipped)."""
    ticks: list[float] = []
    it = _cron(schedule, math.floor(now) + 1)
    while len(ticks) < MAX_SCAN:
        tick = float(it.get_prev(float))
        if tick <= last:
            break
        if tick <= now:
            ticks.append(tick)
    ticks.reverse()
    if not ticks:
        return Due((), 0, None)
    if schedule.catchup == "all":
        chosen = ticks[-MAX_CATCHUP:]
    elif schedule.catchup == "latest":
        chosen = ticks[-1:]
    else:
        chosen = [t for t in ticks[-1:] if now - t <= GRACE]
    return Due(tuple(chosen), len(ticks) - len(chosen), ticks[-1])
