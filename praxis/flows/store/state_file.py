"""run.json: a RunState written atomically, and read back only when it is one.

A missing, empty, truncated, non-JSON, wrongly typed or future file raises StateCorrupt; it
is never silently reset. The format is ``RunState.to_dict()`` as JSON, keys sorted, and
``outbox``: the events of the change that made this revision (``Event.stamped``), until the
next change replaces them. run.json is the change's commit point; the events are appended to
events.jsonl after it, and the next change first appends those a crash left out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sandbox.files import replace_file

from ...errors import RecordCorrupt
from ..model.state import PHASE_STATUSES, RUN_STATUSES, SCHEMA, RunState


class StateCorrupt(RecordCorrupt):
    """Raised when run.json cannot be read as a run state; it is never silently reset."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def save(state: RunState, path: Path, outbox: Sequence[Mapping[str, Any]] = ()) -> None:
    """Write run.json atomically: tmp file, fsync, os.replace, fsync of the folder, with
    ``outbox``, the events of the change that made ``state.revision`` (none: no key)."""
    data = state.to_dict()
    for phase in data["phases"]:
        for name, empty in LATER.items():
            if phase.get(name) == empty:
                del phase[name]  # a run that never used it is written as before it existed
    for name, empty in RUN_LATER.items():
        if data.get(name) == empty:
            del data[name]
    if outbox:
        data[OUTBOX] = list(outbox)
    text = json.dumps(data, indent=1, sort_keys=True).encode("utf-8") + b"\n"
    replace_file(path, text)


# Fields of a phase added within schema 1, and their empty value: written only when not empty.
LATER: dict[str, object] = {
    "failure": {},
    "repeats": 0,
    "retries": 0,
    "reused_from": None,
    "no_reuse": False,
    "edited": {},
    "carry": {},
    "retry": {},
    "answers": {},
    "partitions": {},
}
# Fields of a run added within schema 1, likewise.
RUN_LATER: dict[str, object] = {"only": None}


OUTBOX = "outbox"


def load(path: Path) -> RunState:
    """Read run.json; a missing, truncated, non-JSON, wrong or future file raises StateCorrupt."""
    return load_saved(path)[0]


def load_saved(path: Path) -> tuple[RunState, list[dict[str, Any]]]:
    """run.json's state and outbox (the events of the change that made its revision)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise StateCorrupt(path, "missing") from None
    if not raw.strip():
        raise StateCorrupt(path, "empty")
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise StateCorrupt(path, f"not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise StateCorrupt(path, "not a JSON object")
    schema = data.get("schema")
    if not isinstance(schema, int):
        raise StateCorrupt(path, "no schema version")
    if schema > SCHEMA:
        raise StateCorrupt(path, f"schema {schema} is newer than this praxis ({SCHEMA}): upgrade")
    if not isinstance(data.get("phases"), list) or not all(
        isinstance(p, dict) for p in data["phases"]
    ):
        raise StateCorrupt(path, "wrong schema (phases must be a list of objects)")
    outbox = data.pop(OUTBOX, [])
    if not isinstance(outbox, list) or not all(isinstance(e, dict) for e in outbox):
        raise StateCorrupt(path, "wrong schema (outbox must be a list of objects)")
    try:
        state = RunState.from_dict(data)
    except (TypeError, KeyError) as exc:
        raise StateCorrupt(path, f"wrong schema ({exc})") from None
    _validate(state, path)
    for i, line in enumerate(outbox):
        if line.get("rev") != state.revision or not isinstance(line.get("kind"), str):
            raise StateCorrupt(path, f"outbox[{i}] is not an event of revision {state.revision}")
    return state, outbox


# The JSON types each field of run.json may hold (None where the field is optional).
_RUN_TYPES: dict[str, tuple[type, ...]] = {
    "run": (str,),
    "flow": (str,),
    "status": (str,),
    "revision": (int,),
    "cursor": (int,),
    "waiting": (str, type(None)),
    "gate": (str, type(None)),
    "created": (int, float),
    "updated": (int, float),
    "backend": (str, type(None)),
    "isolated": (bool, type(None)),
    "error": (str, type(None)),
    "schema": (int,),
    "params": (dict,),
    "definition": (dict,),
    "seq": (int,),
    "managed": (bool,),
}
_PHASE_TYPES: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "status": (str,),
    "attempt": (int,),
    "started": (int, float, type(None)),
    "ended": (int, float, type(None)),
    "error": (str, type(None)),
    "hashes": (dict,),
    "waiting": (str, type(None)),
    "note": (str, type(None)),
    "pid": (int, type(None)),
    "digests": (dict,),
    "reused": (bool,),
    "reused_from": (str, type(None)),
    "no_reuse": (bool,),
    "backend": (str, type(None)),
    "isolated": (bool, type(None)),
    "failure": (dict,),
    "repeats": (int,),
    "retries": (int,),
    "edited": (dict,),
    "carry": (dict,),
    "retry": (dict,),
    "answers": (dict,),
}


def _check_types(obj: object, types: dict[str, tuple[type, ...]], where: str, path: Path) -> None:
    for name, allowed in types.items():
        value = getattr(obj, name)
        if isinstance(value, bool) and bool not in allowed:
            allowed = ()  # JSON true/false is not a number here
        if not isinstance(value, allowed):
            raise StateCorrupt(path, f"{where}{name} is {type(value).__name__} {value!r:.40}")


def _validate(state: RunState, path: Path) -> None:
    _check_types(state, _RUN_TYPES, "", path)
    for i, p in enumerate(state.phases):
        _check_types(p, _PHASE_TYPES, f"phases[{i}].", path)
    if state.status not in RUN_STATUSES:
        raise StateCorrupt(path, f"unknown run status {state.status!r}")
    for p in state.phases:
        if p.status not in PHASE_STATUSES:
            raise StateCorrupt(path, f"phase {p.id!r} has unknown status {p.status!r}")
    if not 0 <= state.cursor <= len(state.phases):
        raise StateCorrupt(path, f"cursor {state.cursor} out of range")
    if not isinstance(state.revision, int) or state.revision < 0:
        raise StateCorrupt(path, "bad revision")
