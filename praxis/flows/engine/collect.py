"""Steps 5-6 of a phase: route new files to output/ or scratch/, then check the outputs.

Also the bookkeeping of attempts: before a phase runs again, its previous outputs, scratch
and record move to attempts/<phase>/<n>/, so nothing a run wrote is ever overwritten.
"""

from __future__ import annotations

import difflib  # only for a missing output
import os
import uuid
from pathlib import Path

from sandbox import PathRefused
from sandbox.files import confined
from sandbox.paths import check_name

from ..definition.digest import sha256_of
from ..model.flow import Phase
from ..store import csvread, intact
from ..store.layout import RunPaths
from ..store.snapshot import Manifest, Store, is_folder
from .context import PhaseError

TABULAR = {".csv": ",", ".tsv": "\t"}


def route(
    paths: RunPaths,
    phase: Phase,
    pre: Manifest,
    post: Manifest,
    store: Store,
    staging: Path,
) -> dict[str, str]:
    """File what the phase wrote: declared outputs into output/, the rest into scratch/<phase>/;
    returns {output name: sha256}.

    Staged files (an executor's ``write_output``) are placed first, then the workspace's new
    or changed files (``post`` against ``pre``, both already in the store), so a file from the
    sandbox wins over a staged one of the same name. A recorded file is a hard link to its
    read-only object, except an output a reviewer may edit at a Gate (the phase is gated):
    that one is a copy of its own. Whoever makes a linked output writable and edits it in
    place changes the object too: every use of an object checks it first (``intact``), so
    the edit fails the run that would use it, naming it, and never reaches a phase.
    """
    declared = set(phase.outputs)
    outputs: dict[str, str] = {}
    for name in _staged(staging):
        sha, _size = store.add_file(confined(staging, name))
        _file(paths, phase, name, store, sha, declared)
        if name in declared:
            outputs[name] = sha
    for name, item in sorted(post.items()):
        if is_folder(name) or (name in pre and pre[name].sha256 == item.sha256):
            continue
        try:
            check_name(name)
        except PathRefused as exc:
            raise PhaseError(f"refused to collect {exc}") from exc
        _file(paths, phase, name, store, item.sha256, declared)
        if name in declared:
            outputs[name] = item.sha256
    return outputs


def _file(
    paths: RunPaths, phase: Phase, name: str, store: Store, sha: str, declared: set[str]
) -> None:
    """Object ``sha`` at ``name`` in output/ or scratch/ (ObjectTampered when the object
    does not hold ``sha``). The store remembers a read-only output (a link to the object),
    so a later phase that takes it as an input does not hash it again."""
    dest = _dest(paths, phase, name, declared)
    dest.parent.mkdir(parents=True, exist_ok=True)
    # staged outside output/ and scratch/: no name a phase writes can be the temp file's
    staging = paths.root / ".collecting"
    staging.mkdir(exist_ok=True)
    tmp = staging / uuid.uuid4().hex
    obj = store.path(sha)
    editable = name in declared and phase.gated
    checked: os.stat_result | None = None
    try:
        if editable:  # writable at the Gate: a copy, never the store's inode
            intact.copy(obj, sha, tmp, name, mode=0o644)
        else:
            checked = intact.check(obj, sha, name)
            os.link(obj, tmp, follow_symlinks=False)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    if checked is not None:
        # the new link and its rename changed the object's ctime, nothing else: remembered as
        # it is now, so the next phase taking the output as an input does not hash it again
        intact.linked(obj, sha, checked)
    if name in declared and not editable:
        store.remember(dest, sha)


def _staged(staging: Path) -> list[str]:
    if not staging.is_dir():
        return []
    names = []
    for dirpath, _dirs, files in os.walk(staging):
        for f in files:
            names.append(Path(dirpath, f).relative_to(staging).as_posix())
    return sorted(names)


def _dest(paths: RunPaths, phase: Phase, name: str, declared: set[str]) -> Path:
    base = paths.output if name in declared else paths.scratch_of(phase.id)
    try:
        return confined(base, name, must_exist=False)
    except PathRefused as exc:
        raise PhaseError(f"refused to collect {name!r}: it {exc.reason}") from None


def check_outputs(paths: RunPaths, phase: Phase, scratch: list[str] | None = None) -> None:
    """Every declared output exists; none outside may_be_empty is empty (0 bytes), and no
    declared .csv/.tsv outside may_be_empty is header-only.

    ``scratch`` (default: the files in the phase's scratch folder) names the near miss of a
    missing output, the file the phase wrote instead (``b_typo.csv`` for ``b.csv``).
    """
    for name in phase.outputs:
        try:
            path = confined(paths.output, name)
        except PathRefused as exc:
            if exc.reason == "does not exist":
                near = _near_miss(name, paths, phase, scratch)
                raise PhaseError(f"output {name} was not written{near}") from None
            raise PhaseError(f"output {exc}") from None
        delimiter = TABULAR.get(Path(name).suffix.lower())
        allow = f"list it under may_be_empty: in flow.yaml if {phase.id} may write no rows"
        if name not in phase.may_be_empty and path.stat().st_size == 0:
            raise PhaseError(f"output {name} is empty ({allow})")
        if delimiter and name not in phase.may_be_empty:
            rows = _count_rows(path, name, limit=2)
            if rows == 0:
                raise PhaseError(f"output {name} is empty ({allow})")
            if rows == 1:
                raise PhaseError(f"output {name} has a header and no rows ({allow})")


def _near_miss(name: str, paths: RunPaths, phase: Phase, scratch: list[str] | None) -> str:
    if scratch is None:
        folder = paths.scratch_of(phase.id)
        try:
            with os.scandir(folder) as entries:
                scratch = [e.name for _, e in zip(range(1000), entries, strict=False)]
        except OSError:
            scratch = []

    close = difflib.get_close_matches(name, scratch, n=1, cutoff=0.5)
    return f"; it wrote {close[0]!r} (now in scratch/{phase.id}/): a typo?" if close else ""


def _count_rows(path: Path, name: str, *, limit: int) -> int:
    """Rows with a value, up to ``limit``, read as a stream (bounded lines and records); a
    table past those bounds counts as full: its checks say why it is refused."""
    count = 0
    try:
        with csvread.opened(path) as fh:
            for row in csvread.records(fh, name):
                if any(cell.strip() for cell in row):
                    count += 1
                    if count >= limit:
                        break
    except csvread.Unreadable:
        return limit
    return count


def hash_outputs(paths: RunPaths, phase: Phase) -> dict[str, str]:
    return {name: sha256_of(paths.out(name)) for name in phase.outputs if paths.out(name).is_file()}


def archive_attempt(paths: RunPaths, phase: Phase, attempt: int) -> Path | None:
    """Move a phase's outputs, scratch and record into attempts/<phase>/<attempt>/."""
    moves: list[tuple[Path, Path]] = []
    dest = paths.attempt(phase.id, attempt)
    for name in phase.outputs:
        src = paths.out(name)
        if src.is_file() or src.is_symlink():
            moves.append((src, paths.archived(phase.id, attempt) / name))
    if paths.scratch_of(phase.id).exists():
        moves.append((paths.scratch_of(phase.id), paths.archived_scratch(phase.id, attempt)))
    if paths.record(phase.id).exists():
        moves.append((paths.record(phase.id), paths.archived_record(phase.id, attempt)))
    if not moves:
        return None
    for src, target in moves:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():  # an interrupted earlier archive: keep both
            target = target.with_name(target.name + ".1")
        os.replace(src, target)
    return dest
