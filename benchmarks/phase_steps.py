"""Where a phase's time goes: ``python -m benchmarks.phase_steps [--backend docker]``.

Runs a trivial five-phase flow (each phase one statement) in this process with the runner's
own entry points, reuse off, with a timer around each step of a phase: the sandbox's
primitives (container start, kernel hand-out, the process sweep and seal, listing, fetch),
the walk and the hashing below them, the snapshot, the record, the events and the state
writes. The table gives each step's calls and its milliseconds per phase (medians over
``--rounds`` runs); steps nest (the walk is inside the snapshot, the seal inside the sweep),
so the column does not add up. The timers wrap functions where they are looked up (every
loaded module holding the same function object), nothing else changes; they run on every
thread (the sandbox opens on one).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import workload

# (label, module, attribute path): a step of a phase and the function that does it.
STEPS: list[tuple[str, str, str]] = [
    ("sandbox start (on its thread)", "praxis.flows.engine.opening", "Opening._open"),
    ("  the runner waiting for it", "praxis.flows.engine.opening", "Opening.box"),
    ("kernel hand-out (params cell)", "praxis.flows.engine.handout", "Handout._take"),
    ("kernel stop (hand-out closed)", "praxis.flows.engine.handout", "Handout.close"),
    ("process sweep + seal (quiesce)", "sandbox.local", "LocalSandbox.quiesce"),
    ("process sweep + seal (quiesce)", "sandbox.container", "DockerSandbox.quiesce"),
    ("  seal", "sandbox.workspace", "WorkspaceFolder.seal"),
    ("prepare: settle + pre-state record", "praxis.flows.engine.phase", "prepare"),
    ("execute: hand-out + code + kernel stop", "praxis.flows.engine.phase", "execute"),
    ("snapshot (post-state)", "praxis.flows.store.snapshot", "Workspace.snapshot"),
    ("  walk (tree listing)", "sandbox.tree", "Tree.listing"),
    ("  fetch (copy + hash)", "sandbox.tree", "copy_fd_to"),
    ("  hashing (hash_fd)", "sandbox.files", "hash_fd"),
    ("  store: keep a fetched object", "praxis.flows.store.snapshot", "Store._keep"),
    ("collect: route outputs", "praxis.flows.engine.collect", "route"),
    ("  object checked (intact.check_fd)", "praxis.flows.store.intact", "check_fd"),
    ("collect: check outputs", "praxis.flows.engine.collect", "check_outputs"),
    ("flow.yaml checks (after_phase)", "praxis.flows.engine.checks", "after_phase"),
    ("manifest writes", "praxis.flows.store.snapshot", "save_manifest"),
    ("record (finish)", "praxis.flows.engine.phase", "finish"),
    ("  record.save", "praxis.flows.store.record", "Record.save"),
    ("events (emit)", "praxis.flows.store.handle", "RunHandle.emit"),
    ("state writes (run.json)", "praxis.flows.store.state_file", "save"),
    ("reuse index (remember)", "praxis.flows.engine.reuse", "remember"),
    ("the whole phase (run_phase)", "praxis.flows.engine.phase", "run_phase"),
]


class Timers:
    """Wall time per label, across threads; a wrapped function re-entered is timed once."""

    def __init__(self) -> None:
        self.total: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.each: dict[str, list[float]] = defaultdict(list)
        self._depth = threading.local()
        self._undo: list[tuple[object, str, object]] = []

    def wrap(self, label: str, module: str, path: str) -> bool:
        """Time ``module.path`` under ``label``; False when it is not there (another code)."""
        try:
            mod = __import__(module, fromlist=["_"])
        except ImportError:
            return False
        owner: Any = mod
        *parents, name = path.split(".")
        for part in parents:
            owner = getattr(owner, part, None)
            if owner is None:
                return False
        if isinstance(owner, type):
            original = owner.__dict__.get(name)
        else:
            original = getattr(owner, name, None)
        if original is None or not callable(original):
            return False
        timed = self._timed(label, original)
        self._set(owner, name, timed)
        if not isinstance(owner, type):  # a module's function: where it was imported too
            for other in list(sys.modules.values()):
                if other is None or other is owner:
                    continue
                if getattr(other, name, None) is original:
                    self._set(other, name, timed)
        return True

    def _set(self, owner: object, name: str, value: object) -> None:
        self._undo.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def undo(self) -> None:
        for owner, name, value in reversed(self._undo):
            setattr(owner, name, value)
        self._undo.clear()

    def _timed(self, label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        key = f"{label}\0{id(fn)}"

        def timed(*args: Any, **kwargs: Any) -> Any:
            depth: dict[str, int] = self._depth.__dict__.setdefault("d", {})
            if depth.get(key):
                return fn(*args, **kwargs)
            depth[key] = 1
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                took = time.perf_counter() - t0
                self.total[label] += took
                self.calls[label] += 1
                self.each[label].append(took)
                depth[key] = 0

        timed.__wrapped__ = fn  # type: ignore[attr-defined]
        return timed


Round = tuple[dict[str, float], dict[str, int], dict[str, list[float]], float]


def one_round(flow: Path, backend: str) -> Round:
    """One fresh run of ``flow``: seconds, calls and each call's seconds per step, and the
    run's wall time."""
    os.environ["PRAXIS_SANDBOX"] = backend
    from praxis.flows.engine import runner

    timers = Timers()
    for label, module, path in STEPS:
        timers.wrap(label, module, path)
    try:
        run = runner.begin(flow)
        t0 = time.perf_counter()
        state = runner.advance(flow, run.id, options=runner.RunOptions(reuse=False))
        wall = time.perf_counter() - t0
    finally:
        timers.undo()
    if state.status != "done":
        raise SystemExit(f"the run ended {state.status}: {state.error}")
    return dict(timers.total), dict(timers.calls), dict(timers.each), wall


