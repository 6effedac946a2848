"""How a person names praxis, a flow or a file on the command line from the current folder:
the words the route, the status and the errors print for them to type or a program to run."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Protocol


class Flow(Protocol):
    """What naming a flow needs of it: its folder."""

    @property
    def root(self) -> Path: ...


def flow_text(flow: Flow) -> str:
    """The flow's folder relative to the current folder (or absolute), unquoted: an argv item
    (``praxis.command_line`` quotes it where a person types it)."""
    try:
        rel = flow.root.resolve().relative_to(Path.cwd().resolve())
        return str(rel) if str(rel) != "." else "."
    except ValueError:
        return str(flow.root)


def shown(path: Path) -> str:
    """``path`` relative to the current folder when below it, else as it is."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def program_argv(argv0: str | None = None, on_path: str | None = None) -> list[str]:
    """``program()`` as the first items of an argv list, for a program that runs a command as
    given (``["praxis"]``, ``[".venv/bin/praxis"]``, ``["/usr/bin/python3", "-m", "praxis"]``)."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    on_path = shutil.which("praxis") if on_path is None else on_path
    me = Path(argv0)
    if me.name == "praxis" and me.is_file():
        if on_path and Path(on_path).resolve() == me.resolve():
            return ["praxis"]
        return [as_typed(me)]
    if on_path or me.name != "__main__.py":
        return ["praxis"]
    return [as_typed(Path(sys.executable)), "-m", "praxis"]  # python -m praxis


def as_typed(path: Path) -> str:
    """``path`` as a person would type it: relative when below the current folder, else
    absolute; no link is resolved."""
    absolute = Path(os.path.abspath(path))
    try:
        rel = absolute.relative_to(Path.cwd())
    except ValueError:
        return str(absolute)
    return str(rel) if rel.parts and rel.parts[0] != ".." else str(absolute)
