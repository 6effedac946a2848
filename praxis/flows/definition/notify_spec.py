"""flow.yaml's ``notify:`` read and checked: whom of the person's targets a flow asks to tell,
and when.

```yaml
notify: {to: team}                                  # a target of the person's profile
notify: {to: [team, ops], when: [gate, failed, done]}
```

A target (a webhook, a command) is the person's, in their profile (``profile.py``): a flow
names it, never where it is, since a flow that picks an address picks where this machine
connects and what it sends there. A ``webhook:`` or ``command:`` in flow.yaml is refused with
the profile entry to write. The notifying itself (``notify.Notifier``) is the engine's; this
is the definition's part, so that checking a flow.yaml never imports what sends.
"""

from __future__ import annotations

from typing import Any

from . import profile

NOTIFY_KEYS = ("to", "when", "webhook", "command")  # not `on`: YAML reads it as true
EVENTS = ("gate", "failed", "done")


def validate(reader: Any, value: Any) -> dict[str, Any]:
    """flow.yaml's ``notify:`` as ``{to: (names...), when: [events]}``; problems go to
    ``reader`` (a ValueReader)."""
    raw = reader.mapping(value, "notify", NOTIFY_KEYS)
    if raw is None:
        return {}
    where = profile.shown_path(profile.path_of())
    if "webhook" in raw:
        reader.error(
            "notify.webhook",
            "a flow does not choose where this machine connects: add "
            f'`notify: {{team: {{webhook: "https://…"}}}}` to your profile {where} and write '
            "`notify: {to: team}`",
        )
    if "command" in raw:
        reader.error(
            "notify.command",
            "a command named by flow.yaml would run on this machine, outside the sandbox: add "
            f'`notify: {{team: {{command: ["notify-send", "praxis"]}}}}` to your profile {where} '
            "and write `notify: {to: team}`",
        )
    found: dict[str, Any] = {}
    to = _names(reader, raw)
    if to:
        found["to"] = to
    when = raw.get("when", list(EVENTS))
    if not isinstance(when, list) or not all(isinstance(v, str) and v in EVENTS for v in when):
        reader.error("notify.when", f"expected a list of {', '.join(EVENTS)}")
    else:
        found["when"] = list(when)
    return found if to else {}


def _names(reader: Any, raw: dict[str, Any]) -> tuple[str, ...]:
    if "to" not in raw:
        if "webhook" not in raw and "command" not in raw:  # those have their own fix
            reader.error("notify", "needs to: the name of a target in your profile (to: team)")
        return ()
    value = raw["to"]
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        reader.error("notify.to", "expected a target's name or a list of them (to: [team, ops])")
        return ()
    names: list[str] = []
    for i, item in enumerate(items):
        loc = "notify.to" if isinstance(value, str) else f"notify.to[{i}]"
        name = reader.ident(item, loc, profile.ENTRY, "target name")
        if name is not None and name not in names:
            names.append(name)
    return tuple(names)