def table(rounds: list[Round], phases: int) -> str:
    """Per step: calls a run, milliseconds a phase (the run's total over its phases: the
    first phase's waits included) and the median call (the steady state)."""
    labels = list(dict.fromkeys(label for label, _, _ in STEPS))
    lines = [
        "| step | calls a run | ms a phase | ms, median call |",
        "|---|---|---|---|",
    ]
    for label in labels:
        if not any(label in r[0] for r in rounds):
            continue
        ms = statistics.median(r[0].get(label, 0.0) for r in rounds) * 1000 / phases
        calls = statistics.median(r[1].get(label, 0) for r in rounds)
        each = statistics.median(t for r in rounds for t in r[2].get(label, [0.0])) * 1000
        shown = label.replace("  ", "- ")
        lines.append(f"| {shown} | {calls:g} | {ms:.1f} | {each:.1f} |")
    wall = statistics.median(r[3] for r in rounds) * 1000
    lines.append(f"| the run (advance), {phases} phases | 1 | {wall / phases:.1f} | {wall:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.phase_steps", description=__doc__)
    p.add_argument("--backend", default="local", choices=["local", "docker"])
    p.add_argument("--rounds", type=int, default=5, help="runs measured (median; default 5)")
    p.add_argument("--phases", type=int, default=workload.STEPS, help="phases of the flow")
    p.add_argument(
        "--pandas",
        action="store_true",
        help="instead: the 5-phase pandas flow of benchmark 1 (100,000 rows a step)",
    )
    p.add_argument(
        "--transfer",
        type=int,
        metavar="MB",
        help="instead: the two-phase flow of benchmark 4 (a phase writes MB, the next copies it)",
    )
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="praxis-steps-"))
    try:
        if args.transfer:
            flow = workload.transfer_flow(work / "flow", args.transfer << 20)
            args.phases = 2
        elif args.pandas:
            data = workload.write_sales(work / "data" / "s0.csv")
            flow = workload.pipeline_flow(work / "flow", data)
            args.phases = workload.STEPS
        else:
            flow = workload.trivial_flow(work / "flow", phases=args.phases)
        one_round(flow, args.backend)  # warm-up: imports, bytecode, the image's pages
        rounds = [one_round(flow, args.backend) for _ in range(args.rounds)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    what = f"{args.transfer} MiB moved" if args.transfer else "pandas" if args.pandas else "trivial"
    print(f"{args.backend}, {args.phases} phases ({what}), median of {args.rounds} runs:")
    print(table(rounds, args.phases))
    return 0


if __name__ == "__main__":
    sys.exit(main())
