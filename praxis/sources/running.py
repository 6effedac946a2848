"""One prepared or model-written query run to a host file, in a worker process: what an
agent's extract and a query phase share.

The database is a connection's ``Target`` (``source.target``) or a file of the flow, which is
copied privately first: opened by descriptor below the flow folder, no link followed. The
query's ``:name`` parameters are bound (``params.bind``): their values reach the driver
apart from the text. ``fetch.run`` runs it read-only and bounded (time, rows, bytes, memory).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox.errors import SandboxError
from sandbox.files import open_below

from . import connect, fetch, sink
from .params import UnboundParameter, bind
from .source import Target

Tables = Callable[[Path], dict[str, Path]]  # copy the tables a DuckDB query reads into a folder


class RunFailed(Exception):
    """The query could not run; ``unavailable`` when the source itself could not be used.
    ``peak_rss``: the worker's peak resident memory in bytes (0 when none ran)."""

    def __init__(self, message: str, *, unavailable: bool = False, peak_rss: int = 0) -> None:
        super().__init__(message)
        self.unavailable = unavailable
        self.peak_rss = peak_rss


@dataclass(frozen=True)
class Result:
    columns: list[str]
    rows: int
    sample: list[tuple[Any, ...]]
    peak_rss: int = 0


def run(
    target: Target,
    query: str,
    dest: Path,
    *,
    root: Path,
    seconds: float,
    params: Mapping[str, Any] | None = None,
    tables: Tables | None = None,
) -> Result:
    """Run ``query`` on ``target`` (a flow file below ``root``) into host file ``dest``."""
    problem = sink.format_problem(dest.name)
    if problem:
        raise RunFailed(problem)
    try:
        text, bound = bind(query, target.engine, params or {})
    except UnboundParameter as exc:
        raise RunFailed(str(exc)) from None
    with tempfile.TemporaryDirectory(prefix="praxis-query-") as tmp:
        scratch = Path(tmp)
        (scratch / "spool").mkdir()
        (scratch / "home").mkdir()
        copies: dict[str, Path] = {}
        if target.engine == "duckdb" and tables is not None:
            folder = scratch / "inputs"
            folder.mkdir()
            copies = tables(folder)
        job = fetch.Job(
            target=target,
            database=database_file(target, root, scratch),
            query=text,
            dest=dest,
            spool=scratch / "spool",
            seconds=seconds,
            max_rows=sink.MAX_ROWS,
            max_bytes=sink.MAX_BYTES,
            memory=fetch.MEMORY,
            batch_rows=connect.BATCH_ROWS,
            tables=copies,
            params=bound,
        )
        outcome = fetch.run(job, scratch / "home")
    answer = outcome.answer
    if "error" in answer:
        dest.unlink(missing_ok=True)
        unavailable = answer["error"] == "unavailable"
        raise RunFailed(str(answer["message"]), unavailable=unavailable, peak_rss=outcome.peak_rss)
    sample = [tuple(row) for row in answer["sample"]]
    return Result(answer["columns"], answer["rows"], sample, outcome.peak_rss)


def database_file(target: Target, root: Path, scratch: Path) -> Path | None:
    """The host file the worker opens: a private copy of the flow's, the profile's own, or
    (the phase's files alone) an empty DuckDB database the worker makes."""
    if target.engine == "postgresql":
        return None
    if target.file is not None:
        return Path(target.file)
    if target.flow_file in (None, ":memory:"):
        return scratch / "files.duckdb"
    name = target.flow_file
    assert name is not None
    copy = scratch / f"database{Path(name).suffix.lower()}"
    copy_below(root, name, copy)
    return copy


def copy_below(root: Path, name: str, copy: Path) -> None:
    """Copy flow file ``name`` to ``copy``: by descriptor below ``root``, no link followed."""
    try:
        with open_below(root, name) as fd, open(os.dup(fd), "rb") as src:
            with copy.open("xb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
    except (SandboxError, OSError) as exc:
        copy.unlink(missing_ok=True)
        why = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or exc
        raise RunFailed(
            f"flow.yaml: database: {name!r} {why} (a database file is read inside the flow "
            "folder only, with no link followed)",
            unavailable=True,
        ) from None
