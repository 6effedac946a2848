"""The flow's store and reuse across runs: ``python -m benchmarks.store_reuse``.

1. **Second run.** The 5-phase pandas flow (100,000 rows): a fresh ``praxis run``, then a
   second ``praxis run`` of the unchanged flow, whose five phases are restored from the
   first (checked: five ``phase_reused`` events, no phase started). Wall time of each
   command from process start to exit; the ratio second / first.
2. **Ten runs.** The disk the flow's runs and store take (st_blocks, a hard link counted once)
   after one run and after ten runs of the unchanged flow: with reuse (the default), and with
   ``--no-reuse`` (every phase runs; only the store's sharing saves disk); each also without
   the runs' workspaces (on docker a disk image per run that ran a phase).
3. **A 1 GB output.** A phase writes a new 1 GB file; the time praxis takes to record it
   (the ``workspace_recorded`` event after the phase: the workspace's listing, then the copy
   into the store, hashed on the way) against ``sha256sum`` of the same file alone and ``cp``
   of it, side by side, dirty pages flushed (``sync``) before each.

Every ratio compares figures measured in this one invocation (medians of ``--repeats``).
Prints the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
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


def _runs(flow: Path) -> list[Path]:
    return sorted(p for p in (flow / "runs").iterdir() if not p.name.startswith("."))


def _praxis(*args: str) -> float:
    timed = run_timed([PYTHON, "-m", "praxis", *args])
    return timed.seconds


def _disk(*folders: Path, skip: tuple[str, ...] = ()) -> int:
    """Bytes the folders take on disk (st_blocks; each inode counted once), but the files and
    folders named ``skip``."""
    seen, total = set(), 0
    for top in folders:
        for folder, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d not in skip]
            for name in files:
                if name in skip:
                    continue
                st = os.lstat(os.path.join(folder, name))
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_blocks * 512
    return total


def _record(flow: Path, skip: tuple[str, ...] = ()) -> int:
    return _disk(flow / "runs", flow / ".praxis", skip=skip)


WORKSPACE = ("workspace", "workspace.img")  # the sandbox's workspace (docker: its disk image)


def _with_backend(flow: Path, backend: str) -> None:
    text = (flow / "flow.yaml").read_text()
    (flow / "flow.yaml").write_text(text.replace("backend: auto", f"backend: {backend}"))


def second_run(work: Path, data: Path, backend: str, repeats: int) -> dict[str, Any]:
    firsts, seconds = [], []
    for n in range(repeats):
        flow = workload.pipeline_flow(work / f"pipeline-{n}", data)
        _with_backend(flow, backend)
        firsts.append(_praxis("run", str(flow), "--quiet"))
        seconds.append(_praxis("run", str(flow), "--quiet"))
        again = _runs(flow)[-1]
        if len(_events(again, "phase_reused")) != workload.STEPS or _events(again, "phase_started"):
            raise RuntimeError(f"{again}: the second run did not restore every phase")
        shutil.rmtree(flow)
    return {
        "backend": backend,
        "first_run_s": median(firsts),
        "second_run_s": median(seconds),
        "second_over_first": median(seconds) / median(firsts),
        "samples": {"first": firsts, "second": seconds},
    }


def ten_runs(work: Path, data: Path, backend: str, no_reuse: bool) -> dict[str, Any]:
    flow = workload.pipeline_flow(work / "ten", data)
    _with_backend(flow, backend)
    extra = ("--no-reuse",) if no_reuse else ()
    _praxis("run", str(flow), "--quiet", *extra)
    one, one_record = _record(flow), _record(flow, WORKSPACE)
    for _ in range(9):
        _praxis("run", str(flow), "--quiet", *extra)
    ten, ten_record = _record(flow), _record(flow, WORKSPACE)
    if len(_runs(flow)) != 10:
        raise RuntimeError("ten runs were not made")
    shutil.rmtree(flow)
    return {
        "backend": backend,
        "reuse": not no_reuse,
        "one_run_MB": one / 1e6,
        "ten_runs_MB": ten / 1e6,
        "ten_over_one": ten / one,
        # the same without the runs' workspaces: the store, manifests, records, events
        "one_run_record_MB": one_record / 1e6,
        "ten_runs_record_MB": ten_record / 1e6,
        "ten_over_one_record": ten_record / one_record,
    }


def _timed(cmd: list[str]) -> float:
    subprocess.run(["sync"], check=True)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def big_output(work: Path, backend: str, repeats: int, size: int) -> dict[str, Any]:
    records, sums, cps = [], [], []
    for n in range(repeats):
        flow = workload.transfer_flow(work / f"big-{n}", size)
        _with_backend(flow, backend)
        doc = yaml.safe_load((flow / "flow.yaml").read_text())
        doc["phases"] = doc["phases"][:1]  # only the phase that writes the file
        doc["sandbox"]["collect"] = "2g"
        (flow / "flow.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
        _praxis("run", str(flow), "--quiet")
        run_dir = _runs(flow)[-1]
        (post,) = [e for e in _events(run_dir, "workspace_recorded") if e["which"] == "post"]
        if post["stored_bytes"] != size:
            raise RuntimeError(f"{run_dir}: recorded {post['stored_bytes']} bytes, not {size}")
        records.append(post["seconds"])
        big = run_dir / "output" / "big.bin"  # the object itself (a hard link to it)
        sums.append(_timed(["sha256sum", str(big)]))
        cps.append(_timed(["cp", str(big), str(work / "big.copy")]))
        (work / "big.copy").unlink()
        shutil.rmtree(flow)
    return {
        "backend": backend,
        "bytes": size,
        "record_s": median(records),
        "sha256sum_s": median(sums),
        "cp_s": median(cps),
        "record_over_sha256sum": median(records) / median(sums),
        "record_over_cp": median(records) / median(cps),
        "samples": {"record": records, "sha256sum": sums, "cp": cps},
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.store_reuse", description=__doc__)
    p.add_argument("--backend", default="docker", choices=["docker", "local"])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--size", type=int, default=GB, help="bytes of the big output")
    p.add_argument(
        "--only", action="append", choices=["second", "ten", "big"], help="one section (repeat)"
    )
    args = p.parse_args(argv)
    only = set(args.only or ["second", "ten", "big"])
    work = Path(__file__).resolve().parent / "work" / "store_reuse"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    result: dict[str, Any] = {}
    try:
        data = workload.write_sales(work / "sales.csv")
        if "second" in only:
            result["second_run"] = second_run(work, data, args.backend, args.repeats)
        if "ten" in only:
            result["ten_runs"] = ten_runs(work, data, args.backend, no_reuse=False)
            result["ten_runs_no_reuse"] = ten_runs(work, data, args.backend, no_reuse=True)
        if "big" in only:
            result["big_output"] = big_output(work, args.backend, args.repeats, args.size)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
