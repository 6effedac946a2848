"""Benchmark 5: `praxis check` of a 200-phase flow, `status` and `runs` over 1,000 runs;
and a 1 GB working input that is a file of the flow, through `check`, a first `run` and a
re-run.

Each is the praxis command a person types, timed from process start to exit (so Python's
start-up and praxis's imports count), next to the bare start-up floor
(``python -c "import praxis.cli"``) measured in the same run; the big input's runs next to
reading the file once (sha256 of it) and copying it once (``cp``), with the runner's peak
RSS. ``python -m benchmarks.scale input`` measures the big input alone.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from . import workload
from .measure import PYTHON, median, run_timed
from .report import Results, Row, markdown

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


ROW = b"1,alpha,2.5,2024-01-01\n"
BIG_INPUT = """
    sandbox: {backend: fake}
    phases:
      - id: count
        kind: script
        script: count.py
        inputs: {working: [data/big.csv]}
        outputs: [size.txt]
"""
COUNT = 'import os\nopen("size.txt", "w").write(str(os.path.getsize("data/big.csv")))\n'


def _big_flow(root: Path, gigabytes: float) -> Path:
    """A flow whose one phase has a ~``gigabytes`` GB CSV of the flow as its working input
    (on the fake backend: what is measured is the runner's upload, not a container)."""
    shutil.rmtree(root, ignore_errors=True)
    (root / "data").mkdir(parents=True)
    (root / "flow.yaml").write_text(textwrap.dedent(BIG_INPUT))
    (root / "count.py").write_text(COUNT)
    block = ROW * ((1 << 20) // len(ROW))
    with open(root / "data" / "big.csv", "wb") as fh:
        fh.write(b"id,name,value,day\n")
        for _ in range(int(gigabytes * 1e9) // len(block) + 1):
            fh.write(block)
    return root


def _flushed() -> None:
    os.sync()  # dirty pages of the last write are not charged to the next measure


def big_input(results: Results, work: Path, repeats: int) -> None:
    flow = _big_flow(work / "big-input", 1.0)
    big = flow / "data" / "big.csv"
    env = {"PRAXIS_SANDBOX": "fake"}
    times: dict[str, Any] = {"bytes": big.stat().st_size}
    try:
        reads, copies = [], []
        for _ in range(repeats):
            _flushed()
            t0 = time.perf_counter()
            digest = hashlib.sha256()
            with open(big, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
            reads.append(time.perf_counter() - t0)
            _flushed()
            copies.append(run_timed(["cp", str(big), str(work / "copy.csv")]).seconds)
            (work / "copy.csv").unlink()
        times["read once (sha256)"] = median(reads)
        times["copy once (cp)"] = median(copies)
        check = run_timed([*PRAXIS, "check", str(flow)], cwd=work, env=env)
        times["check"] = check.seconds
        first, again = [], []
        for _ in range(repeats):
            shutil.rmtree(flow / ".praxis", ignore_errors=True)
            shutil.rmtree(flow / "runs", ignore_errors=True)
            _flushed()
            done = run_timed([*PRAXIS, "run", str(flow), "--allow-local"], cwd=work, env=env)
            first.append((done.seconds, done.maxrss_kib))
            _flushed()
            done = run_timed([*PRAXIS, "run", str(flow), "--allow-local"], cwd=work, env=env)
            again.append((done.seconds, done.maxrss_kib))
        times["run (first: into the store)"] = median([t for t, _ in first])
        times["run again (stored: hashed only)"] = median([t for t, _ in again])
        times["runner peak RSS MiB"] = max(r for _, r in first + again) / 1024
    finally:
        shutil.rmtree(flow, ignore_errors=True)
    results.details["big input"] = times
    sec = "5. scale"
    floor = (
        f"floor: read once {times['read once (sha256)']:.2f} s, "
        f"cp once {times['copy once (cp)']:.2f} s"
    )
    results.add(
        Row(sec, "`praxis check`, 1 GB working input", times["check"], "s", limit=1.0),
        Row(
            sec,
            "`praxis run`, 1 GB working input, first",
            times["run (first: into the store)"],
            "s",
            note=floor,
        ),  # fmt: skip
        Row(
            sec,
            "`praxis run` again, 1 GB input stored",
            times["run again (stored: hashed only)"],
            "s",
            note=floor,
        ),  # fmt: skip
        Row(
            sec,
            "runner peak RSS, 1 GB working input",
            times["runner peak RSS MiB"],
            "MiB",
            limit=256,
        ),  # fmt: skip
    )


if __name__ == "__main__":
    here = Path(os.environ.get("PRAXIS_BENCH_WORK", "/tmp/praxis-bench-scale"))
    here.mkdir(parents=True, exist_ok=True)
    out = Results(repeats=3)
    if sys.argv[1:] == ["input"]:
        big_input(out, here, out.repeats)
    else:
        measure(out, here, out.repeats)
    print(markdown(out, "python -m benchmarks.scale " + " ".join(sys.argv[1:])))
    print(out.details, file=sys.stderr)
    shutil.rmtree(here, ignore_errors=True)
