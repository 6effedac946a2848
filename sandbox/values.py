"""Words for a configuration value, and sizes: what the options' checks (``options.py``) and
praxis's flow.yaml readers say about a value they refuse."""

from __future__ import annotations

import datetime
import difflib  # only for a definition with a mistake in it
import os
import re
from typing import Any

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)([bkmg]?)", re.IGNORECASE)  # of memory: 512m, 1.5g
_DISK_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([bkmgt]?)i?b?", re.IGNORECASE)  # 1t, 3 mb, 2GiB


# -- words for a value ----------------------------------------------------------------------


def show(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def describe(value: Any) -> str:
    """What a value is, for a message: ``integer 3``, ``string 'x'``, ``a list``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value}"
    if isinstance(value, str):
        return f"string {show(value)}"
    if isinstance(value, datetime.date):
        return f"date {value.isoformat()}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def nearest(word: str, known: tuple[str, ...] | list[str]) -> str | None:
    """The known word closest to a misspelt ``word``, if one is close enough."""

    close = difflib.get_close_matches(word, known, n=1)
    return close[0] if close else None


def host_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):  # pragma: no cover - every Linux has both
        return 1 << 40


def host_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def size(n: int) -> str:
    """A byte count the way docker sizes are written: ``64m``, ``23.5g``."""
    if n >= 1 << 30:
        return f"{n / (1 << 30):.1f}".rstrip("0").rstrip(".") + "g"
    return f"{n // (1 << 20)}m"


def parse_size(value: Any, *, whole: bool = False, disk: bool = False) -> int | None:
    """Bytes for ``512m``, ``1.5g`` or a plain integer (``disk``: also ``1t``, ``3 mb``,
    ``2GiB``); None when it is not a size."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if not isinstance(value, str):
        return None
    m = (_DISK_SIZE if disk else _SIZE).fullmatch(value.strip())
    if m is None or (whole and "." in m.group(1)):
        return None
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def disk_bytes(value: str | int) -> int:
    """Bytes on disk from 512, '64m', '10g', '1t' (powers of 1024); ValueError for anything
    else."""
    n = parse_size(value, disk=True)
    if n is None:
        raise ValueError(f"{value!r} is not a size like 512m or 10g")
    return n
