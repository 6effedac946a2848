"""flow.yaml's ``retries:`` of a phase, checked into a RetryPolicy.

``retries: 2`` (that many retries, at once, for every cause) or
``retries: {count: 3, backoff: 10s, exponential: true, on: [timeout, kernel_died, out_of_memory],
agent: true}``. ``backoff`` is a duration: seconds, or a number with s, m or h.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..model.retry_policy import CAUSES, MAX_BACKOFF, MAX_COUNT, RetryPolicy
from .yaml_values import ValueReader, describe

KEYS = ("count", "backoff", "exponential", "on", "agent")
DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(s|m|h)?\s*")
UNIT = {"s": 1, "m": 60, "h": 3600, None: 1}


def read(reader: ValueReader, value: Any, loc: str, *, safe: bool) -> RetryPolicy | None:
    """The policy at ``loc``; None after reporting a problem. ``safe``: the phase's kind
    re-runs from its pre-state alone (script, notebook); otherwise ``agent: true`` is needed."""
    if isinstance(value, int) and not isinstance(value, bool):
        raw: dict[str, Any] | None = {"count": value}
    elif isinstance(value, dict) and True in value:  # YAML 1.1 reads a bare `on:` as true
        raw = reader.mapping({"on" if k is True else k: v for k, v in value.items()}, loc, KEYS)
    else:
        raw = reader.mapping(value, loc, KEYS)
    if raw is None:
        return None
    count = _count(reader, raw.get("count", 1), f"{loc}.count")
    backoff = duration(reader, raw.get("backoff", 0), f"{loc}.backoff")
    flags = {}
    for key in ("exponential", "agent"):
        flag = raw.get(key, False)
        if not isinstance(flag, bool):
            reader.error(f"{loc}.{key}", f"expected true or false, got {describe(flag)}")
        flags[key] = flag is True
    on = _causes(reader, raw.get("on", list(CAUSES)), f"{loc}.on")
    if not safe and not flags["agent"]:
        reader.error(
            loc,
            "an agent phase retries only when the flow says so: add agent: true under "
            "retries (a model's turn may have acted beyond its workspace)",
        )
        return None
    if count is None or backoff is None or on is None:
        return None
    return RetryPolicy(count, backoff, on, flags["exponential"], flags["agent"])


def _count(reader: ValueReader, value: Any, loc: str) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_COUNT:
        reader.error(loc, f"expected a whole number from 1 to {MAX_COUNT}, got {describe(value)}")
        return None
    return value


def duration(reader: ValueReader, value: Any, loc: str) -> float | None:
    """Seconds from ``10``, ``10s``, ``2m``, ``1h`` (0 to a day)."""
    seconds: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        found = DURATION.fullmatch(value)
        if found:
            seconds = float(found.group(1)) * UNIT[found.group(2)]
    if seconds is None or not math.isfinite(seconds) or not 0 <= seconds <= MAX_BACKOFF:
        reader.error(
            loc, f"expected a duration up to a day (10, 10s, 5m, 1h), got {describe(value)}"
        )
        return None
    return seconds


def _causes(reader: ValueReader, value: Any, loc: str) -> tuple[str, ...] | None:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        reader.error(loc, f"expected a list of causes ({', '.join(CAUSES)}), got {describe(value)}")
        return None
    found: list[str] = []
    for i, item in enumerate(items):
        cause = reader.choice(item, f"{loc}[{i}]", CAUSES, "retry cause")
        if cause is None:
            return None
        if cause not in found:
            found.append(cause)
    return tuple(found)
