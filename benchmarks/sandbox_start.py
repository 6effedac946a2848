"""Docker sandbox start-up: cold start to a first result, and the warm-standby hand-over.

    python benchmarks/sandbox_start.py [--runs 5]

Cold: container create + kernel start (pandas imported) + ``1+1``. Warm: from one kernel's
shutdown to the next ``kernel()`` answering ``1+1`` with the standby already warm.
Prints medians over ``--runs`` runs. Needs a Docker daemon and the sandbox image.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from sandbox.container import DockerSandbox
from sandbox.image.build import ensure_image
from sandbox.options import DockerOptions


def _box(root: Path, image: str) -> DockerSandbox:
    name = f"bench-{uuid.uuid4().hex[:8]}"
    return DockerSandbox(workspace=root / name, name=name, options=DockerOptions(image=image))


def cold(root: Path, image: str) -> float:
    start = time.perf_counter()
    box = _box(root, image)
    try:
        box.open()
        assert box.kernel().execute("1+1", timeout=60).result == {"text/plain": "2"}
        return time.perf_counter() - start
    finally:
        box.close()


def warm(root: Path, image: str, runs: int) -> list[float]:
    box = _box(root, image)
    times = []
    try:
        box.open()
        kernel = box.kernel()
        for _ in range(runs):
            kernel.execute("1+1", timeout=60)
            time.sleep(3)  # a phase runs meanwhile; the standby warms up in the background
            start = time.perf_counter()
            kernel.shutdown()
            kernel = box.kernel()
            kernel.execute("1+1", timeout=60)
            times.append(time.perf_counter() - start)
        kernel.shutdown()
    finally:
        box.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    image = ensure_image()
    with tempfile.TemporaryDirectory(prefix="praxis-bench-") as tmp:
        root = Path(tmp)
        colds = [cold(root, image) for _ in range(args.runs)]
        warms = warm(root, image, args.runs)
    print(f"cold start to first result: median {statistics.median(colds):.2f} s over {args.runs}")
    print(f"shutdown to next kernel ready (warm standby): median {statistics.median(warms):.3f} s")


if __name__ == "__main__":
    main()
