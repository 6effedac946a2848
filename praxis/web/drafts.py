"""Unsaved edits from the Gate page, saved together: one table's cells, or a file's text.

The page sends them with *Save* (one file) or with *Approve* (every file with a draft, as
JSON in ``drafts``). ``save`` checks all of them first (``validate``) and writes none unless
all pass, then writes each through ``praxis.service``'s edit bound to the revision the page showed,
each write moving the revision on by one.
"""

from __future__ import annotations

import json
from typing import Any

from praxis.errors import Refused, UsageError
from praxis.flows.store.handle import RunHandle
from praxis.flows.store.layout import writable
from praxis.service import acting

from . import changes, tables, validate

MAX_DRAFTS_BYTES = 8 * 1024 * 1024

Drafts = dict[str, dict[str, Any]]


class Unreadable(UsageError):
    """Raised when the page sent drafts that are not what it writes (too large, not JSON)."""


def parse(form: Any) -> Drafts:
    """The unsaved edits the page sends with Approve: ``drafts`` as JSON
    {name: {"text": str} | {"cells": {"row.col": str}, "version": str}}."""
    raw = str(form.get("drafts", "") or "")
    if not raw:
        return {}
    if len(raw) > MAX_DRAFTS_BYTES:
        raise Unreadable("the unsaved edits are too large to send at once; save them first")
    try:
        data = json.loads(raw)
    except ValueError:
        raise Unreadable("the page sent unreadable edits; reload it") from None
    if not isinstance(data, dict):
        raise Unreadable("the page sent unreadable edits; reload it")
    drafts: Drafts = {}
    for name, draft in data.items():
        if not isinstance(draft, dict):
            continue
        if isinstance(draft.get("text"), str):
            drafts[str(name)] = {"text": draft["text"]}
        elif isinstance(draft.get("cells"), dict) and draft["cells"]:
            items = [(f"cell.{k}", str(v)) for k, v in draft["cells"].items()]
            cells = tables.parse_cell_fields(items)
            drafts[str(name)] = {"cells": cells, "version": str(draft.get("version", ""))}
    return drafts


def save(run: RunHandle, drafts: Drafts, expect: int | None) -> int | None:
    """Check every draft, then write them one by one; the revision after the last write.

    A draft is {"text": str} or {"cells": {(row, col): value}, "version": str}. Nothing
    is written unless every draft passes its checks (``validate``).
    """
    if expect is not None and expect != run.state.revision:
        raise Refused("stale", revision=run.state.revision)
    planned: list[tuple[str, bytes | tables.Staged]] = []
    try:
        for name, draft in drafts.items():
            path = writable(run.flow, run.state, run.paths, name)
            if "text" in draft and draft.get("cells"):
                raise tables.BadEdit(f"{name} has both cell edits and a text edit: keep one")
            if "text" in draft:
                data = validate.text_save(path, str(draft["text"]))
                validate.check_save(run, name, data)
                planned.append((name, data))
            else:  # streamed to a file beside the outputs, checked, then moved in place
                version = str(draft.get("version", ""))
                planned.append((name, validate.stage_cells(run, path, draft["cells"], version)))
        for name, new in planned:
            changes.keep_original(run, name)
            if isinstance(new, tables.Staged):
                state = acting.edit_with_file(
                    run.flow, name, new.path, run.id, expect_revision=expect, diff=new.diff,
                    passed=True,  # stage_cells checked it: a save that fails is refused
                )  # fmt: skip
                new.carry()
            else:
                state = acting.edit(run.flow, name, new, run.id, expect_revision=expect, by="web")
            expect = state.revision if expect is not None else None
            run = RunHandle.open(run.flow, run.id)
    finally:
        for _, left in planned:
            if isinstance(left, tables.Staged):
                left.path.unlink(missing_ok=True)  # moved in place already, or not saved
    return expect
