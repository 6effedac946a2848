"""Run parameters as SQL parameters: ``:start`` in a prepared query is bound, never formatted.

A query names a run parameter as ``:name``. ``bind`` finds those names outside string
literals, quoted identifiers, comments, dollar-quoted bodies and ``::`` casts, and rewrites
each into the placeholder its engine's driver binds (SQLite ``:name``, DuckDB ``$name``,
psycopg ``%(name)s``, every other ``%`` doubled for it). The values travel apart from the
text, to the driver: a value is never part of the SQL, whatever it holds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class UnboundParameter(ValueError):
    """The query names ``:name`` and the run has no such parameter."""


def names(sql: str) -> list[str]:
    """The ``:name`` parameters ``sql`` uses, in order, once each."""
    return list(dict.fromkeys(n for kind, n in _scan(sql) if kind == "param"))


def bind(sql: str, engine: str, values: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """``sql`` with each ``:name`` as ``engine``'s placeholder, and the values it binds.

    UnboundParameter names the first parameter ``values`` lacks."""
    pieces = _scan(sql)
    if not any(kind == "param" for kind, _ in pieces):
        return sql, {}
    out: list[str] = []
    bound: dict[str, Any] = {}
    for kind, text in pieces:
        if kind != "param":
            out.append(text.replace("%", "%%") if engine == "postgresql" else text)
            continue
        if text not in values:
            have = ", ".join(sorted(values)) or "none"
            raise UnboundParameter(
                f"the query uses :{text}, which is not a run parameter (the flow's params: "
                f"{have}); add it under params: in flow.yaml"
            )
        bound[text] = values[text]
        out.append({"postgresql": f"%({text})s", "duckdb": f"${text}"}.get(engine, f":{text}"))
    return "".join(out), bound


def _scan(sql: str) -> list[tuple[str, str]]:
    """``sql`` in pieces: ("param", name) for a parameter, ("text", text) for the rest."""
    pieces: list[tuple[str, str]] = []
    i, start, n = 0, 0, len(sql)
    while i < n:
        c = sql[i]
        if c in "'\"`":
            i = _after_quote(sql, i, c)
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end < 0 else end
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c == "$" and (tag := re.match(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$", sql[i:])):
            end = sql.find(tag.group(0), i + len(tag.group(0)))
            i = n if end < 0 else end + len(tag.group(0))
        elif c == ":" and sql.startswith("::", i):
            i += 2
        elif c == ":" and (name := NAME.match(sql, i + 1)) and not _after_word(sql, i):
            pieces.append(("text", sql[start:i]))
            pieces.append(("param", name.group(0)))
            i = start = name.end()
        else:
            i += 1
    pieces.append(("text", sql[start:]))
    return [p for p in pieces if p != ("text", "")]


def _after_quote(sql: str, i: int, quote: str) -> int:
    """The index after the literal or identifier opened at ``i`` (a doubled quote stays in)."""
    j = i + 1
    while j < len(sql):
        if sql[j] == quote:
            if sql.startswith(quote * 2, j):
                j += 2
                continue
            return j + 1
        if sql[j] == "\\" and quote == "'" and i > 0 and sql[i - 1] in "eE":
            j += 2
            continue
        j += 1
    return j


def _after_word(sql: str, i: int) -> bool:
    """A ``:`` right after a name or number (an array slice ``a[1:2]`` in some dialects is
    handled by the name rule; ``x:y`` with no space is DuckDB's struct syntax): not a
    parameter."""
    return i > 0 and (sql[i - 1].isalnum() or sql[i - 1] in "_]")
