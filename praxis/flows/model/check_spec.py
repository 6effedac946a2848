"""flow.yaml ``checks:``, as read from the file: each phase's checks validated and normalised
(the format, with an example, is in ``praxis.flows.engine.checks``).

Evaluating them on a table is ``checks``' job; reading flow.yaml (``praxis check``, every
command that loads a flow) needs only this.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHECK_KEYS = (
    *("columns", "unique", "not_null", "values", "min_rows", "max_rows", "dtype"),
    *("script", "same_columns", "key"),
)
DTYPES = ("integer", "number", "bool", "date", "string")
TABULAR = {".csv": ",", ".tsv": "\t"}


def validate(reader: Any, value: Any, loc: str, outputs: tuple[str, ...]) -> dict[str, Any]:
    """The ``checks:`` of a phase, normalised; problems go to ``reader`` (a ValueReader)."""
    raw = reader.mapping(value, loc, None)
    found: dict[str, Any] = {}
    for name, spec in (raw or {}).items():
        at = f"{loc}.{name}"
        if name not in outputs:
            reader.error(at, f"{name!r} is not an output of this phase")
            continue
        body = reader.mapping(spec, at, CHECK_KEYS)
        if body is None:
            continue
        found[name] = _spec(reader, body, at, name)
    return found


def _spec(reader: Any, body: dict[str, Any], at: str, name: str) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    tabular = Path(name).suffix.lower() in TABULAR
    for key in ("columns", "unique", "not_null", "key"):
        if key in body:
            spec[key] = _strings(reader, body[key], f"{at}.{key}")
    for key in ("values", "dtype"):
        if key in body:
            spec[key] = _by_column(reader, body[key], f"{at}.{key}", key)
    for key in ("min_rows", "max_rows"):
        if key in body:
            v = body[key]
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                reader.error(f"{at}.{key}", f"expected a whole number, 0 or more, got {v!r}")
            else:
                spec[key] = v
    if "same_columns" in body:
        if not isinstance(body["same_columns"], bool):
            reader.error(f"{at}.same_columns", "expected true or false")
        else:
            spec["same_columns"] = body["same_columns"]
    if "script" in body:
        script = reader.string(body["script"], f"{at}.script")
        if script is not None and reader.name(script, f"{at}.script") is not None:
            reader.flow_file(script, f"{at}.script")
            spec["script"] = script
    if "key" in spec and not spec["key"]:
        reader.error(f"{at}.key", "expected at least one column name")
    if not tabular and set(spec) - {"script"}:
        reader.error(at, f"{name!r} is not a .csv/.tsv table: only script: checks apply to it")
    return spec


def _strings(reader: Any, value: Any, loc: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        reader.error(loc, "expected a list of column names")
        return []
    return list(value)


def _by_column(reader: Any, value: Any, loc: str, key: str) -> dict[str, Any]:
    raw = reader.mapping(value, loc, None) or {}
    out: dict[str, Any] = {}
    for column, item in raw.items():
        if key == "dtype":
            if reader.choice(item, f"{loc}.{column}", DTYPES, "dtype") is not None:
                out[column] = item
        elif isinstance(item, list) and all(
            isinstance(v, str | int | float) and not isinstance(v, bool) for v in item
        ):
            out[column] = [str(v) for v in item]
        else:
            reader.error(f"{loc}.{column}", "expected a list of allowed values")
    return out
