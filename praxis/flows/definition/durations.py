"""Durations in flow.yaml: a number of seconds, or a number with ``s``, ``min``, ``h`` or ``d``
(``settle: 30s``, ``deadline: 2d``), at most 366 days."""

from __future__ import annotations

import re
from typing import Any

from .yaml_values import describe

UNITS = {"s": 1, "sec": 1, "min": 60, "m": 60, "h": 3600, "d": 86400}
DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*")
MAX_DURATION = 366 * 86400


def duration(reader: Any, value: Any, loc: str, *, least: float = 0.0) -> float | None:
    """Seconds from ``30``, ``30s``, ``5min``, ``2h``, ``2d``; problems go to ``reader``."""
    seconds: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str) and (m := DURATION.fullmatch(value)):
        unit = m.group(2) or "s"
        seconds = float(m.group(1)) * UNITS[unit] if unit in UNITS else None
    if seconds is None:
        reader.error(loc, f"expected a duration (30s, 5min, 2h, 2d), got {describe(value)}")
        return None
    if not least < seconds <= MAX_DURATION:
        reader.error(loc, f"must be more than {least:g} s and at most 366 days, got {value}")
        return None
    return seconds
