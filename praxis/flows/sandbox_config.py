"""The ``sandbox:`` mapping of flow.yaml: which keys each backend takes, and limits that hold.

A limit can be set but never switched off: each has a floor and a ceiling, and a value
outside them (zero, negative, "unlimited", more than this machine has) is an error.

| key        | backends      | allowed                                                     |
|------------|---------------|-------------------------------------------------------------|
| memory     | docker        | a size (``512m``, ``2g``): at least 64m, at most the host's RAM |
| tmp_size   | docker        | a whole size (``256m``): at least 16m, at most the host's RAM |
| cpus       | docker        | a number: at least 0.01, at most the host's cores           |
| pids       | docker        | a whole number from 32 to 65536                             |
| disk       | docker        | the workspace's disk quota (``10g``): at least 16m, at most 16t |
| collect    | every backend | bytes of new files a phase may leave (``1g``): 1m to 16t    |
| stream_limit | docker, local, ray | bytes of a phase's prints kept: 1 to 8388608 (8 MiB) |
| display_limit | docker, local, ray | bytes of its displays kept: 1 to 16777216 (16 MiB) |
| timeout    | every backend | seconds per phase: more than 0, at most 7 days (604800)     |
| address    | ray           | ``ray://host:10001``, ``host:6379`` or ``auto``; env wins   |
| resources  | ray           | Ray resources a node must offer: names to positive numbers  |

On ray, memory and cpus are what a node of the cluster must have, not this machine: the
cluster's own check (when the sandbox opens) bounds them.

Keys of another backend are a warning (the flow may move between machines); a key no
backend knows is an error with the nearest known key suggested.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any

from sandbox.output import LIMITS

from .yaml_values import ValueReader, describe, nearest, show

COMMON = ("backend", "timeout", "packages", "collect")
TUNING = ("stream_limit", "display_limit", "grace", "start_timeout", "warm", "spares")
DOCKER_ONLY = ("image", "memory", "cpus", "pids", "tmp_size", "disk", "labels")
KEYS: dict[str, tuple[str, ...]] = {
    "docker": COMMON + DOCKER_ONLY + TUNING,
    "auto": COMMON + DOCKER_ONLY + TUNING,
    "local": COMMON + TUNING,
    "fake": COMMON,
    "ray": COMMON + DOCKER_ONLY + TUNING + ("address", "resources"),
}
ALL_KEYS = tuple(dict.fromkeys(k for keys in KEYS.values() for k in keys))

MIN_MEMORY = 64 << 20
MIN_TMP = 16 << 20
MIN_CPUS = 0.01
PIDS = (32, 65536)
MAX_TIMEOUT = 7 * 24 * 3600
MAX_DISK = 16 << 40
MIN_COLLECT = 1 << 20
_SIZE = re.compile(r"(\d+(?:\.\d+)?)([bkmg]?)", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


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


def parse_size(value: Any, *, whole: bool = False) -> int | None:
    """Bytes for ``512m``, ``1.5g`` or a plain integer; None when it is not a size."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if not isinstance(value, str):
        return None
    m = _SIZE.fullmatch(value.strip())
    if m is None or (whole and "." in m.group(1)):
        return None
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def check(raw: dict[str, Any], backend: str | None, reader: ValueReader) -> None:
    """Report unknown keys and limits out of bounds in the ``sandbox:`` mapping ``raw``."""
    known = KEYS.get(backend or "auto", ALL_KEYS)
    for key in raw:
        if key in known:
            continue
        if key in ALL_KEYS:
            users = [b for b, keys in KEYS.items() if key in keys and b != "auto"]
            verb = "does" if len(users) == 1 else "do"
            reader.warn(
                f"sandbox.{key}",
                f"the {backend} backend does not use {key!r} (only "
                + " and ".join(users)
                + f" {verb}); it is ignored here",
            )
            continue
        close = nearest(key, known)
        hint = f"did you mean {close!r}?" if close else "known: " + ", ".join(known)
        reader.error(f"sandbox.{key}", f"unknown key for the {backend} backend ({hint})")
    if backend == "ray":
        _ray(raw, reader)
    if "memory" in raw:
        _size_limit(
            raw["memory"], "sandbox.memory", MIN_MEMORY, reader, whole=False, ray=backend == "ray"
        )
    if "tmp_size" in raw:
        _size_limit(raw["tmp_size"], "sandbox.tmp_size", MIN_TMP, reader, whole=True)
    if "disk" in raw:
        _disk(raw["disk"], reader, "sandbox.disk", MIN_TMP)
    if "collect" in raw:
        _disk(raw["collect"], reader, "sandbox.collect", MIN_COLLECT)
    for key in LIMITS:
        if key in raw:
            _output_limit(key, raw[key], reader)
    if "cpus" in raw:
        _cpus(raw["cpus"], reader, ray=backend == "ray")
    if "pids" in raw:
        _pids(raw["pids"], reader)
    if "timeout" in raw:
        timeout(raw["timeout"], "sandbox.timeout", reader)


