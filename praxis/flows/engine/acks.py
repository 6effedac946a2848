"""Acknowledged resources: the files a Gate decision is taken on, named by their sha256.

The route's ``read`` lists the files to review at a Gate (its writable outputs) with their
sha256. An agent's approve or reject acknowledges each (``--ack SHA256``): the decision is
refused, naming the file, when a file to read is not acknowledged by its current digest (it
changed since the agent read it, or was never read) or an acknowledgement matches no file.
A person may omit ``--ack``; one who gives them is held to them as well. The decision's event
records what was acknowledged.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...errors import Refused
from ..definition.digest import sha256_of
from ..store.handle import RunHandle
from ..store.layout import writable_names


class NotAcknowledged(Refused):
    """Raised for a Gate decision that does not acknowledge the files to read as they are."""

    def __init__(self, message: str, *, name: str, revision: int) -> None:
        super().__init__(message, revision=revision)
        self.name = name


def to_read(run: RunHandle) -> list[tuple[str, Path, str]]:
    """(output name, path, sha256) of each file to read at the run's Gate: the writable
    outputs that are regular files (none when the run is not at a Gate)."""
    found = []
    for name in writable_names(run.flow, run.state):
        path = run.paths.out(name)
        try:
            if path.is_file() and not path.is_symlink():
                found.append((name, path, sha256_of(path)))
        except OSError:
            continue  # replaced by a link or removed meanwhile: not a file to read
    return found


def verify(run: RunHandle, actor: str, acks: Sequence[str] | None) -> list[dict[str, str]]:
    """What the decision acknowledges, ``[{name, sha256}]``; NotAcknowledged when an agent
    gave none, or when a file to read is not acknowledged as it is now."""
    if acks is None and actor != "agent":
        return []
    given = [a.strip().lower() for a in acks or ()]
    files = to_read(run)
    where = f"run {run.id}"
    for name, path, sha in files:
        shown = path.relative_to(run.flow.root) if path.is_relative_to(run.flow.root) else path
        if sha not in given:
            why = (
                f"{actor} did not acknowledge {shown} (sha256 {sha[:12]}): read it, then "
                f"pass --ack {sha}"
                if not given
                else f"{shown} is not the file acknowledged: its sha256 is now {sha[:12]}; "
                "read it again (praxis status --json lists it under route.read)"
            )
            raise NotAcknowledged(f"{where}: {why}", name=name, revision=run.state.revision)
    current = {sha for _, _, sha in files}
    for ack in given:
        if ack not in current:
            raise NotAcknowledged(
                f"{where}: --ack {ack[:12]} matches no file to read at this Gate "
                "(see route.read in praxis status --json)",
                name="",
                revision=run.state.revision,
            )
    return [{"name": name, "sha256": sha} for name, _, sha in files]
