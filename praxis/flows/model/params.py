"""Run parameters: flow.yaml ``params:`` defaults, overridden by ``-p name=value``.

A value given on the command line takes the type of its default (an int default makes
``-p n=8`` the int 8; true/false/yes/no/1/0 for a bool); a name the flow does not declare is
refused, naming the ones it does.
"""

from __future__ import annotations

import difflib
from typing import Any

from ...errors import UsageError

TRUE = ("true", "yes", "1", "on")
FALSE = ("false", "no", "0", "off")


class BadParam(UsageError, ValueError):
    """Raised for a ``-p`` the flow does not declare, or a value its default's type refuses."""


def parse_pairs(pairs: list[str] | None) -> dict[str, str]:
    """``["a=1", "b=x"]`` -> ``{"a": "1", "b": "x"}``; BadParam for an item without '='."""
    found: dict[str, str] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise BadParam(f"-p {pair!r}: write it as name=value")
        found[name.strip()] = value
    return found


def resolve(defaults: dict[str, Any], given: dict[str, str]) -> dict[str, Any]:
    """The run's parameters: ``defaults`` with ``given`` (strings) typed by them."""
    values = dict(defaults)
    for name, text in given.items():
        if name not in defaults:
            near = difflib.get_close_matches(name, list(defaults), n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            known = ", ".join(sorted(defaults)) or "none"
            raise BadParam(f"-p {name}: not a parameter of this flow (params: {known}){hint}")
        values[name] = _typed(name, text, defaults[name])
    return values


def _typed(name: str, text: str, default: Any) -> Any:
    if isinstance(default, bool):
        low = text.strip().lower()
        if low in TRUE or low in FALSE:
            return low in TRUE
        raise BadParam(f"-p {name}={text}: expected true or false")
    for kind in (int, float):
        if isinstance(default, kind):
            try:
                return kind(text)
            except ValueError:
                raise BadParam(f"-p {name}={text}: expected {kind.__name__}") from None
    return text
