"""A fan-out: one phase over many partitions (DESIGN.md §17). Plain data and pure rules;
``definition/foreach.py`` reads flow.yaml's ``foreach:`` and ``parallel:`` into a ``FanOut``,
``engine/fanout.py`` runs it.

A partition has a name (a folder name: ``output/<phase>/<partition>/``) and a value (the run
parameter ``param`` of that partition: the name itself, or a file of the flow for ``files``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# A partition's name is a folder of output/<phase>/: no separator, no dot first, bounded.
PARTITION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.=+-]{0,63}")
MONTH = re.compile(r"(\d{4})-(\d{2})")
MAX_PARTITIONS = 1000
MAX_PARALLEL = 64


@dataclass(frozen=True)
class FanOut:
    """``values`` (given, or a range expanded), or ``files`` (a pattern of flow files, one
    partition each, found when the phase runs); ``param`` names the partition's value in the
    phase's ``params``; ``parallel`` partitions run at once (each in its own sandbox)."""

    param: str
    values: tuple[str, ...] = ()
    files: str | None = None
    parallel: int = 1
    written: dict[str, object] = field(default_factory=dict)  # foreach: as flow.yaml wrote it


def expand_range(first: str, last: str) -> list[str]:
    """``["2026-01", "2026-12"]``: the months from first to last; ``["1", "8"]``: integers.
    ValueError (its words for a person) when neither, or when last comes before first."""
    a, b = MONTH.fullmatch(first), MONTH.fullmatch(last)
    if a and b:
        start = int(a[1]) * 12 + int(a[2]) - 1
        end = int(b[1]) * 12 + int(b[2]) - 1
        if not (1 <= int(a[2]) <= 12 and 1 <= int(b[2]) <= 12):
            raise ValueError(f"{first!r}..{last!r}: a month is 01 to 12")
        return _bounded([f"{m // 12:04d}-{m % 12 + 1:02d}" for m in range(start, end + 1)], first)
    if first.lstrip("-").isdigit() and last.lstrip("-").isdigit():
        lo, hi = int(first), int(last)
        if hi - lo >= MAX_PARTITIONS:
            raise ValueError(f"{first}..{last} is over {MAX_PARTITIONS} partitions")
        return _bounded([str(n) for n in range(lo, hi + 1)], first)
    raise ValueError(
        f"{first!r}..{last!r} is neither two months (2026-01) nor two integers (1, 12)"
    )


def _bounded(values: list[str], first: str) -> list[str]:
    if not values:
        raise ValueError(f"the range ends before it begins ({first!r} first)")
    if len(values) > MAX_PARTITIONS:
        raise ValueError(f"the range is {len(values)} partitions, over {MAX_PARTITIONS}")
    return values


def unsafe(name: str) -> str | None:
    """Why ``name`` cannot be a partition (a folder of output/<phase>/), or None."""
    if not PARTITION.fullmatch(name):
        return (
            f"{name!r} cannot name a partition's folder: letters, digits and _ . = + - "
            "(not first), at most 64"
        )
    return None


def select(names: list[str], spec: str | None) -> list[str]:
    """The partitions ``spec`` names, in their order: ``a..b`` (a range of them, both ends
    included, by position), ``a,b,c``, or None (all). ValueError naming what is not one."""
    if not spec:
        return list(names)
    if ".." in spec:
        first, _, last = spec.partition("..")
        if first not in names or last not in names:
            miss = first if first not in names else last
            raise ValueError(f"{miss!r} is not a partition ({_some(names)})")
        i, j = names.index(first), names.index(last)
        if j < i:
            raise ValueError(f"{spec}: {last!r} comes before {first!r}")
        return names[i : j + 1]
    wanted = [s.strip() for s in spec.split(",") if s.strip()]
    for w in wanted:
        if w not in names:
            raise ValueError(f"{w!r} is not a partition ({_some(names)})")
    return [n for n in names if n in wanted]


def _some(names: list[str]) -> str:
    shown = ", ".join(names[:6])
    return f"they are {shown}{', …' if len(names) > 6 else ''}"
