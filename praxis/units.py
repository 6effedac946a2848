"""Durations and sizes in the units a person reads: ``7.6 µs``, ``2 min 05 s``, ``50.6 MiB``."""

from __future__ import annotations

import math


def duration(seconds: float | None) -> str:
    """``seconds`` in the largest unit that keeps it readable; "" for None."""
    if seconds is None or not math.isfinite(seconds):
        return ""
    if seconds < 0:
        return "-" + duration(-seconds)
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    if whole < 86400:
        return f"{whole // 3600} h {whole % 3600 // 60:02d} min"
    return f"{whole // 86400} d {whole % 86400 // 3600:02d} h"


def size(count: int | None) -> str:
    """A number of bytes in B, KiB, MiB, GiB or TiB; "" for None."""
    if count is None:
        return ""
    if count < 1024:
        return f"{count} B"
    value = float(count)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")
