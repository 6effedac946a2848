"""flow.yaml's ``notify:`` read and checked: what a flow may ask for (a webhook, and when).

The notifying itself (``notify.Notifier``) is the engine's; this is the definition's part, so
that checking a flow.yaml never imports what sends.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

NOTIFY_KEYS = ("webhook", "when", "command")  # not `on`: YAML reads it as true
EVENTS = ("gate", "failed", "done")


def validate(reader: Any, value: Any) -> dict[str, Any]:
    """flow.yaml's ``notify:``, normalised; problems go to ``reader`` (a ValueReader)."""
    raw = reader.mapping(value, "notify", NOTIFY_KEYS)
    if raw is None:
        return {}
    found: dict[str, Any] = {}
    if "command" in raw:
        reader.error(
            "notify.command",
            "a command named by flow.yaml would run on this machine, outside the sandbox: set "
            "PRAXIS_NOTIFY_COMMAND or `praxis serve --notify-command` instead",
        )
    if "webhook" in raw:
        url = reader.string(raw["webhook"], "notify.webhook")
        if url is not None:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                reader.error("notify.webhook", f"expected an http:// or https:// URL, got {url!r}")
            else:
                found["webhook"] = url
    when = raw.get("when", list(EVENTS))
    if not isinstance(when, list) or not all(isinstance(v, str) and v in EVENTS for v in when):
        reader.error("notify.when", f"expected a list of {', '.join(EVENTS)}")
    else:
        found["when"] = list(when)
    return found
