"""Plug-ins: the entry points of a group, read from the distributions' metadata on ``sys.path``
directly, as importlib.metadata finds them (the first distribution of a name wins), and a
target (``module:attr``) loaded only when it is asked for.

importlib.metadata and what it imports cost the quick commands (``praxis check``, ``status``)
more than the rest of their start-up; this reads one small file per distribution, bounded.
praxis's sandbox backends (``praxis.sandbox_backends``), phase kinds (``praxis.phase_kinds``)
and add-on event kinds (``praxis.events``) are found here.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

MAX_METADATA = 1 << 20  # bytes of one distribution's entry_points.txt read


def declared(group: str) -> dict[str, str]:
    """Entry point name -> ``module:attr`` of ``group``, from every distribution."""
    found: dict[str, str] = {}
    for folder in _distributions():
        for name, target in _entry_points(folder, group):
            found.setdefault(name, target)
    return found


def find(
    declared: dict[str, str],
    name: str,
    *,
    what: str,
    fits: Callable[[object], bool],
    shape: str,
    unknown: Callable[[str], Exception],
    broken: Callable[[str], Exception],
) -> object:
    """The plug-in ``name`` of ``declared`` (``declared(group)``), loaded and checked:
    ``unknown(name)`` when none is declared, ``broken(why)`` when its target does not load or
    is not what the group holds (``fits``; ``shape`` says what that is)."""
    target = declared.get(name)
    if target is None:
        raise unknown(name)
    try:
        found = load(target)
    except (ImportError, AttributeError) as exc:
        raise broken(f"the {what} {name!r} ({target}) cannot be loaded: {exc}") from exc
    if not fits(found):
        raise broken(f"the {what} {name!r} ({target}) is not a {shape}")
    return found


def load(target: str) -> object:
    """The object ``module:attr`` names (ImportError or AttributeError when it does not load)."""
    module, _, attr = target.partition(":")
    found: object = importlib.import_module(module.strip())
    for part in attr.strip().split("."):
        if part:
            found = getattr(found, part)
    return found


def _distributions() -> list[Path]:
    """The metadata folder of each distribution on ``sys.path``, the first of each name."""
    seen: set[str] = set()
    found = []
    for entry in sys.path:
        folder = Path(entry or ".")
        try:
            listing = sorted(os.listdir(folder))
        except OSError:
            continue
        for item in listing:
            if not item.endswith((".dist-info", ".egg-info")):
                continue
            dist = re.sub(r"[-_.]+", "_", item.rsplit(".", 1)[0].split("-")[0]).lower()
            if dist not in seen:
                seen.add(dist)
                found.append(folder / item)
    return found


def _entry_points(folder: Path, group: str) -> list[tuple[str, str]]:
    """The ``(name, target)`` entry points of ``group`` in ``folder/entry_points.txt``."""
    try:
        with open(folder / "entry_points.txt", "rb") as f:
            text = f.read(MAX_METADATA).decode("utf-8", "replace")
    except OSError:
        return []
    found, inside = [], False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line[1:-1].strip() == group
        elif inside and "=" in line:
            name, _, target = line.partition("=")
            found.append((name.strip(), target.strip()))
    return found
