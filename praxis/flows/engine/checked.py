"""The Gate's declared checks of a file, kept by the content of the file they ran on.

`praxis status` and the page report the checks failing on a Gate's writable outputs; at a
million rows one pass over the table takes seconds, and a file nobody touched gives the same
answer. The answer is kept in the run folder (``checked.json``: praxis's own; ``output/`` and
the workspace are not trusted) under the file's sha256 (``digest``: kept by the file's
identity, so an unchanged file is not read again) and what else decided it (the checks of
flow.yaml, the phase's version's sha256). An entry is used only when all of these are what
they are now, so an entry written for another version, by anyone, only costs a pass.

A version not kept yet is checked from the newest kept version of the same file (or the
phase's own, which passed its checks after the phase), whose content is in the run's store:
an edit of a few cells is checked in the rows it changed (``recheck``); anything else gets
the whole pass. Kept only for a file unchanged while it was read and last changed a while
before (``digest.settled``: git's "racy clean").
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sandbox.files import open_nofollow, replace_file

from ..definition.digest import cached_object, settled
from ..model.check_rules import Failure
from . import recheck

log = logging.getLogger(__name__)

KEPT = 16  # entries (one per writable output of a Gate, a few versions of each)
MAX_BYTES = 1 << 20  # of checked.json: a larger one is not read (and is rewritten)
MAX_EDITED = 256 * 1024 * 1024  # of either version, for the check of an edit's rows


def _identity(path: Path) -> list[int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _family(name: str, spec: dict[str, Any], original: str | None) -> str:
    text = json.dumps([name, spec, original], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _load(store: Path) -> dict[str, Any]:
    return cached_object(store, MAX_BYTES)


def _failures(raw: Any) -> list[Failure] | None:
    try:
        return [Failure(**{**f, "rows": tuple(f["rows"]), "lines": tuple(f["lines"])}) for f in raw]
    except (TypeError, KeyError):
        return None


def evaluated(
    store: Path,
    name: str,
    path: Path,
    spec: dict[str, Any],
    original: str | None,
    evaluate: Callable[[], list[Failure]],
    *,
    digest: Callable[[Path], str],
    stored: Callable[[str], Path | None] = lambda sha: None,
) -> list[Failure]:
    """``evaluate()`` (the checks ``spec`` of output ``name`` at ``path``), or what it gave
    for this very content, kept in ``store``, or that updated from an earlier version's.
    ``digest``: the file's sha256; ``stored``: the path of a version's content, if kept."""
    start = time.time_ns()
    before = _identity(path)
    if before is None:
        return evaluate()
    try:
        sha = digest(path)
    except OSError:
        return evaluate()
    family = _family(name, spec, original)
    key = hashlib.sha256(f"{family}:{sha}".encode()).hexdigest()
    kept = _load(store)
    entry = kept.get(key)
    if isinstance(entry, dict) and entry.get("sha256") == sha:
        found = _failures(entry.get("failures"))
        if found is not None:
            return found
    found = _from_earlier(kept, family, sha, original, name, spec, path, stored)
    if found is None:
        found = evaluate()
    if settled(before[4], start) and _identity(path) == before:
        _put(store, kept, family, sha, found)
    return found


def keep(
    store: Path,
    name: str,
    spec: dict[str, Any],
    original: str | None,
    sha: str,
    failures: list[Failure],
) -> None:
    """Keep ``failures`` as the checks ``spec`` of output ``name`` on content ``sha`` (a save
    that checked the bytes it wrote, before they were moved in place)."""
    _put(store, _load(store), _family(name, spec, original), sha, failures)


def _put(store: Path, kept: dict[str, Any], family: str, sha: str, failures: list[Failure]) -> None:
    key = hashlib.sha256(f"{family}:{sha}".encode()).hexdigest()
    kept = {k: v for k, v in kept.items() if k != key}
    kept = dict(list(kept.items())[-(KEPT - 1) :])
    kept[key] = {
        "family": family,
        "sha256": sha,
        "failures": [dataclasses.asdict(f) for f in failures],
    }
    try:
        replace_file(store, json.dumps(kept).encode(), mode=0o600, durable=False)
    except OSError as exc:  # a read-only run folder: the checks run again next time
        log.debug("cannot keep the checks in %s: %s", store, exc)


def _from_earlier(
    kept: dict[str, Any],
    family: str,
    sha: str,
    original: str | None,
    name: str,
    spec: dict[str, Any],
    path: Path,
    stored: Callable[[str], Path | None],
) -> list[Failure] | None:
    """The failures of the file at ``path`` (content ``sha``) from those of the newest kept
    version of it, else of the phase's version ``original`` (no failure: it passed them after
    the phase); None when neither is at hand or the edit is not one ``recheck`` updates."""
    earlier: tuple[str, list[Failure] | None] | None = None
    for entry in reversed(kept.values()):
        if isinstance(entry, dict) and entry.get("family") == family and entry.get("sha256"):
            earlier = (str(entry["sha256"]), _failures(entry.get("failures")))
            break
    if earlier is None and original:
        earlier = (original, [])
    if earlier is None or earlier[1] is None or earlier[0] == sha:
        return None
    old = stored(earlier[0])
    if old is None:
        return None
    try:
        if old.stat().st_size > MAX_EDITED or os.lstat(path).st_size > MAX_EDITED:
            return None
        with os.fdopen(open_nofollow(old), "rb") as fh:
            old_bytes = fh.read(MAX_EDITED + 1)
        with os.fdopen(open_nofollow(path), "rb") as fh:
            new_bytes = fh.read(MAX_EDITED + 1)
    except OSError:
        return None
    return recheck.updated(name, spec, old_bytes, new_bytes, earlier[1])
