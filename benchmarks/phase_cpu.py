"""The CPU a phase costs, host and container, on docker: why a back-to-back phase cannot take
less wall time than half of it on two cores.

``python -m benchmarks.phase_cpu FLOW`` runs FLOW twice on docker, reuse off (the first run
warms caches) and prints, as JSON, the second run's wall time, this process's CPU time and the
container's (its cgroup's cpuacct counter, read just before the container is closed). The
benchmark runs a one-phase and a five-phase trivial flow; the difference over four phases is per
phase.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

# The container's CPU counter, in nanoseconds (cgroup v1) or microseconds (v2's usage_usec).
CPU_FILES = (
    ("/sys/fs/cgroup/cpuacct/docker/{id}/cpuacct.usage", 1e-9),
    ("/sys/fs/cgroup/cpu,cpuacct/docker/{id}/cpuacct.usage", 1e-9),
    ("/sys/fs/cgroup/system.slice/docker-{id}.scope/cpu.stat", 1e-6),
    ("/sys/fs/cgroup/docker/{id}/cpu.stat", 1e-6),
)


def container_cpu(container_id: str) -> float | None:
    for pattern, unit in CPU_FILES:
        try:
            text = Path(pattern.format(id=container_id)).read_text()
        except OSError:
            continue
        if text.startswith("usage_usec"):
            text = text.split()[1]
        return int(text.split()[0]) * unit
    return None


def measure(flow: Path) -> dict[str, Any]:
    os.environ["PRAXIS_SANDBOX"] = "docker"
    from praxis.flows.engine import runner
    from sandbox.container import DockerSandbox

    seen: dict[str, float | None] = {}
    close = DockerSandbox.close

    def reading_close(self: DockerSandbox) -> None:
        if self.container is not None:
            seen["container"] = container_cpu(self.container.id)
        close(self)

    DockerSandbox.close = reading_close  # type: ignore[method-assign]
    fresh = runner.RunOptions(reuse=False)  # a fresh run's phases run (none is restored)
    runner.run(flow, options=fresh)  # warm-up: page cache, bytecode
    before = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    state = runner.run(flow, options=fresh)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_SELF)
    host = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"status": state.status, "wall": wall, "host": host, "container": seen.get("container")}


if __name__ == "__main__":
    print(json.dumps(measure(Path(sys.argv[1]))))
