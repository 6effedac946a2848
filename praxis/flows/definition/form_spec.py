"""flow.yaml's Gate form, ``review: {required: true, form: {...}}``, checked into FormFields.

Each field is a name (a parameter name: its value reaches the later phases as
``params[name]``) and ``{type: number|integer|text|boolean, default, required, label}``, or
``{choices: [a, b], default}``. A field's default is checked as a value of its type.
"""

from __future__ import annotations

import re
from typing import Any

from ..model.forms import MAX_FIELDS, TYPES, BadValue, FormField, typed
from .yaml_values import ValueReader, describe

FIELD_KEYS = ("type", "default", "choices", "required", "label")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
MAX_CHOICES = 100


def read(reader: ValueReader, value: Any, loc: str) -> tuple[FormField, ...]:
    """The form at ``loc``; the fields without problems (each problem reported)."""
    raw = reader.mapping(value, loc, None)
    if raw is None:
        return ()
    if not raw:
        reader.error(loc, "is empty: give a field, e.g. {threshold: {type: number, default: 5}}")
    if len(raw) > MAX_FIELDS:
        reader.error(loc, f"has {len(raw)} fields, over the limit of {MAX_FIELDS}")
        return ()
    fields = []
    for name, spec in raw.items():
        f = _field(reader, name, spec, f"{loc}.{name}")
        if f is not None:
            fields.append(f)
    return tuple(fields)


def _field(reader: ValueReader, name: str, value: Any, loc: str) -> FormField | None:
    if not NAME.fullmatch(name):
        reader.error(loc, f"is not a field name ({NAME.pattern}: it becomes a parameter)")
        return None
    spec = reader.mapping(value, loc, FIELD_KEYS)
    if spec is None:
        return None
    choices = _choices(reader, spec["choices"], f"{loc}.choices") if "choices" in spec else ()
    kind = "choice" if "choices" in spec else "text"
    if "type" in spec:
        kind = reader.choice(spec["type"], f"{loc}.type", TYPES, "field type") or ""
        if (kind == "choice") != ("choices" in spec):
            reader.error(loc, "a choice field is {choices: [a, b]}; other types take no choices")
            return None
    required = spec.get("required", False)
    if not isinstance(required, bool):
        reader.error(f"{loc}.required", f"expected true or false, got {describe(required)}")
    label = reader.string(spec.get("label", ""), f"{loc}.label") or ""
    if not kind or choices is None:
        return None
    f = FormField(name, kind, None, choices, required is True, label[:200])
    if spec.get("default") is not None:
        try:
            default = typed(f, spec["default"], "flow.yaml")
        except BadValue:
            reader.error(f"{loc}.default", f"{describe(spec['default'])} is not a {kind} value")
            return None
        f = FormField(name, kind, default, choices, required is True, label[:200])
    return f


def _choices(reader: ValueReader, value: Any, loc: str) -> tuple[str, ...] | None:
    if not isinstance(value, list) or not value or len(value) > MAX_CHOICES:
        reader.error(loc, f"expected a list of 1 to {MAX_CHOICES} choices, got {describe(value)}")
        return None
    found = []
    for i, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            reader.error(f"{loc}[{i}]", f"expected a text or a number, got {describe(item)}")
            return None
        found.append(str(item))
    return tuple(dict.fromkeys(found))
