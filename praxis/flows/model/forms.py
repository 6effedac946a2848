"""A Gate's form (flow.yaml ``review: {form: ...}``): typed fields a reviewer fills in when
approving. The approved values belong to that Gate attempt's approval; they reach the later
phases as run parameters and the receipt. Plain data and the one check of given values
(``answers``); ``definition/form_spec`` builds the fields from flow.yaml.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...command_line import typed as typed_line
from ...errors import UsageError
from .params import FALSE, TRUE
from .state import RunState

TYPES = ("number", "integer", "text", "boolean", "choice")
MAX_TEXT = 10_000  # characters of one text answer
MAX_FIELDS = 50


class BadValue(UsageError, ValueError):
    """Raised for a form value its field refuses, a field the form lacks, or a required
    field left out; the message names the field and the Gate."""

    def next(self, flow: str) -> str:
        return typed_line("status", flow)  # the Gate's proposed approve, its fields named


@dataclass(frozen=True)
class FormField:
    name: str
    type: str = "text"  # number | integer | text | boolean | choice
    default: Any = None
    choices: tuple[str, ...] = ()
    required: bool = False
    label: str = ""

    @property
    def needed(self) -> bool:
        """Whether a reviewer must give it: required, with no default to fall back on."""
        return self.required and self.default is None

    @property
    def placeholder(self) -> str:
        """What a command line shows for a value still to fill in: ``<number>``."""
        return "<" + ("|".join(self.choices) if self.choices else self.type) + ">"


def answers(form: tuple[FormField, ...], given: Mapping[str, Any], gate: str) -> dict[str, Any]:
    """The form's values: ``given`` (text from a command line, or JSON values) typed by their
    fields, defaults for the rest. BadValue names the first field at fault."""
    where = f"the form of the Gate after {gate}"
    fields = {f.name: f for f in form}
    for name in given:
        if name not in fields:
            known = ", ".join(fields) or "none"
            raise BadValue(f"--set {name}: not a field of {where} (fields: {known})")
    values: dict[str, Any] = {}
    for f in form:
        if f.name in given and given[f.name] is not None:
            values[f.name] = typed(f, given[f.name], where)
        elif f.needed:
            raise BadValue(f"--set {f.name}={f.placeholder}: {f.name} is required by {where}")
        else:
            values[f.name] = f.default
    return values


def typed(f: FormField, value: Any, where: str) -> Any:
    """``value`` as field ``f`` takes it; BadValue naming the field otherwise."""
    shown = repr(value) if not isinstance(value, str) else repr(value[:40])

    def refuse(expected: str) -> BadValue:
        return BadValue(f"--set {f.name}={shown}: expected {expected} ({f.name}, in {where})")

    if f.type in ("number", "integer"):
        number = _number(value, whole=f.type == "integer")
        if number is None:
            raise refuse("a whole number" if f.type == "integer" else "a number")
        return number
    if f.type == "boolean":
        if isinstance(value, bool):
            return value
        low = str(value).strip().lower() if isinstance(value, str) else ""
        if low in TRUE or low in FALSE:
            return low in TRUE
        raise refuse("true or false")
    if not isinstance(value, str):
        raise refuse("text")
    if f.type == "choice" and value not in f.choices:
        raise refuse("one of " + ", ".join(f.choices))
    if len(value) > MAX_TEXT:
        raise refuse(f"at most {MAX_TEXT} characters")
    return value


def _number(value: Any, *, whole: bool) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        number: float = value
    elif isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            number = float(text)
        except ValueError:
            return None
    else:
        return None
    if not math.isfinite(number):
        return None
    if number.is_integer():
        return int(number)
    return None if whole else number


def params_for(state: RunState, phase_id: str) -> dict[str, Any]:
    """The parameters phase ``phase_id`` runs with: the run's, with the answers approved at
    the Gates of the phases before it laid over them (a later Gate's over an earlier's)."""
    params = dict(state.params)
    for p in state.phases[: state.index(phase_id)]:
        params.update(p.answers)
    return params
