"""The sha256 of a file of a run, read never through a link.

A digest is kept for the version of the file it was read from (device, inode, size, mtime
and ctime of the open file: any write changes the ctime), so that a page shown again, or a
status asked for again, does not read an unchanged output again. Only for a file last
changed a while ago: the clock that stamps ctime ticks coarsely, and a write in the same
tick as the read could leave the stamp as it was (git's "racy clean" entries).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from sandbox.files import hash_fd, open_nofollow

from ...lru import LRU

CACHE_SIZE = 1024
SETTLED_NS = 2_000_000_000  # a file changed longer ago than this is cached
_cache: LRU[tuple[int, int, int, int, int], str] = LRU(CACHE_SIZE)


def sha256_of(path: Path) -> str:
    """Hex sha256 of ``path``'s content; OSError (ELOOP for a link) when it cannot be read."""
    fd = open_nofollow(path)
    try:
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        known = _cache.get(key)
        if known is not None:
            return known
        digest = hash_fd(fd)
        settled = time.time_ns() - st.st_ctime_ns > SETTLED_NS
        if settled and os.fstat(fd).st_ctime_ns == st.st_ctime_ns:
            _cache.put(key, digest)
        return digest
    finally:
        os.close(fd)
