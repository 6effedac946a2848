"""The sha256 of a file of a run, read never through a link.

A digest is kept for the version of the file it was read from (device, inode, size, mtime
and ctime of the open file: any write changes the ctime, which cannot be set back), so that
a page shown again, or a status asked for again, does not read an unchanged output again:
in this process, and with ``known`` (a small file in the run folder, praxis's own) in the
next one too. Only for a file last changed a while before it was read (``settled``): the
clock that stamps ctime ticks coarsely, and a write in the same tick as the read could leave
the stamp as it was (git's "racy clean" entries).
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from sandbox.files import hash_fd, open_nofollow, replace_file

from ...lru import LRU

log = logging.getLogger(__name__)

CACHE_SIZE = 1024
KNOWN = 256  # entries of a ``known`` file, newest kept
MAX_KNOWN_BYTES = 64 * 1024  # a larger ``known`` file is not read (and is rewritten)
SETTLED_NS = 2_000_000_000  # on a file system that stamps whole seconds
FINE_SETTLED_NS = 100_000_000  # where stamps have sub-second digits (ticks of a few ms)
Identity = tuple[int, int, int, int, int]
_cache: LRU[Identity, str] = LRU(CACHE_SIZE)


def settled(ctime_ns: int, now_ns: int | None = None) -> bool:
    """Whether a file whose ctime is ``ctime_ns``, read from ``now_ns`` on, would show any
    later write in its ctime: it was last changed longer ago than the stamps' tick."""
    now = time.time_ns() if now_ns is None else now_ns
    coarse = ctime_ns % 1_000_000_000 == 0
    return now - ctime_ns > (SETTLED_NS if coarse else FINE_SETTLED_NS)


def identity(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def known_digest(st: os.stat_result) -> str | None:
    """The sha256 this process found for the file version whose status is ``st``, if any."""
    return _cache.get(identity(st))


def sha256_of(path: Path, known: Path | None = None) -> str:
    """Hex sha256 of ``path``'s content; OSError (ELOOP for a link) when it cannot be read.
    ``known``: the file that keeps digests by identity across processes (at most ``KNOWN``;
    a broken or forged one only costs a read: an entry answers only for the identity a
    file has now, and whoever can write it can write the run's record too)."""
    fd = open_nofollow(path)
    try:
        start = time.time_ns()
        st = os.fstat(fd)
        key = identity(st)
        found = _cache.get(key)
        if found is None and known is not None:
            found = _load(known).get(_name(key))
            if found is not None:
                _cache.put(key, found)
        if found is not None:
            return found
        digest = hash_fd(fd)
        if settled(st.st_ctime_ns, start) and identity(os.fstat(fd)) == key:
            _cache.put(key, digest)
            if known is not None:
                _keep(known, key, digest)
        return digest
    finally:
        os.close(fd)


def _name(key: Identity) -> str:
    return ":".join(str(n) for n in key)


def cached_object(path: Path, limit: int) -> dict[str, Any]:
    """A cache file's JSON object, read by descriptor (no link followed), at most ``limit``
    bytes; ``{}`` when it is missing, larger, not JSON or not an object (a cache is
    rebuilt, never trusted)."""
    try:
        fd = open_nofollow(path)
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read(limit + 1)
        data = json.loads(raw) if len(raw) <= limit else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _load(known: Path) -> dict[str, str]:
    data = cached_object(known, MAX_KNOWN_BYTES)
    return {k: v for k, v in data.items() if isinstance(v, str) and len(v) == 64 and v.isalnum()}


def _keep(known: Path, key: Identity, digest: str) -> None:
    kept = _load(known)
    kept.pop(_name(key), None)
    kept = dict(list(kept.items())[-(KNOWN - 1) :])
    kept[_name(key)] = digest
    try:
        replace_file(known, json.dumps(kept).encode(), mode=0o600, durable=False)
    except OSError as exc:  # a read-only run folder: the file is read again next time
        log.debug("cannot keep the digest of a file in %s: %s", known, exc)
