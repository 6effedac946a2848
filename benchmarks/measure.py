"""Timing helpers: run a command and time it, medians, and the events of a driven run."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


class BenchmarkFailed(Exception):
    """Raised when a measured command fails: its results would mean nothing."""


@dataclass
class Timed:
    seconds: float
    maxrss_kib: int  # the peak RSS of the process and the descendants it waited for
    stdout: str


def run_timed(cmd: Sequence[str], *, cwd: Path | None = None, env: dict | None = None) -> Timed:
    """Run ``cmd`` to completion; its wall time and peak memory (from wait4)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            list(cmd), cwd=cwd, env={**os.environ, **(env or {})}, stdout=out, stderr=err
        )
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, problem = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if proc.returncode != 0:
        tail = (problem or text).strip().splitlines()[-5:]
        raise BenchmarkFailed(
            f"{' '.join(cmd)} exited {proc.returncode} in {cwd or '.'}: " + " | ".join(tail)
        )
    return Timed(seconds, usage.ru_maxrss, text)


def drive(
    flow: Path, backend: str, workdir: Path, *, sync: bool = False
) -> tuple[float, dict[str, Any]]:
    """Run ``flow`` to the end in a fresh process (benchmarks.drive); (wall s, its report)."""
    out = workdir / f"drive-{backend}.json"
    out.unlink(missing_ok=True)
    # this checkout's driver (run as a file: its folder, not the package, goes on sys.path),
    # driving the praxis PYTHONPATH names (--code: an earlier checkout's), else this one's
    driver = str(Path(__file__).resolve().parent / "drive.py")
    cmd = [PYTHON, driver, str(flow), "--backend", backend, "--out", str(out)]
    cmd += ["--sync"] if sync else []
    code = os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] or str(REPO)
    timed = run_timed(cmd, cwd=Path(code), env={"PYTHONPATH": code})
    report = json.loads(out.read_text(encoding="utf-8"))
    if report["backend"] != backend:
        raise BenchmarkFailed(f"asked for the {backend} backend, the run used {report['backend']}")
    return timed.seconds, report


def events(report: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in report["events"] if e["kind"] == kind]


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize
