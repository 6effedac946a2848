"""What recording the workspace costs, and what reuse saves: ``python -m benchmarks.snapshots``.

1. The 5-phase pandas flow (100,000 rows) on a backend: per phase, the time to record the
   workspace before (restore, upload, manifest) and after (read new files into the store),
   from the run's own ``workspace_recorded`` events, and the disk the store and manifests
   take next to the outputs.
2. A phase that writes a 1 GB output: the time to record it (copy into the store and hash)
   against ``cp`` of the same file, side by side.
3. Re-running the 5-phase flow from its first phase with nothing changed: the later phases
   are reused, so the re-run costs about one phase. Wall time of ``rerun`` + ``advance``
   against the fresh ``run`` and against the first phase alone.

Every ratio compares figures measured in this one invocation (medians of ``--repeats``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from . import workload
from .measure import PYTHON, median, run_timed

GB = 1_000_000_000


def _events(run_dir: Path, kind: str) -> list[dict[str, Any]]:
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e.get("kind") == kind]


def _disk(path: Path) -> int:
    """Bytes a folder takes on disk (st_blocks; a hard link counted once)."""
    seen, total = set(), 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            st = os.lstat(os.path.join(folder, name))
            if st.st_ino not in seen:
                seen.add(st.st_ino)
                total += st.st_blocks * 512
    return total


def _newest(flow: Path) -> Path:
    return sorted(p for p in (flow / "runs").iterdir() if not p.name.startswith("."))[-1]


def _praxis(*args: str) -> float:
    return run_timed([PYTHON, "-m", "praxis", *args]).seconds


def _with_backend(flow: Path, backend: str) -> None:
    text = (flow / "flow.yaml").read_text()
    (flow / "flow.yaml").write_text(text.replace("backend: auto", f"backend: {backend}"))


def pipeline(work: Path, backend: str, repeats: int) -> dict[str, Any]:
    data = workload.write_sales(work / "sales.csv")
    pre, post, runs, reruns, first, reused, store, outputs = [], [], [], [], [], [], [], []
    for n in range(repeats):
        flow = workload.pipeline_flow(work / f"pipeline-{n}", data)
        _with_backend(flow, backend)
        runs.append(_praxis("run", str(flow), "--quiet"))
        run_dir = _newest(flow)
        recorded = _events(run_dir, "workspace_recorded")
        uploads = {e["phase"]: e["seconds"] for e in _events(run_dir, "inputs_uploaded")}
        pre += [e["seconds"] - uploads.get(e["phase"], 0) for e in recorded if e["which"] == "pre"]
        post += [e["seconds"] for e in recorded if e["which"] == "post"]
        store.append(_disk(flow / ".praxis" / "objects") + _disk(run_dir / "snapshots"))
        outputs.append(_disk(run_dir / "output"))
        done = {e["phase"]: e["seconds"] for e in _events(run_dir, "phase_done")}
        first.append(done["step1"])
        t0 = time.perf_counter()
        _praxis("rerun", str(flow), "--from", "step1")
        _praxis("advance", str(flow), "--quiet")
        reruns.append(time.perf_counter() - t0)
        reused.append(len(_events(run_dir, "phase_reused")))
        shutil.rmtree(flow)
    return {
        "backend": backend,
        "pre_ms": 1000 * median(pre),
        "post_ms": 1000 * median(post),
        "store_and_snapshots_MB": median(store) / 1e6,
        "outputs_MB": median(outputs) / 1e6,
        "run_s": median(runs),
        "rerun_s": median(reruns),
        "first_phase_s": median(first),
        "rerun_over_run": median(reruns) / median(runs),
        "phases_reused": min(reused),
    }


def big_output(work: Path, backend: str, repeats: int, size: int) -> dict[str, Any]:
    post, cps = [], []
    source = workload.write_big(work / "big.src", size)
    for n in range(repeats):
        flow = workload.transfer_flow(work / f"big-{n}", size)
        _with_backend(flow, backend)
        doc = yaml.safe_load((flow / "flow.yaml").read_text())
        doc["phases"] = doc["phases"][:1]  # only the phase that writes the file
        (flow / "flow.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
        _praxis("run", str(flow), "--quiet")
        run_dir = _newest(flow)
        recorded = _events(run_dir, "workspace_recorded")
        post += [e["seconds"] for e in recorded if e["which"] == "post" and e["phase"] == "make"]
        t0 = time.perf_counter()
        shutil.copyfile(source, work / "big.copy")
        cps.append(time.perf_counter() - t0)
        (work / "big.copy").unlink()
        shutil.rmtree(flow)
    source.unlink()
    return {
        "backend": backend,
        "record_1GB_s": median(post),
        "cp_1GB_s": median(cps),
        "record_over_cp": median(post) / median(cps),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.snapshots", description=__doc__)
    p.add_argument("--backend", default="docker", choices=["docker", "local"])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--size", type=int, default=GB, help="bytes of the big output")
    args = p.parse_args(argv)
    work = Path(__file__).resolve().parent / "work" / "snapshots"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        result = {
            "pipeline": pipeline(work, args.backend, args.repeats),
            "big_output": big_output(work, args.backend, args.repeats, args.size),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
