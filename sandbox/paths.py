"""Safe relative names, shared by the sandbox and its callers.

A name is a relative posix path: no ``..``, not absolute, no backslash, no NUL, no empty
part, every part at most 255 bytes. ``confined`` resolves a path (following symlinks) and
checks it stays below a base folder and is a regular file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import PathRefused

MAX_PART_BYTES = 255


def name_problem(name: object) -> str | None:
    """Why ``name`` is not a safe relative name, or None when it is."""
    if not isinstance(name, str):
        return f"must be a string, not {type(name).__name__}"
    if name == "":
        return "is empty"
    if "\x00" in name:
        return "contains a NUL byte"
    if "\\" in name:
        return "contains a backslash (use / between folders)"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "is an absolute path"
    parts = name.split("/")
    for part in parts:
        if part == "":
            return "has an empty path component"
        if part in (".", ".."):
            return f"has a {part!r} component"
        if len(part.encode("utf-8", "surrogateescape")) > MAX_PART_BYTES:
            return f"has a component over {MAX_PART_BYTES} bytes"
    return None


def check_name(name: str) -> str:
    """Return ``name`` if safe, else raise PathRefused."""
    problem = name_problem(name)
    if problem:
        raise PathRefused(str(name), problem)
    return name


def confined(base: Path, name: str, *, must_exist: bool = True) -> Path:
    """``base/name`` after checking the name, resolving symlinks and the file type.

    Raises PathRefused when the name is unsafe, the resolved path leaves ``base``, or (when
    it exists) it is not a regular file: symlinks out, FIFOs, devices and sockets are refused.
    """
    check_name(name)
    root = base.resolve()
    path = base / name
    resolved = path.resolve()
    if not resolved.is_relative_to(root):
        raise PathRefused(name, f"leads outside {base}")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if must_exist:
            raise PathRefused(name, "does not exist") from None
        return path
    if stat.S_ISLNK(st.st_mode):
        raise PathRefused(name, "is a symbolic link")
    if not stat.S_ISREG(st.st_mode):
        raise PathRefused(name, "is not a regular file")
    return path
