"""flow.yaml's ``schedule:`` and ``trigger:`` read and checked: when a flow runs by itself.

```yaml
schedule: {cron: "0 6 * * 1-5", timezone: Europe/Berlin, catchup: latest}
trigger: {files: "incoming/*.csv", settle: 30s}
```

A cron expression is parsed by croniter (five fields; six with seconds are refused: a
keeper looks once a second at most), a timezone is an IANA name zoneinfo knows. A trigger's
``files`` is a folder of the flow and a pattern of names in it (``*``, ``?``, ``[...]`` in the
last part only): relative, inside the flow, never in its ``runs/`` or ``.praxis/``. Durations
are a number of seconds or a number with ``s``, ``min``, ``h`` or ``d`` (``settle: 30s``,
``deadline: 2d``). The run parameters a keeper passes (``tick``, ``file``) are added to the
flow's ``params`` with an empty default when flow.yaml does not declare them.
"""

from __future__ import annotations

import re
import zoneinfo
from typing import Any

from ..model.flow import Schedule, Trigger
from .durations import duration
from .gate_deadline import KEYS as DEADLINE_KEYS
from .gate_deadline import read as deadline
from .yaml_values import show

# a Gate's deadline: and escalate: are read by gate_deadline.py, here for contract.py
__all__ = ["DEADLINE_KEYS", "deadline", "duration", "read", "schedule", "trigger"]
SCHEDULE_KEYS = ("cron", "timezone", "catchup")
TRIGGER_KEYS = ("files", "settle")
CATCHUP = ("latest", "all", "none")
TICK_PARAM = "tick"  # the run parameter a scheduled run gets: its tick, ISO 8601 with offset
FILE_PARAM = "file"  # the run parameter a triggered run gets: the file, relative to the flow
MAX_PATTERN = 200
WILD = re.compile(r"[*?\[\]]")
OWN = ("runs", ".praxis")  # a flow's record and store: never a trigger's


def schedule(reader: Any, value: Any) -> Schedule | None:
    if isinstance(value, str):
        value = {"cron": value}
    raw = reader.mapping(value, "schedule", SCHEDULE_KEYS)
    if raw is None:
        return None
    if "cron" not in raw:
        reader.error("schedule", "missing required key 'cron' (cron: \"0 6 * * 1-5\")")
        return None
    cron = reader.string(raw["cron"], "schedule.cron")
    if cron is not None and (problem := cron_problem(cron)):
        reader.error("schedule.cron", problem)
        cron = None
    zone = reader.string(raw.get("timezone", "UTC"), "schedule.timezone")
    if zone is not None and not _zone(zone):
        reader.error(
            "schedule.timezone",
            f"{show(zone)} is not a timezone (an IANA name: Europe/Berlin, America/New_York, UTC)",
        )
        zone = None
    catchup = reader.choice(raw.get("catchup", "latest"), "schedule.catchup", CATCHUP, "catchup")
    if cron is None or zone is None or catchup is None:
        return None
    return Schedule(cron=cron, timezone=zone, catchup=catchup)


def cron_problem(cron: str) -> str | None:
    fields = cron.split()
    if len(fields) != 5:
        return (
            f"{show(cron)} has {len(fields)} fields; a cron expression has five "
            '(minute hour day month weekday: "0 6 * * 1-5")'
        )
    from croniter import croniter  # ~50 ms: loaded for a flow with a schedule only

    if not croniter.is_valid(cron):
        return (
            f'{show(cron)} is not a cron expression (minute hour day month weekday: "0 6 * * 1-5")'
        )
    return None


def _zone(name: str) -> bool:
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True


def trigger(reader: Any, value: Any) -> Trigger | None:
    raw = reader.mapping(value, "trigger", TRIGGER_KEYS)
    if raw is None:
        return None
    if "files" not in raw:
        reader.error("trigger", "missing required key 'files' (files: \"incoming/*.csv\")")
        return None
    files = reader.string(raw["files"], "trigger.files")
    if files is not None and (problem := pattern_problem(files)):
        reader.error("trigger.files", f"{show(files)} {problem}")
        files = None
    settle = duration(reader, raw["settle"], "trigger.settle") if "settle" in raw else 30.0
    if files is None or settle is None:
        return None
    return Trigger(files=files, settle=settle)


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a folder of the flow and a pattern of names in it."""
    if len(pattern) > MAX_PATTERN:
        return f"is over {MAX_PATTERN} characters"
    if pattern.startswith("/") or "\\" in pattern:
        return "must be relative to the flow folder, with / between folders"
    *folders, name = pattern.split("/")
    if not name or any(part in ("", ".", "..") for part in folders) or name in (".", ".."):
        return "must name files inside the flow folder (no '..', no empty part)"
    if any(WILD.search(part) for part in folders):
        return "may have * ? [...] in its last part only (incoming/*.csv)"
    if (folders[0] if folders else name) in OWN:
        return "is in the flow's own record (runs/, .praxis/): name a folder of its data"
    return None


def split(pattern: str) -> tuple[str, str]:
    """(folder, name pattern): ``incoming/*.csv`` -> (``incoming``, ``*.csv``)."""
    folder, _, name = pattern.rpartition("/")
    return folder, name


def read(
    reader: Any, top: dict[str, Any], params: dict[str, Any]
) -> tuple[Schedule | None, Trigger | None]:
    """flow.yaml's ``schedule:`` and ``trigger:`` (each None when absent); the parameters
    they pass are added to ``params``."""
    sched = schedule(reader, top["schedule"]) if "schedule" in top else None
    trig = trigger(reader, top["trigger"]) if "trigger" in top else None
    with_params(params, sched, trig)
    return sched, trig


def with_params(params: dict[str, Any], sched: Schedule | None, trig: Trigger | None) -> None:
    """Add the parameters a keeper passes to ``params`` (empty defaults), if not declared."""
    if sched is not None:
        params.setdefault(TICK_PARAM, "")
    if trig is not None:
        params.setdefault(FILE_PARAM, "")
