"""`praxis runs`: a flow's runs, newest first (or some of them deleted)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from .. import units
from ..errors import EXIT
from ..flows.definition import contract
from ..flows.report import history
from ..terminal import escape
from . import Usage


def cmd_runs(args: argparse.Namespace) -> int:
    flow = contract.require(Path(args.flow))
    if args.delete or args.keep is not None:
        from ..service import acting  # deleting runs takes the runner; listing them does not

        if args.keep is not None and args.keep < 0:
            raise Usage("--keep takes a number of runs, 0 or more")
        for run_id in acting.delete_runs(flow, args.delete, keep=args.keep):
            print(f"deleted run {run_id}")
        return EXIT["ok"]
    for line in table(history.rows(flow)):
        print(line)
    return EXIT["ok"]


HEADER = ("run", "status", "began (UTC)", "took", "parameters", "Gates decided")


def table(rows: list[history.RunRow]) -> list[str]:
    """The runs as aligned columns under a header (what a phase or a person wrote, escaped)."""
    cells = [HEADER] + [_cells(r) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEADER) - 1)]
    return [
        "  ".join([*(c[i].ljust(widths[i]) for i in range(len(widths))), c[-1]]).rstrip()
        for c in cells
    ]


def _cells(row: history.RunRow) -> tuple[str, ...]:
    if row.problem is not None:
        return (row.id, f"unreadable: {escape(row.problem)}", "", "", "", "")
    began = (
        time.strftime("%Y-%m-%d %H:%M", time.gmtime(row.started)) if row.started is not None else ""
    )
    return (
        row.id,
        escape(row.status),
        began,
        units.duration(row.seconds),
        escape(params_words(row.params)),
        escape("; ".join(f"{d.phase} {d.decision} by {d.actor}" for d in row.decisions)),
    )


def params_words(params: dict[str, Any], limit: int = 60) -> str:
    """``name=value`` pairs (a value that is not text as JSON), clipped at ``limit``."""
    text = " ".join(
        f"{k}={v if isinstance(v, str) else json.dumps(v, default=str)}"
        for k, v in sorted(params.items())
    )
    return text if len(text) <= limit else text[: limit - 1] + "…"
