"""Run one flow in a fresh process, as `praxis run` does, and report what happened as JSON.

``python -m benchmarks.drive FLOW --backend local --out result.json`` begins a run and
advances it with the runner's own entry points, then writes: the time ``advance`` was
called, the run's events, how long each sandbox primitive took (the sandbox is wrapped,
not changed), and this process's peak memory (the runner's: kernels are other processes).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from sandbox import ExecResult, FileStat, Kernel, Sandbox


class TimedSandbox(Sandbox):
    """Delegates every primitive to ``inner`` and records how long each call took."""

    def __init__(self, inner: Sandbox) -> None:
        self.inner = inner
        self.backend = inner.backend
        self.isolated = inner.isolated
        self.kernel_in_thread = inner.kernel_in_thread
        self.times: dict[str, list[float]] = defaultdict(list)

    def _timed(self, name: str, call: Any, *args: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return call(*args)
        finally:
            self.times[name].append(time.perf_counter() - t0)

    def open(self) -> None:
        self._timed("open", self.inner.open)

    def upload(self, src: Path, name: str) -> None:
        self._timed("upload", self.inner.upload, src, name)

    def listing(self) -> dict[str, FileStat]:
        return self._timed("listing", self.inner.listing)  # type: ignore[no-any-return]

    def fetch(self, name: str, dest: Path) -> str | None:
        return self._timed("fetch", self.inner.fetch, name, dest)  # type: ignore[no-any-return]

    def remove(self, name: str) -> None:
        self._timed("remove", self.inner.remove, name)

    def survey(self) -> tuple[dict[str, FileStat], set[str], set[str]]:
        return self._timed("listing", self.inner.survey)  # type: ignore[no-any-return]

    def folders(self) -> set[str]:
        return self.inner.folders()

    def strays(self) -> set[str]:
        return self.inner.strays()

    def make_folder(self, name: str) -> None:
        self.inner.make_folder(name)

    def remove_folder(self, name: str) -> None:
        self.inner.remove_folder(name)

    def clear(self) -> None:
        self.inner.clear()

    def quiesce(self) -> None:
        self._timed("quiesce", self.inner.quiesce)

    def kernel(self) -> Kernel:
        return self._timed("kernel", self.inner.kernel)  # type: ignore[no-any-return]

    def kernel_running(self, code: str, *, timeout: float) -> tuple[Kernel, ExecResult]:
        """Timed as "kernel": the hand-over, with the params cell it carries."""
        return self._timed(  # type: ignore[no-any-return]
            "kernel", lambda: self.inner.kernel_running(code, timeout=timeout)
        )

    def close(self) -> None:
        self._timed("close", self.inner.close)

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()


class Syncer:
    """With ``--sync``: flush dirty pages (os.sync) before a phase uploads and before it
    collects, so each big copy starts, like the `cp` it is compared with, with no writeback
    backlog from the copies before it. Each flush is timed, to be left out of the figures."""

    def __init__(self) -> None:
        self.flushes: list[dict[str, Any]] = []

    def __call__(self, ev: Any) -> None:
        if ev.kind in ("phase_started", "code_ran"):
            t0 = time.time()
            os.sync()
            self.flushes.append(
                {
                    "phase": ev.phase,
                    "after": ev.kind,
                    "done_at": time.time(),
                    "seconds": time.time() - t0,
                }
            )


def drive(flow_dir: Path, backend: str, sync: bool = False) -> dict[str, Any]:
    os.environ["PRAXIS_SANDBOX"] = backend
    from praxis.flows.engine import runner
    from praxis.flows.store.event_log import EventLog

    boxes: list[TimedSandbox] = []

    def factory(flow: Any, run: Any) -> Sandbox:
        box = TimedSandbox(runner.default_sandbox(flow, run))
        boxes.append(box)
        return box

    syncer = Syncer() if sync else None
    run = runner.begin(flow_dir)
    t_advance = time.time()
    p0 = time.perf_counter()
    state = runner.advance(
        flow_dir, run.id, options=runner.RunOptions(make_sandbox=factory, on_event=syncer)
    )
    seconds = time.perf_counter() - p0
    events = [
        {"kind": ev.kind, **{k: v for k, v in ev.__dict__.items() if k != "detail"}}
        for ev in EventLog(run.paths.events).read()
    ]
    return {
        "run": run.id,
        "run_dir": str(run.root),
        "status": state.status,
        "error": state.error,
        "backend": state.backend,
        "t_advance": t_advance,
        "advance_seconds": seconds,
        "events": events,
        "sandbox_times": dict(boxes[0].times) if boxes else {},
        "flushes": syncer.flushes if syncer else [],
        "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("flow", type=Path)
    p.add_argument("--backend", required=True, choices=["local", "docker"])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--sync", action="store_true", help="os.sync() before uploads and collects")
    args = p.parse_args(argv)
    result = drive(args.flow, args.backend, args.sync)
    args.out.write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    return 0 if result["status"] == "done" else 1


if __name__ == "__main__":
    sys.exit(main())
