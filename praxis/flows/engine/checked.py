"""The Gate's declared checks of a file, kept by the version of the file they ran on.

`praxis status` and the page report the checks failing on a Gate's writable outputs; at a
million rows one pass over the table takes seconds, and a file nobody touched gives the same
answer. The answer is kept in the run folder (``checked.json``: praxis's own; ``output/`` and
the workspace are not trusted) under the identity of the file as it was read (device, inode,
size, mtime and ctime: any write, chmod or replacement changes the ctime, which cannot be set
back) and what else decided it (the checks of flow.yaml, the phase's version's sha256). An
entry is used only when all of these are what they are now, so an entry written for another
version, by anyone, only costs a pass. Kept only for a file last changed a while ago and
unchanged while it was read (the ctime clock ticks coarsely: git's "racy clean").
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

from ..model.check_rules import Failure

log = logging.getLogger(__name__)

KEPT = 16  # entries (one per writable output of a Gate, a few versions of each)
MAX_BYTES = 1 << 20  # of checked.json: a larger one is not read (and is rewritten)
SETTLED_NS = 2_000_000_000


def _identity(path: Path) -> list[int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _key(name: str, spec: dict[str, Any], original: str | None, ident: list[int]) -> str:
    text = json.dumps([name, spec, original, ident], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _load(store: Path) -> dict[str, Any]:
    try:
        fd = open_nofollow(store)
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
        data = json.loads(raw) if len(raw) <= MAX_BYTES else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


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
) -> list[Failure]:
    """``evaluate()`` (the checks ``spec`` of output ``name`` at ``path``), or what it gave
    for this very version of the file, kept in ``store``."""
    before = _identity(path)
    if before is None:
        return evaluate()
    key = _key(name, spec, original, before)
    kept = _load(store)
    if key in kept:
        found = _failures(kept[key])
        if found is not None:
            return found
    found = evaluate()
    settled = time.time_ns() - before[4] > SETTLED_NS
    if settled and _identity(path) == before:
        kept = {k: v for k, v in kept.items() if k != key}
        kept = dict(list(kept.items())[-(KEPT - 1) :])
        kept[key] = [dataclasses.asdict(f) for f in found]
        try:
            replace_file(store, json.dumps(kept).encode(), mode=0o600, durable=False)
        except OSError as exc:  # a read-only run folder: the checks run again next time
            log.debug("cannot keep the checks of %s: %s", name, exc)
    return found
