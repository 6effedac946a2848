"""The Python API: the CLI's verbs as functions, for notebooks and scripts.

The functions of ``praxis.service`` (the one service the CLI, the web UI and the MCP server
call too), plus ``read_table`` here: ``flow`` is always a Flow, a flow folder or its
flow.yaml; ``run`` a run id, the newest run when None. Errors are those of the runner
(``Refused``, ``Busy``, ``NotWritable``, ``FlowInvalid``, ``SandboxInvalid``,
``SandboxUnavailable``, ``NoRun``, ``Unbound``) plus ``NoOutput`` here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import UsageError
from .service.acting import (
    SandboxChoice,
    accept,
    advance,
    approve,
    begin,
    cancel,
    edit,
    manage,
    read,
    reject,
    rerun,
)
from .service.reading import FlowRef, check, events, load, open_run, outputs, status

if TYPE_CHECKING:
    import pandas

__all__ = [
    "FlowRef",
    "NoOutput",
    "SandboxChoice",
    "accept",
    "advance",
    "approve",
    "begin",
    "cancel",
    "check",
    "edit",
    "events",
    "load",
    "manage",
    "outputs",
    "read",
    "read_table",
    "reject",
    "rerun",
    "status",
]

READERS = {".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".json": "json", ".jsonl": "jsonl"}


class NoOutput(UsageError, LookupError):
    """Raised by ``read_table``/``outputs`` users when a run has no such output file (yet)."""

    def __init__(self, flow: str, run: str, name: str, present: list[str]) -> None:
        have = ", ".join(present) or "none yet"
        super().__init__(f"{flow} run {run} has no output {name!r} (outputs so far: {have})")
        self.name = name


def read_table(flow: FlowRef, name: str, run: str | None = None) -> pandas.DataFrame:
    """Output ``name`` of a run as a DataFrame (.csv, .tsv, .parquet, .json, .jsonl)."""
    import pandas as pd

    handle = open_run(flow, run)
    have = outputs(handle.flow, handle.id)
    if name not in have:
        raise NoOutput(handle.flow.name, handle.id, name, list(have))
    path = have[name]
    kind = READERS.get(path.suffix.lower())
    if kind == "csv":
        return pd.read_csv(path)
    if kind == "tsv":
        return pd.read_csv(path, sep="\t")
    if kind == "parquet":
        return pd.read_parquet(path)
    if kind in ("json", "jsonl"):
        return pd.read_json(path, lines=kind == "jsonl")
    kinds = ", ".join(READERS)
    raise ValueError(f"{name}: read_table reads {kinds} files; open {path} directly instead")
