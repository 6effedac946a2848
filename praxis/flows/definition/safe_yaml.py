"""Read a small YAML document from an untrusted file: ``yaml.safe_load`` and stricter.

Aliases (the "billion laughs" bomb), explicit tags other than !!str/!!seq/!!map, more than
MAX_NODES values and nesting deeper than MAX_DEPTH are refused while composing, so a hostile
file costs little. Duplicate keys are reported with their line, and reading goes on. The size
limit is checked while reading, so a file that grows after a stat is still bounded.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sandbox.files import open_nofollow

MAX_NODES = 10_000  # values (scalars, lists, mappings) in one document
MAX_DEPTH = 32  # nesting of lists and mappings
_PLAIN_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("str", "seq", "map")}


@dataclass(frozen=True)
class TextProblem:
    """A problem in the YAML text; ``line``/``column`` are 1-based when known."""

    message: str
    line: int | None = None
    column: int | None = None


@dataclass
class Document:
    data: Any = None
    readable: bool = False  # False: no data (the text could not be parsed at all)
    problems: list[TextProblem] = field(default_factory=list)


def read(path: Path, *, max_bytes: int) -> Document:
    """The document in ``path``; problems are collected, never raised (OSError aside)."""
    doc = Document()
    fd = open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:  # never through a link
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise IsADirectoryError(errno.EISDIR, "not a regular file", str(path))
        raw = f.read(max_bytes + 1)
    if len(raw) > max_bytes:
        doc.problems.append(TextProblem(f"is over the limit of {max_bytes} bytes"))
        return doc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        message = f"not UTF-8 text (byte 0x{raw[exc.start]:02x}): save it as UTF-8"
        doc.problems.append(TextProblem(message, line))
        return doc
    try:
        loader = _StrictLoader(text)  # checks every character first
        try:
            doc.data = loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        doc.problems.append(_marked(exc))
        return doc
    except yaml.reader.ReaderError as exc:
        line = text[: exc.position].count("\n") + 1
        message = f"character #x{exc.character:04x} is not allowed in YAML ({exc.reason})"
        doc.problems.append(TextProblem(message, line))
        return doc
    for line, first, key in sorted(loader.duplicates, key=lambda d: d[:2]):
        doc.problems.append(TextProblem(f"duplicate key {key!r} (first at line {first})", line))
    doc.readable = True
    return doc


class _StrictLoader(yaml.SafeLoader):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.duplicates: list[tuple[int, int, Any]] = []  # (line, line of the first, key)
        self._nodes = 0
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        # types-PyYAML leaves Parser.peek_event unannotated
        event: yaml.Event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            raise _refused(event, f"alias *{event.anchor} refused: write the value out in full")
        tag = getattr(event, "tag", None)
        if tag not in (None, "!") and tag not in _PLAIN_TAGS:
            raise _refused(event, f"tag {tag} refused: only plain values are allowed")
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise _refused(event, f"more than {MAX_NODES} values: refused as too large")
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _refused(event, f"nested more than {MAX_DEPTH} levels deep: refused")
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                key = self.construct_object(key_node)
                line = key_node.start_mark.line + 1
                if key in seen:
                    self.duplicates.append((line, seen[key], key))
                seen.setdefault(key, line)
        return super().construct_mapping(node, deep=deep)

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, TypeError, AttributeError, OverflowError) as exc:
            # e.g. a plain scalar that looks like a date but is not one: 2024-13-45
            problem = f"cannot read {node.value!r}: {exc}"
            raise yaml.constructor.ConstructorError(None, None, problem, node.start_mark) from exc


def _refused(event: Any, problem: str) -> yaml.MarkedYAMLError:
    return yaml.composer.ComposerError(None, None, problem, event.start_mark)


def _marked(exc: yaml.MarkedYAMLError) -> TextProblem:
    mark = exc.problem_mark or exc.context_mark
    message = exc.problem or exc.context or "not valid YAML"
    if exc.problem and exc.context:
        cm = exc.context_mark
        also = f" at line {cm.line + 1}" if cm and mark and cm.line != mark.line else ""
        message = f"{exc.problem} ({exc.context}{also})"
    message = " ".join(message.split("\n"))
    if mark is None:
        return TextProblem(message)
    return TextProblem(message, mark.line + 1, mark.column + 1)
