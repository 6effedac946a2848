"""Typed readers for values parsed from YAML, each reporting what is wrong at a location.

A reader returns the value when it is usable and None (or an empty list) after reporting the
problem through ``add(location, message, severity)``, so a caller can go on and collect every
problem of a document rather than stop at the first.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sandbox.paths import name_problem
from sandbox.values import describe as describe
from sandbox.values import nearest as nearest
from sandbox.values import show as show

from . import flow_files

MAX_FILE_BYTES = 50 << 20  # a file praxis reads whole: a script, notebook, prompt, query


class ValueReader:
    def __init__(self, root: Path, add: Callable[[str, str, str], None]) -> None:
        self.root = root  # files named by values must stay below it
        self._add = add
        self.errors = 0

    def error(self, loc: str, message: str) -> None:
        self.errors += 1
        self._add(loc, message, "error")

    def warn(self, loc: str, message: str) -> None:
        self._add(loc, message, "warning")

    def mapping(
        self, value: Any, loc: str, allowed: tuple[str, ...] | None
    ) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.error(loc, f"expected a mapping, got {describe(value)}")
            return None
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                self.error(loc, f"key {describe(key)} is not a string (quote it)")
            elif allowed is not None and key not in allowed:
                self.unknown(loc, key, allowed)
            else:
                out[key] = item
        return out

    def unknown(self, loc: str, key: str, allowed: tuple[str, ...]) -> None:
        """Report ``key`` of the mapping at ``loc`` as unknown, naming the nearest allowed."""
        close = nearest(key, allowed)
        hint = f"did you mean {close!r}?" if close else "known: " + ", ".join(allowed)
        self.error(loc, f"unknown key {show(key)} ({hint})")

    def string(self, value: Any, loc: str) -> str | None:
        if isinstance(value, str):
            return value
        hint = (
            " (give a value)" if value is None else "" if _is_collection(value) else " (quote it)"
        )
        self.error(loc, f"expected a string, got {describe(value)}{hint}")
        return None

    def choice(self, value: Any, loc: str, choices: tuple[str, ...], what: str) -> str | None:
        s = self.string(value, loc)
        if s is not None and s not in choices:
            close = nearest(s, choices)
            hint = f"did you mean {close!r}? " if close else ""
            self.error(loc, f"{show(s)} is not a {what} ({hint}use one of: {', '.join(choices)})")
            return None
        return s

    def ident(self, value: Any, loc: str, pattern: re.Pattern[str], what: str) -> str | None:
        s = self.string(value, loc)
        if s is not None and not pattern.fullmatch(s):
            self.error(loc, f"{show(s)} is not a valid {what} (use {pattern.pattern})")
            return None
        return s

    def positive(self, value: Any, loc: str, *, whole: bool = False) -> Any:
        kind = int if whole else (int, float)
        if isinstance(value, bool) or not isinstance(value, kind):
            what = "whole number" if whole else "number"
            self.error(loc, f"expected a positive {what}, got {describe(value)}")
        elif not (value > 0 and math.isfinite(value)):
            self.error(loc, f"must be a positive number, got {value}")
        else:
            return value
        return None

    def name(self, value: Any, loc: str) -> str | None:
        s = self.string(value, loc)
        problem = name_problem(s) if s is not None else None
        if problem:
            self.error(loc, f"{show(s)} {problem}")
            return None
        return s

    def names(self, value: Any, loc: str) -> list[tuple[str, str]]:
        if not isinstance(value, list):
            hint = f" (write [{show(value)}])" if isinstance(value, str) else ""
            self.error(loc, f"expected a list, got {describe(value)}{hint}")
            return []
        located = [(f"{loc}[{i}]", item) for i, item in enumerate(value)]
        return [(at, n) for at, item in located if (n := self.name(item, at)) is not None]

    def flow_file(self, name: str, loc: str, *, streamed: bool = False) -> None:
        """A file below root: it must exist, be reached without a link (flow_files), be a
        regular file and, unless it is ``streamed`` (a data input: copied and hashed in one
        pass, never read whole), not be huge."""

        path = self.root / name
        try:
            if not path.resolve().is_relative_to(self.root):
                self.error(loc, f"{show(name)} leads outside the flow folder")
                return
            size = flow_files.size(self.root, name)
        except flow_files.PathRefused as exc:
            if exc.reason == "does not exist":
                self.error(loc, f"{show(name)} does not exist in the flow folder")
            elif exc.reason == "is not a regular file":
                self.error(loc, f"{show(name)} is not a regular file")
            else:
                self.error(loc, f"{show(name)} {exc.reason}: a flow file is read without links")
            return
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
            self.error(loc, f"{show(name)} cannot be read ({getattr(exc, 'strerror', exc)})")
            return
        if size > MAX_FILE_BYTES and not streamed:
            self.error(
                loc,
                f"{show(name)} is {mib(size)}, over the 50 MiB praxis reads whole of a "
                "script, notebook, prompt or query: keep data out of it and list the data "
                "under inputs (a working input of any size is streamed)",
            )


def mib(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB"


def _is_collection(value: Any) -> bool:
    return isinstance(value, list | dict | set | tuple)
