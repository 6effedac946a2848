"""Safe relative names, shared by the sandbox and its callers.

A name is a relative posix path: no ``..``, not absolute, no backslash, no NUL, no empty
part, every part at most 255 bytes. Opening one below a folder is ``sandbox.files``'s.
"""

from __future__ import annotations

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
