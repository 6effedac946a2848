"""praxis as a person runs it: the `praxis` command in a fresh process, timed whole.

``python -m benchmarks.compare --code DIR`` measures the praxis of another checkout (DIR's
``praxis`` and ``sandbox`` come first on PYTHONPATH), for a before/after table made with the
same measurements on the same machine.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

from .measure import PYTHON, BenchmarkFailed, Timed, run_timed

PRAXIS = str(Path(PYTHON).with_name("praxis"))  # the console script, as a person types it


def praxis(*args: str) -> list[str]:
    return [PRAXIS, *args]


def run_flow(flow: Path, backend: str, *, reuse: bool = False) -> tuple[Timed, Path]:
    """``praxis run FLOW --quiet`` on ``backend`` to its end; (timing, the run's folder).

    A fresh run by default (``--no-reuse``): every round of a benchmark runs the same flow,
    and a round restored from the one before would measure no phase at all. ``reuse=True``
    measures that restore: every phase reused, no sandbox opened (``backend`` is None)."""
    argv = praxis("run", str(flow), "--quiet", *(() if reuse else ("--no-reuse",)))
    timed = run_timed(argv, cwd=flow, env={"PRAXIS_SANDBOX": backend})
    found = re.search(r"^run (\S+):", timed.stdout, re.MULTILINE)
    if found is None:
        raise BenchmarkFailed(f"praxis run printed no run id: {timed.stdout[-300:]!r}")
    run_dir = flow / "runs" / found.group(1)
    state = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    expected = None if reuse else backend  # a run whose every phase is reused opens none
    if state["status"] != "done" or state.get("backend") != expected:
        raise BenchmarkFailed(
            f"praxis run on {backend}: {state['status']} on {state.get('backend')}: "
            f"{state.get('error')}"
        )
    return timed, run_dir


def cold_start(flow: Path, backend: str) -> dict[str, Any]:
    """From starting ``praxis run`` to the first statement of the first phase's code."""
    t0 = time.time()
    _, run_dir = run_flow(flow, backend)
    started = float((run_dir / "output" / "started.txt").read_text(encoding="utf-8"))
    at = {}
    for line in (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        at.setdefault(event["kind"], event["at"])
    return {
        "cold": started - t0,
        "to_begun": at["run_begun"] - t0,
        "to_opened": at["sandbox_opened"] - t0,
        "run_dir": str(run_dir),
    }


# The floor of a cold start on docker: a fresh process that starts a fresh container of the
# sandbox image (no network, as the sandbox's), whose python imports what a kernel has
# (ipykernel's kernel app, pandas) and then runs its first statement. No runner, no kernel.
FLOOR = """
import sys, docker
client = docker.from_env()
client.containers.run(
    sys.argv[1],
    ["python", "-c", "import ipykernel.kernelapp, pandas, time; "
     "open('/w/started.txt', 'w').write(repr(time.time()))"],
    network_mode="none", mounts=[docker.types.Mount("/w", sys.argv[2], type="bind")],
    remove=True,
)
"""


def cold_floor(work: Path) -> float:
    """Seconds from starting the FLOOR process to its container's first statement."""
    from sandbox.image.build import image_tag

    work.mkdir(parents=True, exist_ok=True)
    os.chmod(work, 0o777)  # the image's python may run as another uid
    marker = work / "started.txt"
    marker.unlink(missing_ok=True)
    t0 = time.time()
    run_timed([PYTHON, "-c", FLOOR, image_tag(), str(work.resolve())])
    return float(marker.read_text(encoding="utf-8")) - t0
