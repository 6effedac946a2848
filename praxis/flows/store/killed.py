"""``watchdog.json``: what a sandbox's watchdog ended when the process that advanced the run
died without closing it (SIGKILL, a crash). ``runner.recover`` records it as a
``sandbox_ended`` event and removes it; until then ``status`` says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sandbox.watchdog import report_of as _read

MAX_ENDED = 16  # things one report names
MAX_TEXT = 200


def report_of(path: Path) -> dict[str, Any] | None:
    """The report at ``path`` as the fields of a ``sandbox_ended`` event (bounded, checked),
    or None when there is none (or it is not one)."""
    found = _read(path)
    if found is None:
        return None
    owner, ended, at = found.get("owner"), found.get("ended"), found.get("at")
    if not isinstance(owner, int) or not isinstance(ended, list):
        return None
    return {
        "owner": owner,
        "ended": [str(e)[:MAX_TEXT] for e in ended[:MAX_ENDED]],
        "when": float(at) if isinstance(at, int | float) else 0.0,
    }


def in_words(report: dict[str, Any]) -> str:
    """``report`` in one line (the text of its ``ended`` entries is the watchdog's own)."""
    ended = ", ".join(report["ended"]) or "nothing left running"
    who = f"the process that advanced it (pid {report['owner']})"
    return f"{who} was killed; its watchdog ended {ended}"
