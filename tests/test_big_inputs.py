"""A working input of a gigabyte through `check`, `run` and a re-run, the runner's memory
bounded: inputs are streamed into the store and the workspace, hashed on the way, never
read whole on the host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .flows.helpers import write_flow

GIB = 1 << 30
ROW = b"1,alpha,2.5,2024-01-01\n"
COUNT = 'import os\nopen("size.txt", "w").write(str(os.path.getsize("data/big.csv")))\n'

# runs `praxis ARGS...` in this process and reports its peak resident memory (VmHWM: this
# process's own peak since exec; ru_maxrss may carry the parent's over a fork)
PROBE = """
import json, runpy, sys
sys.argv = ["praxis", *sys.argv[1:]]
code = 0
try:
    runpy.run_module("praxis", run_name="__main__")
except SystemExit as exc:
    code = exc.code or 0
hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"code": code, "rss": int(hwm.split()[1]) // 1024}), file=sys.stderr)
"""


def praxis_measured(*args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, int]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PRAXIS_SANDBOX": "fake"},
        timeout=540,
    )
    return done, json.loads(done.stderr.strip().splitlines()[-1])


def write_gib_csv(path: Path) -> int:
    """A CSV of a little over 1 GiB (about 47 million rows), written in 1 MiB blocks."""
    block = ROW * ((1 << 20) // len(ROW))
    with open(path, "wb") as fh:
        fh.write(b"id,name,value,day\n")
        for _ in range(GIB // len(block) + 1):
            fh.write(block)
    return path.stat().st_size


@pytest.mark.timeout(900)
def test_a_gigabyte_working_input_runs_and_reruns_with_the_runner_memory_bounded(
    tmp_path: Path,
) -> None:
    flow = write_flow(
        tmp_path / "flow",
        """
        sandbox: {backend: fake}
        phases:
          - id: count
            kind: script
            script: count.py
            inputs: {working: [data/big.csv]}
            outputs: [size.txt]
        """,
        {"count.py": COUNT},
    )
    (flow / "data").mkdir()
    size = write_gib_csv(flow / "data" / "big.csv")
    assert size > GIB

    checked, peak = praxis_measured("check", str(flow))
    assert peak["code"] == 0, checked.stdout + checked.stderr
    assert "flow: valid" in checked.stdout
    assert peak["rss"] <= 256, peak  # MiB

    runs = []
    for _ in range(2):  # the first run copies the input into the store; the second reuses it
        ran, peak = praxis_measured("run", str(flow), "--allow-local")
        assert peak["code"] == 0, ran.stdout + ran.stderr
        assert "every phase done" in ran.stdout
        assert peak["rss"] <= 256, peak  # MiB (about 40 measured): never the file's size
        runs.append(sorted((flow / "runs").iterdir())[-1])
    for run in runs:
        assert (run / "output" / "size.txt").read_text() == str(size)
    stored = [p for p in (flow / ".praxis" / "objects").iterdir() if p.stat().st_size == size]
    assert len(stored) == 1, stored  # the re-run found the content stored, kept once
