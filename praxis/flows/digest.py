"""The sha256 of a file of a run, read never through a link."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def sha256_of(path: Path) -> str:
    """Hex sha256 of ``path``'s content; OSError (ELOOP for a link) when it cannot be read."""
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
