"""Before any command acts on a run, the record is made to match the files.

* A writable output at a Gate (``layout.writable_names``) changed on disk since the record
  last saw it is an edit by hand: it is recorded (``artifact_edited`` by ``hand``, old and new
  sha256, the diff under ``edits/``) through a state transition, so the revision moves and a
  command bound to what the reviewer saw before is refused.
* Any other output whose file no longer has the sha256 its phase recorded was changed
  outside praxis. It is not recorded as the phase's: ``changed_outputs`` names it (``status``
  shows it), and a phase that would read it does not run (``refuse_changed``) until its
  producer runs again or a person accepts it (``accept``).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Any

from ...command_line import typed
from ..definition.digest import sha256_of
from ..model.flow import Flow
from ..store import intact
from ..store.handle import RunHandle, held
from ..store.layout import writable_names
from ..store.lock import Busy


@dataclass(frozen=True)
class Changed:
    """An output whose file differs from what its phase recorded."""

    name: str
    phase: str
    recorded: str
    now: str  # "" when the file is gone

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "phase": self.phase, "recorded": self.recorded, "now": self.now}


def phase_version(run: RunHandle, phase_id: str) -> dict[str, str]:
    """Output name -> sha256 as the phase's current attempt wrote it (before any edit)."""
    from ..store import snapshot  # at a Gate only: `praxis status` of other runs never loads it

    p = run.state.phase(phase_id)
    try:
        post = snapshot.load_manifest(run.paths.snapshot(p.id, p.attempt, "post")) or {}
    except ValueError:
        post = {}
    names = run.flow.phase(phase_id).outputs
    found = {n: post[n].sha256 for n in names if n in post}
    return found or {n: h for n, h in p.hashes.items() if n in names}


def _digest(run: RunHandle, name: str) -> str:
    """The sha256 of output ``name`` now ("" if missing or not a regular file)."""
    path = run.paths.out(name)
    try:
        if not path.is_file() or path.is_symlink():
            return ""
        return sha256_of(path, run.paths.hashes)
    except OSError:
        return ""


def hand_edits(run: RunHandle) -> list[tuple[str, str, str]]:
    """(name, recorded sha256, sha256 now) of the Gate's writable outputs changed on disk."""
    state = run.state
    if state.waiting != "gate" or state.gate is None:
        return []
    recorded = state.phase(state.gate).hashes
    found = []
    for name in writable_names(run.flow, state):
        now = _digest(run, name)
        if now and now != recorded.get(name):
            found.append((name, recorded.get(name, ""), now))
    return found


def reconcile_if_free(flow: Flow, run_id: str | None) -> bool:
    """Record the hand edits of run ``run_id`` (default: the newest) when no other process
    holds the run's lock; when one does, it records them itself (``praxis status`` does
    this first). Takes the lock only when there is an edit to record; True if one was."""
    if not hand_edits(RunHandle.open(flow, run_id)):
        return False
    try:
        with held(flow, run_id, "changing", patience=0.0) as lock:
            return bool(reconcile(RunHandle.open(flow, lock.run)))
    except Busy:
        return False


def reconcile(run: RunHandle) -> list[str]:
    """Record the hand edits of the Gate's writable outputs (the caller holds the lock)."""
    done = []
    for name, old, _ in hand_edits(run):
        record_edit(run, name, old, by="hand", actor="person")
        done.append(name)
    return done


def record_edit(
    run: RunHandle,
    name: str,
    old: str,
    *,
    by: str,
    actor: str,
    diff: dict[str, Any] | None = None,
    stored: str | None = None,
) -> str:
    """Store the new version (``stored``: the caller stored it already, as it wrote it: a
    later change of the file is a hand edit the next command records), write its diff
    beside the attempt, record the edit (a new revision, and its ``artifact_edited``)."""
    from sandbox.errors import PathRefused

    from ..store.objects import RunStore
    from . import edits

    gate = str(run.state.gate)
    attempt = run.state.phase(gate).attempt
    store = RunStore(run.paths)
    try:
        new = stored or store.add_file(run.paths.out(name), fresh=True)[0]
    except (OSError, PathRefused):
        new = _digest(run, name)
    before = store.path(old) if old and store.has(old) else None
    if diff is None:
        diff = edits.diff_of(name, before, run.paths.out(name))
    text = edits.summary(diff) if "text" not in diff else "changed (text)"
    from ..model.transitions import Edit  # only when an edit is recorded

    run.change(Edit(output=name, sha256=new, by=by, diff=text))
    entry: dict[str, Any] = {
        "name": name,
        "by": by,
        "actor": actor,
        "old": old,
        "new": new,
        "at": run.clock(),
        "revision": run.state.revision,
        "summary": text,
        "diff": diff,
    }
    edits.record(run.root, gate, attempt, entry)
    return new


def changed_outputs(run: RunHandle) -> list[Changed]:
    """Outputs of done or stale phases whose file is not the one recorded (a Gate's writable
    outputs excepted: their changes are edits)."""
    open_now = set(writable_names(run.flow, run.state))
    found = []
    for p in run.state.phases:
        if p.status not in ("done", "stale"):
            continue
        for name, recorded in sorted(p.hashes.items()):
            if name in open_now or _linked(run, name, recorded, p.ended):
                continue
            now = _digest(run, name)
            if now != recorded:
                found.append(Changed(name, p.id, recorded, now))
    return found


def _linked(run: RunHandle, name: str, recorded: str, ended: float | None) -> bool:
    """True when output ``name`` is still the hard link to its recorded, read-only object and
    that file was not written since the phase ended, or this process checked the object as it
    is now (a later phase's upload links it, which moves its ctime): unchanged, without
    reading it."""
    try:
        out = os.stat(run.paths.out(name), follow_symlinks=False)
        obj = os.stat(run.paths.object(recorded), follow_symlinks=False)
    except (OSError, ValueError):
        return False
    same = (out.st_dev, out.st_ino) == (obj.st_dev, obj.st_ino) and stat.S_ISREG(out.st_mode)
    if same and intact.known(out, recorded):  # this process checked it, as it is now
        return True
    return same and ended is not None and out.st_mtime <= ended and out.st_ctime <= ended + 1


def blocking(run: RunHandle) -> list[tuple[Changed, str]]:
    """(changed output, the phase at or after the cursor that reads it), producers before
    the cursor only (a producer about to run writes its output again)."""
    changed = {c.name: c for c in changed_outputs(run)}
    found = []
    cursor = run.state.cursor
    for p in run.flow.phases[cursor:]:
        for name in p.working + p.reference:
            c = changed.get(name)
            if c is not None and run.flow.index(c.phase) < cursor:
                found.append((c, p.id))
    return found


def refuse_changed(run: RunHandle) -> str | None:
    """Why the next phases may not run: an input of theirs was changed outside praxis."""
    found = blocking(run)
    if not found:
        return None
    c, reader = found[0]
    how = "deleted" if not c.now else "changed"
    return (
        f"output {c.name} of {c.phase} was {how} outside praxis (recorded "
        f"{c.recorded[:12]}, now {c.now[:12] or 'missing'}) and {reader} reads it: "
        f"re-run {c.phase} ({typed('rerun', from_phase=c.phase)}), or accept it as it is "
        f"({typed('accept', output=c.name)})"
    )
