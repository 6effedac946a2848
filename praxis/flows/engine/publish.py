"""``praxis publish``: a done run's approved outputs written to tables (DESIGN.md §18).

Only once a person approved the run's last Gate (``publishing.approval``), each entry of
flow.yaml's ``publish:`` is written through the profile connection it names, which the
profile marks ``write: true`` (``connections.writer``), in one transaction of a worker
process (``praxis.sources.publish``). The output is taken from the run's content store,
hashed as it is copied: what is written is what the run holds and the reviewer saw. An entry
already published at that digest is not written again (a no-op). Each write is recorded as
``published`` (rows, digest) or ``publish_failed`` (the table as it was); the receipt lists
them. Run under the run's lock, so two publishes of a run never overlap.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...argv import flow_text
from ...command_line import Command
from ...errors import PraxisError, Refused
from ...sources import publish as writer
from ..definition import connections
from ..model import publishing
from ..model.events import Event, Published, PublishFailed
from ..model.flow import Flow, Publish
from ..store import intact
from ..store.handle import Clock, RunHandle, held
from ..store.objects import RunStore


@dataclass(frozen=True)
class Outcome:
    entry: Publish
    status: str  # published | already | failed
    rows: int = 0
    sha256: str = ""
    error: str = ""

    def line(self) -> str:
        if self.status == "published":
            return f"published {self.entry.shown}: {self.rows:,} rows"
        if self.status == "already":
            return f"already published {self.entry.shown} (same digest): nothing written"
        return f"not published {self.entry.shown}: {self.error}"


class PublishIncomplete(PraxisError):
    """An entry was not published (its table is as it was); the line says why and how on."""

    def __init__(self, run: RunHandle, failed: list[Outcome]) -> None:
        first = failed[0]
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        super().__init__(f"run {run.id}: {first.line()}{more}")
        self.command = Command("publish", flow_text(run.flow), run=run.id)
        self.outcomes = failed

    def next(self, flow: str) -> str:
        return self.command.line()


def publish(flow: Flow, run_id: str | None = None, *, clock: Clock = time.time) -> list[Outcome]:
    """Publish the run's pending entries; each outcome. Refused (nothing written) before the
    run is done or before a person approved its last Gate; PublishIncomplete when an entry
    failed (the others are written, each in its own transaction)."""
    if not flow.publish:
        raise Refused("flow.yaml has no publish: entries; nothing to publish")
    with held(flow, run_id, "publishing") as lock:
        run = RunHandle.open(flow, lock.run, clock)
        run.catch_up()
        if run.state.status != "done":
            raise Refused(
                f"run {run.id} is {run.state.status}: its outputs are published once every "
                "phase is done and a person approved its last Gate"
            )
        events = run.log.read()
        why = publishing.approval(flow, events)
        if why is not None:
            for entry in flow.publish:
                _failed(run, entry, f"refused: {why}")
            raise Refused(f"run {run.id}: not published: {why}")
        outcomes = [_one(run, i, entry, events) for i, entry in enumerate(flow.publish)]
    failed = [o for o in outcomes if o.status == "failed"]
    if failed:
        raise PublishIncomplete(run, failed)
    return outcomes


def _one(run: RunHandle, i: int, entry: Publish, events: Sequence[Event]) -> Outcome:
    sha = publishing.digest(run.flow, run.state, entry)
    if sha is None:
        return _failed(run, entry, f"the run holds no {entry.output}")
    if publishing.done(run.flow, run.state, entry, events) is not None:
        return Outcome(entry, "already", sha256=sha)
    try:
        target = connections.writer(entry.connection, f"publish[{i}].to.connection")
    except connections.Unusable as exc:
        return _failed(run, entry, str(exc))
    store = RunStore(run.paths)
    try:
        with tempfile.TemporaryDirectory(prefix="praxis-publish-") as tmp:
            copy = Path(tmp) / f"output{Path(entry.output).suffix.lower()}"
            intact.copy(store.path(sha), sha, copy, entry.output, mode=0o600)
            written = writer.write(target, entry.table, entry.mode, entry.key, copy)
    except (writer.PublishError, intact.ObjectTampered, OSError) as exc:
        return _failed(run, entry, str(exc))
    run.emit(
        Published(
            output=entry.output, sha256=sha, connection=entry.connection, table=entry.table,
            mode=entry.mode, rows=written.rows,
        )
    )  # fmt: skip
    return Outcome(entry, "published", rows=written.rows, sha256=sha)


def _failed(run: RunHandle, entry: Publish, error: str) -> Outcome:
    error = error[:1_000]
    run.emit(
        PublishFailed(
            output=entry.output, connection=entry.connection, table=entry.table, error=error
        )
    )
    return Outcome(entry, "failed", error=error)
