"""A reviewer's edit of an output at a Gate, as a diff kept beside the attempt.

``runs/<run>/edits/<phase>/<attempt>.json`` lists the edits of that attempt's outputs, oldest
first: who (``by``: reviewer or hand; ``actor``), the sha256 before and after, and for a
table a cell-level diff (columns before and after; rows changed, added, removed, with up to
``MAX_CELLS`` changed cells shown). Every version is kept in the run's content store
(``objects/<sha256>``), so each diff can be made again.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

from sandbox.files import replace_file

from ..store.layout import RunPaths
from .checks import TABULAR, Unreadable, parse, read
from .shared_bytes import shared as _shared

MAX_CELLS = 50
MAX_EDITS = 1000  # entries kept per attempt file


def diff_tables(name: str, old: bytes, new: bytes) -> dict[str, Any]:
    """Rows changed, added and removed between two versions of a table (rows aligned by
    content; a changed row is one replaced by one), and the changed cells, by column.

    Only the rows between the bytes both versions share at the start and at the end are
    parsed and aligned, so a one-cell edit of a million-row table compares one row."""
    head, tail, offset = _shared(old, new)
    first = old.find(b"\n") + 1
    if head:
        old, new = (
            old[:first] + old[head : len(old) - tail],
            new[:first] + new[head : len(new) - tail],
        )
    try:
        a, b = parse(old, name), parse(new, name)
    except Unreadable as exc:
        return {"problem": str(exc)}
    return _aligned(a, b, offset)


def _aligned(a: Any, b: Any, offset: int) -> dict[str, Any]:
    common = [c for c in b.header if c in a.header]
    ia = {c: i for i, c in enumerate(a.header)}
    ib = {c: i for i, c in enumerate(b.header)}
    key_a = [tuple(r[ia[c]] for c in common) for r in a.rows]
    key_b = [tuple(r[ib[c]] for c in common) for r in b.rows]
    out: dict[str, Any] = {
        "columns_before": a.header,
        "columns_after": b.header,
        "changed": 0,
        "added": 0,
        "removed": 0,
        "cells": [],
    }
    matcher = difflib.SequenceMatcher(None, key_a, key_b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        pairs = min(i2 - i1, j2 - j1) if op == "replace" else 0
        for k in range(pairs):
            out["changed"] += 1
            for c in common:
                before, after = a.rows[i1 + k][ia[c]], b.rows[j1 + k][ib[c]]
                if before != after and len(out["cells"]) < MAX_CELLS:
                    out["cells"].append(
                        {
                            "row": offset + j1 + k + 1,
                            "column": c,
                            "old": before[:200],
                            "new": after[:200],
                        }
                    )
        out["removed"] += (i2 - i1) - pairs
        out["added"] += (j2 - j1) - pairs
    return out


def summary(diff: dict[str, Any]) -> str:
    if "problem" in diff:
        return str(diff["problem"])
    if "rows" not in diff and "changed" not in diff:
        return "changed (not a table)"
    text = f"{diff['changed']} row(s) changed, {diff['added']} added, {diff['removed']} removed"
    if diff["columns_before"] != diff["columns_after"]:
        text += f"; columns {diff['columns_before']} -> {diff['columns_after']}"
    return text


def diff_of(name: str, old: Path | None, new: Path) -> dict[str, Any]:
    if Path(name).suffix.lower() not in TABULAR:
        return {"text": True}
    if old is None or not old.is_file():
        return {"problem": "the earlier version is not in the record"}
    return diff_tables(name, read(old), read(new))


def record_path(root: Path, phase: str, attempt: int) -> Path:
    return RunPaths(root).edits(phase, attempt)


def record(root: Path, phase: str, attempt: int, entry: dict[str, Any]) -> str:
    """Append ``entry`` to the attempt's edits file; its path relative to the run folder."""
    path = record_path(root, phase, attempt)
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = load(root, phase, attempt)
    entries = (entries + [entry])[-MAX_EDITS:]
    replace_file(path, json.dumps(entries, indent=1).encode("utf-8") + b"\n")
    return str(path.relative_to(root))


def load(root: Path, phase: str, attempt: int) -> list[dict[str, Any]]:
    try:
        data = json.loads(record_path(root, phase, attempt).read_bytes())
    except (OSError, ValueError):
        return []
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []
