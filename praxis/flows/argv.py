"""How a person names a flow or a file on the command line from the current folder: the
words the route, the status and the errors print for them to type."""

from __future__ import annotations

import shlex
from pathlib import Path

from .model import Flow


def flow_arg(flow: Flow) -> str:
    """How a person would name the flow on the command line from the current folder."""
    return shlex.quote(flow_text(flow))


def flow_text(flow: Flow) -> str:
    """The flow's folder relative to the current folder (or absolute), unquoted: an argv item."""
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
