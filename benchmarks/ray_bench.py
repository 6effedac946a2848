"""The ray backend against the docker backend: many runs at once, and the cost of one phase.

    python -m benchmarks.ray_bench [--runs 8] [--phases 5] [--samples 10]

1. Throughput: ``--runs`` runs of ``--phases`` phases each, all at once on a two-node Ray
   cluster on this machine (``ray.cluster_utils.Cluster``), against the same runs one after
   another on the docker backend. A phase is what the runner does: upload an input, take a
   fresh kernel, run a little pandas, shut it down, quiesce, list the workspace, fetch the
   output. Each run opens and closes its own sandbox (container start included).
2. Per-phase overhead: the median of ``--samples`` such phases on one open sandbox of each
   backend, taken in turn (docker, ray, docker, ...) so that other load on the machine falls
   on both; the difference is what the Ray hop costs a phase.

On one machine both "nodes" share its cores: (1) gains only by overlapping the runs' waits
(container and kernel start-up), which the same runs at once on the docker backend (threads,
one machine) show too; compare with that line to see Ray's own cost under contention. More
cores come only with real nodes. Needs Docker, the sandbox image and the ray extra.
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import statistics
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from sandbox import Sandbox, open_sandbox
from sandbox.image.build import ensure_image

GIB = 1 << 30
CODE = """\
import pandas as pd
df = pd.read_csv('in.csv')
df['total'] = df['qty'] * df['price']
df.to_csv('out_{n}.csv', index=False)
print(len(df))
"""
LABELS = {"praxis.bench": "ray"}


def _input(folder: Path) -> Path:
    path = folder / "in.csv"
    rows = "\n".join(f"{i},{i % 7},{i * 1.5}" for i in range(2000))
    path.write_text("id,qty,price\n" + rows + "\n")
    return path


def phase(sb: Sandbox, src: Path, n: int, out: Path) -> float:
    start = time.perf_counter()
    sb.upload(src, "in.csv")
    kernel = sb.kernel()
    try:
        result = kernel.execute(CODE.format(n=n), timeout=120)
    finally:
        kernel.shutdown()
    assert result.ok, (result.ename, result.evalue)
    sb.quiesce()
    assert f"out_{n}.csv" in sb.listing()
    sb.fetch(f"out_{n}.csv", out / f"out_{n}.csv")
    return time.perf_counter() - start


def one_run(config: dict[str, Any], root: Path, src: Path, phases: int) -> float:
    start = time.perf_counter()
    name = f"bench-{uuid.uuid4().hex[:8]}"
    sb = open_sandbox(config, workspace=root / name / "workspace", name=name)
    sb.open()
    try:
        for n in range(phases):
            phase(sb, src, n, root / name / "out")
    finally:
        sb.close()
    return time.perf_counter() - start


def per_phase(
    configs: dict[str, dict[str, Any]], root: Path, src: Path, samples: int
) -> dict[str, float]:
    """The median phase of each backend, phases taken in turn so that load drifts evenly."""
    boxes: dict[str, Sandbox] = {}
    times: dict[str, list[float]] = {key: [] for key in configs}
    try:
        for key, config in configs.items():
            name = f"bench-{uuid.uuid4().hex[:8]}"
            boxes[key] = open_sandbox(config, workspace=root / name / "workspace", name=name)
            boxes[key].open()
            phase(boxes[key], src, 0, root / name / "out")  # the standby is warm from here on
        for n in range(1, samples + 1):
            for key, sb in boxes.items():
                time.sleep(1)  # as between phases: the next spare kernel gets ready
                times[key].append(phase(sb, src, n, root / f"out-{key}"))
    finally:
        for sb in boxes.values():
            sb.close()
    return {key: statistics.median(values) for key, values in times.items()}


def start_cluster(workdir: Path) -> Any:
    os.environ.setdefault("RAY_AUTH_MODE", "token")
    os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(32))
    os.environ["PRAXIS_RAY_WORKDIR"] = str(workdir)
    import ray.cluster_utils

    node: dict[str, Any] = {"num_cpus": 2, "memory": 4 * GIB, "object_store_memory": 128 << 20}
    cluster = ray.cluster_utils.Cluster(
        initialize_head=True,
        head_node_args={**node, "resources": {"praxis-docker": 1}, "include_dashboard": False},
    )
    cluster.add_node(**node, resources={"praxis-docker": 1})
    cluster.wait_for_nodes()
    return cluster


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--phases", type=int, default=5)
    parser.add_argument("--samples", type=int, default=10)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    image = ensure_image(progress=lambda _line: None)
    small = {"image": image, "labels": LABELS, "memory": "512m", "cpus": 0.5}
    with tempfile.TemporaryDirectory(prefix="praxis-ray-bench-") as tmp:
        root = Path(tmp)
        src = _input(root)
        docker = {"backend": "docker", **small}
        cluster = start_cluster(root / "nodes")
        try:
            ray_config = {"backend": "ray", "address": cluster.address, **small}
            one_run(ray_config, root, src, 1)  # the first actor pays for worker start-up
            phases = per_phase({"docker": docker, "ray": ray_config}, root, src, args.samples)
            sequential = time.perf_counter()
            docker_runs = [one_run(docker, root, src, args.phases) for _ in range(args.runs)]
            sequential = time.perf_counter() - sequential
            together = time.perf_counter()
            with ThreadPoolExecutor(args.runs) as pool:
                list(pool.map(lambda _: one_run(docker, root, src, args.phases), range(args.runs)))
            together = time.perf_counter() - together
            concurrent = time.perf_counter()
            with ThreadPoolExecutor(args.runs) as pool:
                futures = [
                    pool.submit(one_run, ray_config, root, src, args.phases)
                    for _ in range(args.runs)
                ]
                ray_runs = [f.result() for f in futures]
            concurrent = time.perf_counter() - concurrent
        finally:
            import ray

            ray.shutdown()
            cluster.shutdown()
    docker_phase, ray_phase = phases["docker"], phases["ray"]

    print(f"{args.runs} runs x {args.phases} phases, {os.cpu_count()} cores")
    print(
        f"docker, one after another: {sequential:.1f} s "
        f"(median run {statistics.median(docker_runs):.1f} s)"
    )
    print(
        f"ray, all at once on 2 local nodes: {concurrent:.1f} s "
        f"(median run {statistics.median(ray_runs):.1f} s)"
    )
    print(f"docker, all at once on this machine: {together:.1f} s")
    print(f"ratio ray-concurrent / docker-sequential: {concurrent / sequential:.2f}")
    print(f"ratio ray-concurrent / docker-concurrent: {concurrent / together:.2f}")
    print(
        f"per phase (median of {args.samples}, in turn): docker {docker_phase * 1000:.0f} ms, "
        f"ray {ray_phase * 1000:.0f} ms, overhead {(ray_phase - docker_phase) * 1000:+.0f} ms"
    )
    print("one machine: both nodes share its cores; no speed-up from Ray itself here")


if __name__ == "__main__":
    main()
