"""A phase's ``reuse:``: ``auto`` (a script's default), ``never`` (a query's default), or
``{within: 1h}``: a done attempt younger than that may stand for the phase (what a query
read from a database is fresh for so long)."""

from __future__ import annotations

import re
from typing import Any

from . import kinds
from .yaml_values import ValueReader, describe

MODES = ("auto", "never")
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd])")
MAX_WITHIN = 366 * 86400


def read(
    reader: ValueReader, raw: dict[str, Any], loc: str, kind: str | None
) -> tuple[str, float | None]:
    """(mode, seconds a done attempt stays reusable or None) of the phase at ``loc``."""
    found = kinds.get(kind) if kind is not None else None
    default = str(getattr(found, "reuse_default", "auto"))
    if "reuse" not in raw:
        return default, None
    at = f"{loc}.reuse"
    if found is not None and not found.reusable:
        reader.error(at, f"{kind} phases are never reused: remove 'reuse'")
        return "auto", None
    value = raw["reuse"]
    if isinstance(value, dict):
        spec = reader.mapping(value, at, ("within",)) or {}
        if "within" not in spec:
            reader.error(at, "write reuse: {within: 1h} (how long a done attempt stays fresh)")
            return default, None
        seconds = duration(spec["within"])
        if seconds is None:
            reader.error(
                f"{at}.within",
                f"expected a duration such as 30m, 1h or 2d, got {describe(spec['within'])}",
            )
            return default, None
        return "auto", seconds
    return reader.choice(value, at, MODES, "reuse") or default, None


def duration(value: Any) -> float | None:
    """Seconds of ``30m``, ``1h``, ``2d``, ``90s`` (or a number of seconds); None if not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (m := DURATION.fullmatch(value.strip())):
        seconds = float(m.group(1)) * UNITS[m.group(2)]
    else:
        return None
    return seconds if 0 < seconds <= MAX_WITHIN else None