def timeout(value: Any, loc: str, reader: ValueReader) -> float | None:
    """Seconds, more than 0 and at most 7 days."""
    if reader.positive(value, loc) is None:
        return None
    if value > MAX_TIMEOUT:
        reader.error(loc, f"must be at most {MAX_TIMEOUT} seconds (7 days), got {value}")
        return None
    return float(value)


def _size_limit(
    value: Any, loc: str, floor: int, reader: ValueReader, *, whole: bool, ray: bool = False
) -> None:
    ceiling = MAX_DISK if ray else host_memory()
    where = "" if ray else " (this machine's RAM)"  # on ray: the cluster's check, at open
    n = parse_size(value, whole=whole)
    example = "256m" if whole else "2g"
    if n is None:
        reader.error(loc, f"expected a size such as {example}, got {describe(value)}")
    elif not floor <= n <= ceiling:
        reader.error(
            loc,
            f"must be between {size(floor)} and {size(ceiling)}{where}, got {show(value)}",
        )


def _disk(value: Any, reader: ValueReader, loc: str, floor: int) -> None:
    from sandbox.workspace import parse_size as disk_size

    try:
        n = disk_size(value) if isinstance(value, str) else None
    except ValueError:
        n = None
    if n is None:
        reader.error(loc, f"expected a size such as 10g, got {describe(value)}")
    elif not floor <= n <= MAX_DISK:
        reader.error(
            loc,
            f"must be between {size(floor)} and 16t, got {show(value)}; set a size within "
            "them, or remove the key for the default",
        )


def _output_limit(key: str, value: Any, reader: ValueReader) -> None:
    """What the host keeps of a phase's output, in bytes: within the sandbox's bounds (the
    runner holds it all, and copies it into the record)."""
    low, high = LIMITS[key]
    if isinstance(value, bool) or not isinstance(value, int):
        reader.error(f"sandbox.{key}", f"expected a whole number of bytes, got {describe(value)}")
    elif not low <= value <= high:
        reader.error(
            f"sandbox.{key}",
            f"must be between {low} and {high} bytes ({high >> 20} MiB, what the runner may "
            f"hold), got {value}; lower it, or remove the key for the default",
        )


def _cpus(value: Any, reader: ValueReader, *, ray: bool = False) -> None:
    cores = 4096 if ray else host_cpus()
    where = "" if ray else " (this machine's cores)"
    if isinstance(value, bool) or not isinstance(value, int | float):
        reader.error("sandbox.cpus", f"expected a number of cores, got {describe(value)}")
    elif not (math.isfinite(value) and MIN_CPUS <= value <= cores):
        reader.error(
            "sandbox.cpus",
            f"must be between {MIN_CPUS} and {cores}{where}, got {value}",
        )


def _ray(raw: dict[str, Any], reader: ValueReader) -> None:
    """``address`` is a string; ``resources`` maps names to positive numbers."""
    address = raw.get("address")
    if address is not None and (not isinstance(address, str) or not address.strip()):
        reader.error(
            "sandbox.address",
            f"expected ray://host:port, host:port or auto, got {describe(address)}",
        )
    resources = raw.get("resources")
    if resources is None:
        return
    if not isinstance(resources, dict):
        reader.error(
            "sandbox.resources",
            f"expected a mapping of names to numbers, got {describe(resources)}",
        )
        return
    for key, value in resources.items():
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not isinstance(key, str) or not ok or not (math.isfinite(value) and value > 0):
            reader.error(
                f"sandbox.resources.{key}", f"expected a positive number, got {describe(value)}"
            )


def _pids(value: Any, reader: ValueReader) -> None:
    low, high = PIDS
    if isinstance(value, bool) or not isinstance(value, int):
        reader.error("sandbox.pids", f"expected a whole number, got {describe(value)}")
    elif not low <= value <= high:
        reader.error("sandbox.pids", f"must be between {low} and {high}, got {value}")
