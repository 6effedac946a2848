"""A flow's own files, read on the host by descriptor: inside the flow folder, no link followed.

A flow folder may come from someone else, so its files are opened the way the workspace's
are (``sandbox.files``): from a descriptor of the folder, one component at a time with
``O_NOFOLLOW``, and ``fstat`` of what was opened must be a regular file. A symbolic link
anywhere on the way (``requirements.txt -> /etc/shadow``, ``data -> /``) is refused
(``PathRefused``), never followed, even when it points back inside the folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sandbox.errors import PathRefused
from sandbox.files import open_below

__all__ = ["PathRefused", "exists", "open_fd", "read", "size", "text"]


@contextmanager
def open_fd(root: Path, name: str) -> Iterator[int]:
    """A read descriptor of flow file ``name`` (a relative name below ``root``)."""
    with open_below(Path(root).resolve(), name) as fd:
        yield fd


def read(root: Path, name: str, max_bytes: int) -> bytes:
    """At most ``max_bytes + 1`` bytes of flow file ``name`` (more means: over the limit)."""
    with open_fd(root, name) as fd:
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)


def text(root: Path, name: str, max_bytes: int = 50 << 20) -> str:
    """Flow file ``name`` as text (UTF-8, undecodable bytes replaced), at most ``max_bytes``."""
    data = read(root, name, max_bytes)
    if len(data) > max_bytes:
        raise PathRefused(name, f"is over the {max_bytes:,} bytes praxis reads of it")
    return data.decode("utf-8", errors="replace")


def size(root: Path, name: str) -> int:
    """The size of flow file ``name``, as opened."""
    with open_fd(root, name) as fd:
        return os.fstat(fd).st_size


def exists(root: Path, name: str) -> bool:
    """Whether anything (a file, a link, a folder) has the name ``name`` in ``root``'s folder
    of it; never follows a link, so a dangling one exists too."""
    try:
        os.lstat(Path(root) / name)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True
