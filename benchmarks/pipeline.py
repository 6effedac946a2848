"""Benchmark 1: a 5-phase pandas flow, praxis against papermill and bare python.

Every system runs the same five steps on the same 100,000-row CSV, each in a fresh
process as a user would start it: ``praxis run`` (through benchmarks.drive, which adds only
the peak-memory report), one Python process calling ``papermill.execute_notebook`` for the
five notebooks, and a shell running ``python stepN.py`` five times. praxis is timed as the
whole ``praxis run`` command (its start, imports and exit included). One warm-up round, then
``repeats`` rounds, the systems interleaved in each round so noise falls on all of them.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import command, workload
from .measure import PYTHON, BenchmarkFailed, median, ratio, run_timed
from .report import Results, Row

PAPERMILL = """
import sys, papermill as pm
folder = sys.argv[1]
for n in range(1, 6):
    pm.execute_notebook(
        f"{folder}/step{n}.ipynb", f"{folder}/out/step{n}.ipynb", cwd=folder,
        kernel_name="python3", progress_bar=False, log_output=False,
    )
"""


# The floor of any runner: the same five steps in ONE python process (one start, one pandas
# import, then the work), each step in fresh globals, as a phase gets a fresh namespace.
ONE_PROCESS = """
import sys, pandas
for n in range(1, 6):
    with open(f"step{n}.py") as fh:
        exec(compile(fh.read(), f"step{n}.py", "exec"), {"__name__": "__main__"})
"""


def systems(work: Path, backends: list[str]) -> dict[str, Callable[[], dict[str, Any]]]:
    data = workload.write_sales(work / "data" / "s0.csv")
    flow = workload.pipeline_flow(work / "pipeline", data)
    bare = workload.bare_folder(work / "bare", data)
    (bare / "out").mkdir(exist_ok=True)
    chain = " && ".join(f"{PYTHON} step{n}.py" for n in range(1, workload.STEPS + 1))

    def run_bare() -> dict[str, Any]:
        return {"seconds": run_timed(["sh", "-c", chain], cwd=bare).seconds}

    def run_one_process() -> dict[str, Any]:
        return {"seconds": run_timed([PYTHON, "-c", ONE_PROCESS], cwd=bare).seconds}

    def run_papermill() -> dict[str, Any]:
        return {"seconds": run_timed([PYTHON, "-c", PAPERMILL, str(bare)], cwd=bare).seconds}

    seeded: list[Path] = []  # the fresh run a reused round restores from, kept

    def run_praxis(backend: str, *, reuse: bool = False) -> Callable[[], dict[str, Any]]:
        def go() -> dict[str, Any]:
            if reuse and not seeded:
                seeded.append(command.run_flow(flow, backend)[1])
            timed, run_dir = command.run_flow(flow, backend, reuse=reuse)
            _same_output(run_dir / "output" / "s5.csv", bare / "s5.csv")
            if not reuse:  # a reused round needs the runs it restores from
                shutil.rmtree(run_dir, ignore_errors=True)
            return {"seconds": timed.seconds, "maxrss_kib": timed.maxrss_kib}

        return go

    found: dict[str, Callable[[], dict[str, Any]]] = {
        "bare": run_bare,
        "one-process": run_one_process,
        "papermill": run_papermill,
    }
    for backend in backends:
        found[f"praxis-{backend}"] = run_praxis(backend)
    found["praxis-reused"] = run_praxis(backends[-1], reuse=True)
    return found


def _same_output(ours: Path, theirs: Path) -> None:
    """praxis must have computed what the peers computed, or the timing compares nothing."""
    if theirs.exists() and ours.read_bytes() != theirs.read_bytes():
        raise BenchmarkFailed(f"{ours} differs from {theirs}: the systems did different work")


def measure(results: Results, work: Path, repeats: int, backends: list[str]) -> None:
    runs = systems(work, backends)
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in runs}
    for go in runs.values():  # warm-up: page cache, bytecode, kernel specs
        go()
    for _ in range(repeats):
        for name, go in runs.items():
            samples[name].append(go())
    secs = {name: median([s["seconds"] for s in got]) for name, got in samples.items()}
    results.details["pipeline"] = {"samples": samples, "median_seconds": secs}
    section = "1. 5-phase flow"
    results.add(
        Row(section, "bare python, 5 scripts", secs["bare"], "s"),
        Row(section, "papermill, 5 notebooks", secs["papermill"], "s"),
        Row(
            section,
            "floor: the 5 steps in one python process",
            secs["one-process"],
            "s",
            note=f"{ratio(secs['one-process'], secs['bare']):.2f}x bare python, "
            f"{ratio(secs['one-process'], secs['papermill']):.2f}x papermill: no runner "
            "that starts an interpreter does better",
        ),
    )
    for backend in backends:
        s = secs[f"praxis-{backend}"]
        results.add(Row(section, f"praxis, {backend} backend (fresh: --no-reuse)", s, "s"))
    results.add(
        Row(
            section,
            "praxis, every phase reused from an earlier run",
            secs["praxis-reused"],
            "s",
            note=f"{ratio(secs['praxis-reused'], secs['bare']):.2f}x bare python: no sandbox "
            "opens, the outputs are restored from the flow's store",
        )
    )
    for backend in backends:
        s = secs[f"praxis-{backend}"]
        docker = backend == "docker"
        results.add(
            Row(
                section,
                f"praxis {backend} / papermill",
                ratio(s, secs["papermill"]),
                "x",
                limit=0.3 if docker else None,
            ),
            Row(
                section,
                f"praxis {backend} / bare python",
                ratio(s, secs["bare"]),
                "x",
                limit=0.62 if docker else None,
            ),
        )
    for backend in backends:
        rss = median([s["maxrss_kib"] for s in samples[f"praxis-{backend}"]]) / 1024
        results.add(
            Row(
                "5. scale",
                f"runner peak memory, 5-phase flow, {backend}",
                rss,
                "MiB",
                note="the praxis process (and the local backend's kernel server, "
                "which it waits for); not the container",
            )
        )
