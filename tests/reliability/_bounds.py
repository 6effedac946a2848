"""Reliability suite helpers for bounds: flows on docker, and the CLI measured in a child."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ._flows import docker_sandbox, state_of

# Runs argv[1:] and prints its exit code and the peak RSS (KiB) of the process tree it was.
MEASURE = r"""
import resource, subprocess, sys
res = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
sys.stderr.write(res.stderr[-20000:].decode(errors="replace"))
sys.stdout.write(f"{res.returncode} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss} "
                 f"{len(res.stdout)}\n")
sys.stdout.write(res.stdout[-4000:].decode(errors="replace"))
"""

BUDGET = 256 << 20  # the runner's peak RSS for any output within sandbox.collect
SERVER_BUDGET = 512 << 20


class Measured:
    """A command's exit code, peak RSS (bytes), stdout size and its tails."""

    def __init__(self, res: subprocess.CompletedProcess[str]) -> None:
        head, _, rest = res.stdout.partition("\n")
        code, rss_kib, out_bytes = (int(x) for x in head.split())
        self.code = code
        self.rss = rss_kib * 1024
        self.out_bytes = out_bytes
        self.out = rest
        self.err = res.stderr

    def __repr__(self) -> str:
        return f"exit {self.code}, {self.rss >> 20} MiB, {self.err[-1500:]}"

    def noted(self, what: str) -> Measured:
        """Append the figure to $PRAXIS_BOUNDS_LOG when set (docs/benchmarks.md's source)."""
        log = os.environ.get("PRAXIS_BOUNDS_LOG")
        if log:
            test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0].split("::")[-1]
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(f"{test}\t")
                fh.write(
                    f"{what}\texit {self.code}\t{self.rss / (1 << 20):.0f} MiB\t"
                    f"stdout {self.out_bytes} bytes\n"
                )
        return self


def measured(*args: str, timeout: float = 600) -> Measured:
    """`praxis *args` in a child process, measured there with RUSAGE_CHILDREN."""
    res = subprocess.run(
        [sys.executable, "-c", MEASURE, sys.executable, "-m", "praxis", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert res.stdout, res.stderr[-3000:]
    return Measured(res).noted("praxis " + " ".join(a if "/" not in a else "FLOW" for a in args))


def flow(
    root: Path, image: str, phases: list[dict[str, Any]], files: dict[str, str], **extra: Any
) -> Path:
    """A docker flow folder: ``phases`` (dicts as flow.yaml has them), ``files``, and extra
    top-level keys (``checks``, ...) beside ``sandbox``/``phases``."""
    sandbox = {"timeout": 120, **extra.pop("sandbox", {})}
    text = docker_sandbox(image, **sandbox) + "\nphases: " + json.dumps(phases, indent=1) + "\n"
    for key, value in extra.items():
        text += f"{key}: {json.dumps(value)}\n"
    root.mkdir(parents=True, exist_ok=True)
    (root / "flow.yaml").write_text(text)
    for name, body in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    return root


def phase(pid: str, script: str, outputs: list[str], **more: Any) -> dict[str, Any]:
    return {"id": pid, "kind": "script", "script": script, "outputs": outputs, **more}


# Phase 1 counts the files it can see in the workspace (an iterative walk: any depth).
COUNT = r"""
import os
count, stack = 0, ["."]
while stack:
    top = stack.pop()
    with os.scandir(top) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            elif entry.name != "total.csv":
                count += 1
with open("total.csv", "w") as fh:
    fh.write(f"what,count\nTOTAL,{count}\n")
"""


def counted_flow(tmp_path: Path, image: str, attack: str) -> Path:
    return flow(
        tmp_path / "flow",
        image,
        [phase("p1", "count.py", ["total.csv"]), phase("p2", "attack.py", ["ok.txt"])],
        {"count.py": COUNT, "attack.py": attack},
    )


def rerun_gives_back_phase_one(flow_root: Path, run: Path) -> None:
    """`praxis rerun --from p1` and advance: within the budget, p1 sees the workspace it saw
    first (the restore empties what no walk can read, and never fails as the phase did)."""
    marked = measured("rerun", str(flow_root), "--from", "p1")
    assert marked.code == 0, marked
    again = measured("advance", str(flow_root))
    assert "Traceback" not in again.err, again
    assert again.rss < BUDGET, f"praxis rerun peaked at {again.rss >> 20} MiB"
    assert state_of(run).phase("p1").status == "done", again
    assert state_of(run).phase("p1").attempt == 2, again
    assert (run / "output" / "total.csv").read_text() == "what,count\nTOTAL,0\n"
    pre = json.loads((run / "snapshots" / "p1" / "2.json").read_text())
    assert pre["files"] == {} and pre["folders"] == [], pre


def remove_containers(run: Path) -> None:
    from .test_boundary import _remove_containers

    _remove_containers(run.name)


def measured_python(script: str, *args: str, timeout: float = 600) -> Measured:
    """``python -c script *args`` in a child process, measured there with RUSAGE_CHILDREN."""
    res = subprocess.run(
        [sys.executable, "-c", MEASURE, sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert res.stdout, res.stderr[-3000:]
    return Measured(res).noted("python " + " ".join(Path(a).name for a in args))
