"""Many runs of one flow at once through `praxis serve`: runs completed per minute, and the
run page's answer time, with 1, 2, 4 and 8 runs in flight.

    python -m benchmarks.many_runs [--runs 8] [--in-flight 1 2 4 8] [--no-ray] [--repeats 1]

For each backend (docker; ray on a two-node Ray cluster on this machine) and each number N
of runs in flight: a fresh `praxis serve --max-runs N` and flow folder; ``--runs`` runs of
the three-phase flow of benchmarks/serve_load.py (without its Gate: nobody's click is on the
clock) started at once through the flows page; the time from the first start to the last
run done gives runs per minute. Meanwhile one reader asks for the runs' pages in turn (a
tenth of a second apart): the median and worst answer time of the run page, with N runs
advancing (N = 1: one run at a time). Every run is checked done with the right outputs.
Needs Docker, the sandbox image, and (for ray) the ray extra. Writes
benchmarks/results/<date>-many-runs.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from .report import RESULTS, machine
from .serve_load import Load, Serve, begin_runs, expected, load_flow

LABELS = {"praxis.bench": "many-runs"}


def one(root: Path, sandbox: dict[str, Any], runs: int, in_flight: int) -> dict[str, Any]:
    """``runs`` runs through a server advancing ``in_flight`` at once."""
    flow = load_flow(root / "load", sandbox, gate=False)
    regions = [f"r{n}" for n in range(runs)]
    load, pages = Load(), Load()
    serve = Serve(root, max_runs=in_flight)
    try:
        started = time.perf_counter()
        ids = begin_runs(serve, "load", regions, load)
        finished = threading.Event()
        reader = threading.Thread(target=_read_pages, args=(serve, ids, finished, pages))
        reader.start()
        try:
            with serve.client() as client:
                while not _all_done(client.get("/runs/state").json(), ids):
                    time.sleep(0.1)
            seconds = time.perf_counter() - started
        finally:
            finished.set()
            reader.join()
    finally:
        serve.stop()
    for run_id, region in zip(ids, regions, strict=True):
        for name, text in expected(region).items():
            got = (flow / "runs" / run_id / "output" / name).read_bytes()
            if got != text.encode():
                raise RuntimeError(f"run {run_id}: {name} is not what the flow makes")
    times = [a.seconds for a in pages.answers if a.status == 200]
    return {
        "seconds": seconds,
        "runs_per_minute": runs / seconds * 60,
        "page_median": statistics.median(times) if times else float("nan"),
        "page_worst": max(times) if times else float("nan"),
        "pages": len(times),
    }


def _all_done(state: dict[str, Any], ids: list[str]) -> bool:
    rows = {r["id"]: r for r in state["flows"].get("load", [])}
    bad = [r for r in rows.values() if r.get("status") in ("failed", "cancelled")]
    if bad:
        raise RuntimeError(f"a run stopped: {bad[0]}")
    return all(rows.get(i, {}).get("status") == "done" for i in ids)


def _read_pages(serve: Serve, ids: list[str], finished: threading.Event, load: Load) -> None:
    from urllib.parse import urlencode

    with serve.client() as client:
        n = 0
        while not finished.is_set():
            run = ids[n % len(ids)]
            n += 1
            q = urlencode({"flow": "load", "run": run})
            load.timed("page", run, lambda q=q: client.get(f"/run?{q}"))
            time.sleep(0.1)


def measure(
    backend: str, sandbox: dict[str, Any], args: argparse.Namespace, work: Path
) -> list[dict[str, Any]]:
    rows = []
    for in_flight in args.in_flight:
        got = []
        for n in range(args.repeats):
            root = work / f"{backend}-{in_flight}-{n}"
            try:
                got.append(one(root, sandbox, args.runs, in_flight))
            finally:
                shutil.rmtree(root, ignore_errors=True)
        row = {
            "backend": backend,
            "in_flight": in_flight,
            **{k: statistics.median(g[k] for g in got) for k in got[0]},
            "samples": got,
        }
        rows.append(row)
        print(_line(row), flush=True)
    return rows


def _line(row: dict[str, Any]) -> str:
    return (
        f"| {row['backend']} | {row['in_flight']} | {row['seconds']:.1f} s | "
        f"{row['runs_per_minute']:.1f} | {row['page_median'] * 1000:.0f} ms | "
        f"{row['page_worst'] * 1000:.0f} ms |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--in-flight", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    from sandbox.image.build import ensure_image

    image = ensure_image(progress=lambda _line: None)
    small = {"image": image, "labels": LABELS, "memory": "512m", "cpus": 0.5, "timeout": 300}
    began = time.time()
    print("| backend | runs in flight | all runs took | runs per minute | page median | worst |")
    print("|---|---|---|---|---|---|")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="praxis-many-runs-") as tmp:
        work = Path(tmp)
        rows += measure("docker", {"backend": "docker", **small}, args, work)
        if not args.no_ray:
            from .ray_bench import start_cluster

            cluster = start_cluster(work / "nodes")
            try:
                os.environ["PRAXIS_RAY_ADDRESS"] = cluster.address  # a flow names no address
                ray_config = {"backend": "ray", **small}
                rows += measure("ray", ray_config, args, work)
            finally:
                cluster.shutdown()
    write(rows, began, args)


def write(rows: list[dict[str, Any]], began: float, args: argparse.Namespace) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d-%H%M", time.gmtime(began))
    command = "python -m benchmarks.many_runs " + " ".join(
        [f"--runs {args.runs}", "--in-flight " + " ".join(map(str, args.in_flight))]
        + [f"--repeats {args.repeats}"]
        + (["--no-ray"] if args.no_ray else [])
    )
    m = machine()
    head = (
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(began))} on {m['cpu']} "
        f"({m['cores']} cores, {m['memory_gib']} GiB), with `{command}`.\n\n"
        "| backend | runs in flight | all runs took | runs per minute | page median | worst |\n"
        "|---|---|---|---|---|---|\n"
    )
    text = head + "\n".join(_line(r) for r in rows) + "\n"
    (RESULTS / f"{stamp}-many-runs.md").write_text("# many runs\n\n" + text, encoding="utf-8")
    data = {"command": command, "machine": m, "rows": rows, "cores": os.cpu_count()}
    (RESULTS / f"{stamp}-many-runs.json").write_text(json.dumps(data, indent=1) + "\n")
    print(f"written: benchmarks/results/{stamp}-many-runs.md")


if __name__ == "__main__":
    main()
