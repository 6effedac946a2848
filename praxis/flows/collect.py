"""Steps 5-6 of a phase: route new files to output/ or scratch/, then check the outputs.

Also the bookkeeping of attempts: before a phase runs again, its previous outputs, scratch
and record move to attempts/<phase>/<n>/, so nothing a run wrote is ever overwritten.
"""

from __future__ import annotations

import csv
import difflib
import hashlib
import os
import shutil
from pathlib import Path

from sandbox import FileStat, PathRefused, Sandbox
from sandbox.paths import check_name, confined

from .context import PhaseError
from .layout import RunPaths
from .model import Phase

TABULAR = {".csv": ",", ".tsv": "\t"}


def new_files(before: dict[str, FileStat], after: dict[str, FileStat]) -> list[str]:
    """Names that appeared or changed (size or mtime) between two listings, sorted."""
    return sorted(n for n, st in after.items() if before.get(n) != st)


def collect(
    sandbox: Sandbox,
    before: dict[str, FileStat],
    staging: Path,
    paths: RunPaths,
    phase: Phase,
) -> tuple[list[str], list[str]]:
    """Move this phase's new files into the run folder; returns (outputs, scratch) names.

    Staged files (an executor's ``write_output``) are placed first, then the sandbox's new
    files, so a file from the sandbox wins over a staged one of the same name.
    """
    declared = set(phase.outputs)
    outputs: set[str] = set()
    scratch: set[str] = set()
    for name in _staged(staging):
        dest = _dest(paths, phase, name, declared)
        src = confined(staging, name)
        _replace_with(dest, lambda tmp, s=src: shutil.copyfile(s, tmp))
        (outputs if name in declared else scratch).add(name)
    for name in new_files(before, sandbox.listing()):
        try:
            check_name(name)
        except PathRefused as exc:
            raise PhaseError(f"refused to collect {exc}") from exc
        dest = _dest(paths, phase, name, declared)
        _replace_with(dest, lambda tmp, n=name: sandbox.fetch(n, tmp))
        (outputs if name in declared else scratch).add(name)
    return sorted(outputs), sorted(scratch)


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
    dest = base / name
    if not dest.resolve().is_relative_to(base.resolve()):
        raise PhaseError(f"refused to collect {name!r}: it leads outside {base}")
    return dest


def _replace_with(dest: Path, write: object) -> None:
    """Write through a temp file in the destination folder, then os.replace."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.collect")
    tmp.unlink(missing_ok=True)
    try:
        write(tmp)  # type: ignore[operator]
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def check_outputs(paths: RunPaths, phase: Phase, scratch: list[str] | None = None) -> None:
    """Every declared output exists; no declared .csv/.tsv outside may_be_empty is header-only.

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
        if delimiter and name not in phase.may_be_empty:
            rows = _count_rows(path, delimiter, limit=2)
            allow = f"list it under may_be_empty: in flow.yaml if {phase.id} may write no rows"
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


def _count_rows(path: Path, delimiter: str, *, limit: int) -> int:
    count = 0
    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        for row in csv.reader(fh, delimiter=delimiter):
            if any(cell.strip() for cell in row):
                count += 1
                if count >= limit:
                    break
    return count


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def hash_outputs(paths: RunPaths, phase: Phase) -> dict[str, str]:
    return {name: sha256(paths.out(name)) for name in phase.outputs if paths.out(name).is_file()}


def archive_attempt(paths: RunPaths, phase: Phase, attempt: int) -> Path | None:
    """Move a phase's outputs, scratch and record into attempts/<phase>/<attempt>/."""
    moves: list[tuple[Path, Path]] = []
    dest = paths.attempt(phase.id, attempt)
    for name in phase.outputs:
        src = paths.out(name)
        if src.is_file() or src.is_symlink():
            moves.append((src, dest / "output" / name))
    if paths.scratch_of(phase.id).exists():
        moves.append((paths.scratch_of(phase.id), dest / "scratch"))
    if paths.record(phase.id).exists():
        moves.append((paths.record(phase.id), dest / "record.ipynb"))
    if not moves:
        return None
    for src, target in moves:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():  # an interrupted earlier archive: keep both
            target = target.with_name(target.name + ".1")
        os.replace(src, target)
    return dest
