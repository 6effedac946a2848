"""praxis: run data Flows of scripts, notebooks and agent turns in sandboxed Jupyter kernels.

The Python API mirrors the CLI (docs/api.md)::

    import praxis

    run = praxis.begin("flows/sales-report")
    praxis.advance("flows/sales-report", run.id)       # stops at the Gate
    review = praxis.read_table("flows/sales-report", "review.csv")
    praxis.edit("flows/sales-report", "review.csv", review.to_csv(index=False))
    praxis.approve("flows/sales-report")
    praxis.advance("flows/sales-report")
"""

from __future__ import annotations

from .api import (
    NoOutput,
    advance,
    approve,
    begin,
    cancel,
    check,
    edit,
    events,
    load,
    outputs,
    read_table,
    reject,
    rerun,
    status,
)
from .flows.contract import FlowInvalid
from .flows.handle import NoRun
from .flows.layout import NotWritable
from .flows.lock import Busy
from .flows.runner import Refused

__all__ = [
    "Busy",
    "FlowInvalid",
    "NoOutput",
    "NoRun",
    "NotWritable",
    "Refused",
    "advance",
    "approve",
    "begin",
    "cancel",
    "check",
    "edit",
    "events",
    "load",
    "outputs",
    "read_table",
    "reject",
    "rerun",
    "status",
]
