"""Receipts: a Gate decision names the files it was taken on by what reading them returned.

Reading a file of a run through praxis (``praxis read``, MCP ``read_file``, the page) returns
it with a receipt: a ``file_read`` event naming the receipt's id, the file, the sha256 of the
bytes read and the reader (``person`` or ``agent``). The route's ``read`` lists the files to
review at a Gate (its writable outputs) by name, never by digest. An agent's approve or reject
passes a receipt of each (``--receipt ID``): the decision is refused, naming the file, when a
file to read has no receipt of the agent for its current content (it changed since, or was
never read through praxis at this Gate) or a receipt given is unknown (or of an earlier
Gate), another reader's, or of no file to read. A person may pass none (a person at a
terminal reads files as they like); one who passes receipts is held to them as well. The
decision's event records the receipts it passed."""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox.errors import PathRefused
from sandbox.files import open_below

from ...argv import flow_text, shown
from ...command_line import typed
from ...errors import Refused
from ..definition.digest import sha256_of
from ..store.handle import RunHandle
from ..store.layout import writable_names

READ_BYTES = 256 << 10  # bytes of a file a read returns (the receipt hashes the whole file)


class NotAcknowledged(Refused):
    """Raised for a Gate decision without a receipt of each file to read as it is now."""

    def __init__(self, message: str, *, name: str, revision: int) -> None:
        super().__init__(message, revision=revision)
        self.name = name


@dataclass(frozen=True)
class Read:
    """A file read through praxis: its first ``READ_BYTES`` bytes, and the receipt."""

    path: str  # relative to the run's folder
    sha256: str  # of the whole file, as read
    size: int
    head: bytes
    receipt: str


def to_read(run: RunHandle) -> list[tuple[str, Path, str]]:
    """(output name, path, sha256) of each file to read at the run's Gate: the writable
    outputs that are regular files (none when the run is not at a Gate)."""
    found = []
    for name in writable_names(run.flow, run.state):
        path = run.paths.out(name)
        try:
            if path.is_file() and not path.is_symlink():
                found.append((name, path, sha256_of(path, run.paths.hashes)))
        except OSError:
            continue  # replaced by a link or removed meanwhile: not a file to read
    return found


def in_run(run: RunHandle, path: Path) -> str:
    """``path`` relative to the run's folder (ValueError when outside it)."""
    return Path(os.path.abspath(path)).relative_to(os.path.abspath(run.root)).as_posix()


def read(run: RunHandle, rel: str, reader: str, *, limit: int = READ_BYTES) -> Read:
    """Read the run's file ``rel`` (relative to its folder; no link on the way is followed)
    and record a receipt of it for ``reader`` (the caller holds the run's lock)."""
    digest, head, size = hashlib.sha256(), b"", 0
    try:
        with open_below(run.root, rel) as fd:
            while chunk := os.read(fd, 1 << 20):
                digest.update(chunk)
                if len(head) < limit:
                    head += chunk[: limit - len(head)]
                size += len(chunk)
    except (PathRefused, OSError) as exc:
        raise Refused(
            f"run {run.id}: {rel} cannot be read ({exc}): name a file of the run as route.read "
            "does, relative to the current folder (praxis status --json)",
            revision=run.state.revision,
        ) from None
    sha = digest.hexdigest()
    from ..model.events import FileRead  # the event catalogue loads only when a file is read

    names = {in_run(run, run.paths.out(n)): n for n in writable_names(run.flow, run.state)}
    receipt = "r" + secrets.token_hex(8)
    run.catch_up()
    name = names.get(rel, "")
    run.emit(FileRead(receipt=receipt, path=rel, sha256=sha, reader=reader, name=name))
    return Read(rel, sha, size, head, receipt)


def receipts(run: RunHandle, reader: str | None = None) -> dict[str, Any]:
    """The receipts of the run's current Gate by id (of ``reader`` only, when given): those
    recorded since the run last reached a Gate. A receipt of an earlier attempt never counts
    for a later one, even of the same bytes: each attempt is reviewed anew."""
    from ..model.events import FileRead, GateWaiting  # the log is read: the catalogue loads

    found: dict[str, Any] = {}
    for ev in run.log.iter():
        if isinstance(ev, GateWaiting):
            found = {}
        elif isinstance(ev, FileRead) and (reader is None or _reads_as(ev.reader, reader)):
            found[ev.receipt] = ev
    return found


def kind_of(actor: str) -> str:
    """``person`` or ``agent`` (``agent:ci-bot`` is an agent; as ``decisions.kind_of``, which
    ``praxis status`` must not load)."""
    return actor.partition(":")[0]


def _reads_as(recorded: str, reader: str) -> bool:
    """A receipt is the reader's own (``agent:ci-bot``); a bare kind (``agent``, as the
    route asks) takes any reader of that kind."""
    return recorded == reader or (":" not in reader and kind_of(recorded) == reader)


def current(run: RunHandle, reader: str) -> dict[str, str]:
    """Path (relative to the run's folder) -> the newest receipt of ``reader`` for each file
    to read at the Gate, when it was read as it is now."""
    files = {in_run(run, path): sha for _, path, sha in to_read(run)}
    if not files:
        return {}
    found = {}
    for rid, ev in receipts(run, reader).items():
        if files.get(ev.path) == ev.sha256:
            found[ev.path] = rid
    return found


def verify(run: RunHandle, actor: str, given: Sequence[str] | None) -> list[dict[str, str]]:
    """The receipts the decision passes, ``[{name, sha256, receipt}]``; NotAcknowledged when
    an agent passed none, or when a file to read has no receipt of ``actor`` as it is now."""
    if given is None and kind_of(actor) != "agent":
        return []
    ids = [g.strip() for g in given or ()]
    known = receipts(run)
    where = f"run {run.id}"
    files = to_read(run)
    by_path = {in_run(run, path): (name, sha) for name, path, sha in files}
    for rid in ids:
        ev = known.get(rid)
        if ev is None or ev.reader != actor or ev.path not in by_path:
            what = "is unknown" if ev is None else (
                f"is {ev.reader}'s, not {actor}'s" if ev.reader != actor
                else f"is of {ev.path}, not a file to read at this Gate"
            )  # fmt: skip
            raise NotAcknowledged(
                f"{where}: receipt {rid} {what} (praxis status --json lists route.read)",
                name="",
                revision=run.state.revision,
            )
    passed = [known[rid] for rid in ids]
    out = []
    for name, path, sha in files:
        rel = in_run(run, path)
        mine = [ev for ev in passed if ev.path == rel]
        if not any(ev.sha256 == sha for ev in mine):
            read = typed("read", flow_text(run.flow), path=shown(path), run=run.id, actor=actor)
            why = (
                f"{rel} changed since receipt {mine[-1].receipt} was given: read it again"
                if mine
                else f"{actor} passed no receipt of {rel}: read it through praxis ({read}), "
                "then pass --receipt ID"
            )
            raise NotAcknowledged(f"{where}: {why}", name=name, revision=run.state.revision)
        ok = next(ev for ev in mine if ev.sha256 == sha)
        out.append({"name": name, "sha256": sha, "receipt": ok.receipt})
    return out
