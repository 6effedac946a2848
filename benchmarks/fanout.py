"""A fan-out phase (DESIGN.md §17): eight one-CPU partitions, one after another against two at
once, on the docker backend, and on a two-node Ray cluster on this machine.

    python -m benchmarks.fanout [--partitions 8] [--work 4] [--repeats 2] [--no-ray]

Each partition is a sandbox of its own (container start included) whose code keeps one CPU
busy for ``--work`` seconds of CPU time. ``parallel: 1`` against ``parallel: 2`` are measured
side by side, in turn (1, 2, 1, 2, ...), so that other load on the machine falls on both; the
ratio of their medians is the speed-up. On the Ray cluster (two nodes of 2 declared CPUs each,
sharing this machine's cores) the same phase runs with ``parallel: 2`` and ``4``, the
partitions spread over both nodes. Runs go through the service (``praxis run --no-reuse``'s
path), each a fresh run: nothing is restored from an earlier round. Results are printed and
written to benchmarks/results/<date>-fanout.{md,json}. Needs Docker, the sandbox image and,
for the cluster, the ray extra.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from praxis.service import acting
from sandbox.image.build import ensure_image

from .ray_bench import start_cluster
from .report import RESULTS, machine

FLOW = """\
flow: fanout-bench
sandbox: {backend: %(backend)s, image: '%(image)s', cpus: 1, memory: 512m, timeout: 600,
          labels: {praxis.bench: fanout}%(cluster)s}
phases:
  - id: burn
    kind: script
    script: burn.py
    foreach: {param: part, values: [%(values)s]}
    parallel: %(parallel)d
    outputs: [spent.txt]
"""
BURN = """\
import time
t0 = time.process_time()
n = 0
while time.process_time() - t0 < %(work)r:
    n += 1
open('spent.txt', 'w').write(f"{params['part']} {n}\\n")
"""


def write_flow(
    root: Path, backend: str, image: str, parallel: int, args: argparse.Namespace
) -> Path:
    folder = root / f"{backend}-{parallel}"
    folder.mkdir(parents=True, exist_ok=True)
    values = ", ".join(f"p{i}" for i in range(1, args.partitions + 1))
    cluster = ", cluster: bench" if backend == "ray" else ""
    text = FLOW % {"backend": backend, "image": image, "values": values, "parallel": parallel,
                   "cluster": cluster}  # fmt: skip
    (folder / "flow.yaml").write_text(text)
    (folder / "burn.py").write_text(BURN % {"work": float(args.work)})
    return folder


def one_run(flow: Path) -> dict[str, Any]:
    """One fresh run of the fan-out; its wall time and where each partition ran."""
    t0 = time.perf_counter()
    state = acting.run(flow, reuse=False)
    seconds = time.perf_counter() - t0
    if state.status != "done":
        raise SystemExit(f"{flow.name}: the run ended {state.status}: {state.error}")
    parts = state.phase("burn").partitions
    records = flow / "runs" / state.run / "records" / "burn"
    steps: dict[str, list[float]] = {}
    for record in records.glob("*.ipynb"):  # each partition's seconds per step (partition.py)
        meta = json.loads(record.read_text())["metadata"]["praxis"]
        for step, took in meta.get("steps", {}).items():
            steps.setdefault(step, []).append(float(took))
    nodes = sorted({str(p.get("node") or "") for p in parts.values()})
    return {"seconds": seconds, "nodes": nodes, "steps": steps}


def measure(flows: dict[str, Path], repeats: int) -> dict[str, dict[str, Any]]:
    """Each flow ``repeats`` times, in turn; the median, every time, the nodes used."""
    times: dict[str, list[float]] = {k: [] for k in flows}
    nodes: dict[str, set[str]] = {k: set() for k in flows}
    steps: dict[str, dict[str, list[float]]] = {k: {} for k in flows}
    for _ in range(repeats):
        for key, flow in flows.items():
            done = one_run(flow)
            times[key].append(done["seconds"])
            nodes[key] |= set(done["nodes"])
            for step, took in done["steps"].items():
                steps[key].setdefault(step, []).extend(took)
            each = ", ".join(f"{s} {statistics.median(t):.2f}" for s, t in done["steps"].items())
            print(f"  {key}: {done['seconds']:.1f} s (a partition's median seconds: {each})",
                  flush=True)  # fmt: skip
    return {
        k: {"median": statistics.median(v), "times": v, "nodes": len(nodes[k] - {""}),
            "steps": {s: statistics.median(t) for s, t in steps[k].items()}}
        for k, v in times.items()
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--work", type=float, default=4.0, help="CPU seconds per partition")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    image = ensure_image(progress=lambda _line: None)
    began = time.time()
    with tempfile.TemporaryDirectory(prefix="praxis-fanout-bench-") as tmp:
        root = Path(tmp)
        docker = {
            f"docker, parallel {n}": write_flow(root, "docker", image, n, args) for n in (1, 2)
        }
        one_run(docker["docker, parallel 2"])  # a first run warms the image's page cache
        results = measure(docker, args.repeats)
        if not args.no_ray:
            results |= _on_ray(root, image, args)
    seq, par = results["docker, parallel 1"]["median"], results["docker, parallel 2"]["median"]
    print(f"speed-up of parallel 2 over 1 on docker: {seq / par:.2f}x")
    write(results, began, args, seq / par)


def _on_ray(root: Path, image: str, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    cluster = start_cluster(root / "nodes")
    profile = root / "profile.yaml"
    profile.write_text(f"clusters:\n  bench: {{address: '{cluster.address}'}}\n")
    os.environ["PRAXIS_PROFILE"] = str(profile)
    os.environ.pop("PRAXIS_RAY_ADDRESS", None)
    try:
        flows = {
            f"ray 2 nodes, parallel {n}": write_flow(root, "ray", image, n, args) for n in (2, 4)
        }
        one_run(flows["ray 2 nodes, parallel 2"])  # the first actors pay for worker start-up
        return measure(flows, args.repeats)
    finally:
        import ray

        ray.shutdown()
        cluster.shutdown()


def write(
    results: dict[str, dict[str, Any]], began: float, args: argparse.Namespace, ratio: float
) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d-%H%M", time.gmtime(began))
    command = (
        f"python -m benchmarks.fanout --partitions {args.partitions} --work {args.work:g} "
        f"--repeats {args.repeats}" + (" --no-ray" if args.no_ray else "")
    )
    m = machine()
    base = results["docker, parallel 1"]["median"]
    lines = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(began))} on {m['cpu']} "
        f"({m['cores']} cores, {m['memory_gib']} GiB), with `{command}`.",
        "",
        "| where | phase took (median) | each round | against parallel 1 | nodes used |",
        "|---|---|---|---|---|",
    ]
    for key, r in results.items():
        each = ", ".join(f"{t:.1f}" for t in r["times"])
        lines.append(
            f"| {key} | {r['median']:.1f} s | {each} | {base / r['median']:.2f}x | "
            f"{r['nodes'] or 1} |"
        )
    text = "\n".join(lines) + "\n"
    (RESULTS / f"{stamp}-fanout.md").write_text("# fan-out\n\n" + text, encoding="utf-8")
    data = {"command": command, "machine": m, "results": results, "speedup": ratio}
    (RESULTS / f"{stamp}-fanout.json").write_text(json.dumps(data, indent=1) + "\n")
    print(text)
    print(f"written: benchmarks/results/{stamp}-fanout.md")


if __name__ == "__main__":
    main()
