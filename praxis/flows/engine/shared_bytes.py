"""Where two versions of a table differ: the bytes both start with, up to a row boundary past
the header, and those both end with, from a row boundary. An edit of a few cells of a
million-row table differs in a few rows, so its diff (``edits``), the carrying of edits to a
new output (``carry``) and its checks (``recheck``) look at those rows only.
"""

from __future__ import annotations

import csv
import io
from typing import Any


def shared(old: bytes, new: bytes) -> tuple[int, int, int]:
    """(head, tail, rows in head): the bytes both start with, up to a row boundary past the
    header; the bytes both end with, from a row boundary; the data rows in the head. A row
    boundary is a newline with an even count of quotes before it. (0, 0, 0) when none.
    Compared in blocks of ``STEP`` bytes (no copy of either version)."""
    first = old.find(b"\n") + 1
    if first <= 0 or new[:first] != old[:first] or old.find(b'"', 0, first) >= 0:
        return 0, 0, 0
    limit = min(len(old), len(new))
    head = first + common(old, new, first)
    cut = old.rfind(b"\n", first - 1, head) + 1
    quoted = old.find(b'"', first, cut) >= 0
    if cut <= first or (quoted and old.count(b'"', first, cut) % 2):
        cut, quoted = first, False
    room = limit - cut
    tail = common_end(old, new, room) if room else 0
    if tail:
        start = old.find(b"\n", len(old) - tail) + 1  # a row starts after a shared newline
        tail = len(old) - start if 0 < start <= len(old) else 0
        if tail and old.count(b'"', len(old) - tail) % 2:
            tail = 0
    if not quoted:
        return cut, tail, old.count(b"\n", first, cut)
    return cut, tail, len(list(_rows(old[first:cut])))


STEP = 1 << 16  # bytes compared at a time: small slices stay in the CPU's cache


def common(a: bytes, b: bytes, start: int = 0) -> int:
    """How many bytes ``a`` and ``b`` share from ``start`` on (block compares, then halving)."""
    n, size = start, min(len(a), len(b))
    while n + STEP <= size and a[n : n + STEP] == b[n : n + STEP]:
        n += STEP
    low, high = n, min(n + STEP, size)
    while low < high:  # a[:low] == b[:low]; the first difference is before high
        mid = (low + high + 1) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid - 1
    return low - start


def common_end(a: bytes, b: bytes, room: int) -> int:
    """How many of their last ``room`` bytes ``a`` and ``b`` share at the end."""
    la, lb = len(a), len(b)
    n, size = 0, min(la, lb, room)
    while n + STEP <= size and a[la - n - STEP : la - n] == b[lb - n - STEP : lb - n]:
        n += STEP
    low, high = n, min(n + STEP, size)
    while low < high:  # the last ``low`` bytes are equal; the first difference is in high
        mid = (low + high + 1) // 2
        if a[la - mid : la - low] == b[lb - mid : lb - low]:
            low = mid
        else:
            high = mid - 1
    return low


def _rows(data: bytes) -> Any:
    return csv.reader(io.StringIO(data.decode("utf-8", "replace"), newline=""))
