"""Benchmark 5: `praxis check` of a 200-phase flow, `status` and `runs` over 1,000 runs.

Each is the praxis command a person types, timed from process start to exit (so Python's
start-up and praxis's imports count), next to the bare start-up floor
(``python -c "import praxis.cli"``) measured in the same run.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from . import workload
from .measure import PYTHON, median, run_timed
from .report import Results, Row

PRAXIS = [PYTHON, "-m", "praxis"]


def _median_seconds(cmd: list[str], repeats: int, cwd: Path) -> float:
    run_timed(cmd, cwd=cwd)  # warm-up
    return median([run_timed(cmd, cwd=cwd).seconds for _ in range(repeats)])


def measure(results: Results, work: Path, repeats: int) -> None:
    wide = workload.wide_flow(work / "wide", 200)
    many = work / "many"
    shutil.rmtree(many, ignore_errors=True)
    workload.many_runs(many, 1000)
    try:
        times: dict[str, Any] = {
            "import praxis.cli": _median_seconds(
                [PYTHON, "-c", "import praxis.cli"], repeats, work
            ),
            "check 200 phases": _median_seconds([*PRAXIS, "check", str(wide)], repeats, work),
            "status, 1,000 runs": _median_seconds([*PRAXIS, "status", str(many)], repeats, work),
            "runs, 1,000 runs": _median_seconds([*PRAXIS, "runs", str(many)], repeats, work),
        }
    finally:
        shutil.rmtree(many, ignore_errors=True)
    results.details["scale"] = times
    floor = times["import praxis.cli"]
    sec = "5. scale"
    note = f"start-up floor (python + import praxis.cli) {floor:.2f} s"
    results.add(
        Row(
            sec,
            "`praxis check`, 200-phase flow",
            times["check 200 phases"],
            "s",
            limit=0.5,
            note=note,
        ),
        Row(
            sec,
            "`praxis status`, flow with 1,000 runs",
            times["status, 1,000 runs"],
            "s",
            limit=0.5,
            note=note,
        ),
        Row(
            sec,
            "`praxis runs`, flow with 1,000 runs",
            times["runs, 1,000 runs"],
            "s",
            limit=0.5,
            note=note,
        ),
    )
