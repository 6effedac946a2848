"""A Gate's ``deadline:`` and ``escalate:``: how long it may wait, and whom to tell then.

```yaml
review: {required: true, deadline: 2d, escalate: team}   # or escalate: [team, ops]
```

``escalate`` names notify targets of the person's profile (DESIGN §13), as ``notify: {to:}``
does: ``praxis check`` lists them as host resources the flow asks for. A keeper (``praxis
serve``, ``praxis schedule``) tells them once when the deadline passes.
"""

from __future__ import annotations

from typing import Any

from . import profile
from .durations import duration

KEYS = ("deadline", "escalate")


def read(
    reader: Any, raw: Any, loc: str, review: str | None
) -> tuple[float | None, tuple[str, ...]]:
    """(seconds, target names) from the review ``raw`` at ``loc`` (a mapping, else none);
    ``review``: the Gate's mode as read (``required``: there is a Gate)."""
    if not isinstance(raw, dict):
        return None, ()
    deadline = None
    if "deadline" in raw:
        deadline = duration(reader, raw["deadline"], f"{loc}.deadline")
    names: list[str] = []
    if "escalate" in raw:
        value = raw["escalate"]
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not items:
            reader.error(f"{loc}.escalate", "expected a notify target's name or a list of them")
            items = []
        for i, item in enumerate(items):
            at = f"{loc}.escalate" if isinstance(value, str) else f"{loc}.escalate[{i}]"
            name = reader.ident(item, at, profile.ENTRY, "target name")
            if name is not None and name not in names:
                names.append(name)
    if ("deadline" in raw) != ("escalate" in raw):
        reader.error(loc, "deadline: and escalate: go together (deadline: 2d, escalate: team)")
    if ("deadline" in raw or "escalate" in raw) and review != "required":
        reader.error(loc, "a deadline needs a Gate: add required: true")
    return deadline, tuple(names)
