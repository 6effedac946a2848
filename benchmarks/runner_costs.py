"""Benchmarks 2-4: what the runner itself costs per phase, at start, and moving big files.

All three read the run's own events (DESIGN.md: phase_done seconds, code_ran seconds,
inputs_uploaded seconds, each event's timestamp) and the sandbox primitives' timings that
benchmarks.drive records around the real sandbox.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from . import command, workload
from .measure import (
    PYTHON,
    BenchmarkFailed,
    drive,
    events,
    free_bytes,
    median,
    ratio,
    run_timed,
)
from .report import Results, Row

GB = 1_000_000_000


def _done(report: dict[str, Any], what: str) -> dict[str, Any]:
    if report["status"] != "done":
        raise BenchmarkFailed(f"{what}: the run is {report['status']}: {report['error']}")
    shutil.rmtree(report["run_dir"], ignore_errors=True)
    return report


def phase_overheads(report: dict[str, Any]) -> dict[str, float]:
    """Medians over the run's phases: overhead (phase_done - code_ran), kernel wait, gaps."""
    ran = {e["phase"]: e["seconds"] for e in events(report, "code_ran")}
    done = {e["phase"]: e for e in events(report, "phase_done")}
    started = {e["phase"]: e for e in events(report, "phase_started")}
    overhead = [done[p]["seconds"] - ran[p] for p in done]
    order = sorted(done, key=lambda p: done[p]["at"])
    gaps = [started[b]["at"] - done[a]["at"] for a, b in zip(order, order[1:], strict=False)]
    kernel = report["sandbox_times"].get("kernel", [])
    return {
        "overhead": median(overhead),
        "overhead_minus_kernel_wait": median(
            [o - k for o, k in zip(overhead, kernel, strict=False)]
        ),
        "kernel_wait": median(kernel),
        "between_phases": median(gaps),
    }


def overhead(results: Results, work: Path, repeats: int, backends: list[str]) -> None:
    """Benchmark 2: runner overhead per phase, for a trivial script (back to back), and for
    the same script when the phase lasts long enough (2 s) for the standby kernel to be warm."""
    flows = {
        "back to back": workload.trivial_flow(work / "trivial"),
        "standby warm": workload.trivial_flow(work / "trivial-sleep", sleep=2.0),
    }
    details: dict[str, Any] = {}
    for backend in backends:
        for label, flow in flows.items():
            got = [
                phase_overheads(_done(drive(flow, backend, work)[1], "overhead"))
                for _ in range(repeats if label == "back to back" else max(1, repeats // 2))
            ]
            med = {k: median([g[k] for g in got]) for k in got[0]}
            details[f"{backend}, {label}"] = {"samples": got, "median": med}
            results.add(
                Row(
                    "2. runner overhead",
                    f"per phase, trivial script, {label}, {backend}",
                    med["overhead"] * 1000,
                    "ms",
                    limit=30,
                    note=f"the kernel's hand-over (params set; beside the workspace's "
                    f"preparation) {med['kernel_wait'] * 1000:.0f} ms; "
                    f"plus {med['between_phases'] * 1000:.0f} ms between phases",
                ),
            )
    results.details["overhead"] = details
    if "docker" in backends:
        phase_cpu(results, work, repeats)


def phase_cpu(results: Results, work: Path, repeats: int) -> None:
    """The CPU one more back-to-back phase costs on docker, host and container: on a machine
    of N cores no runner can take less than CPU / N of wall time for it."""
    one = workload.trivial_flow(work / "cpu-one", phases=1)
    five = workload.trivial_flow(work / "cpu-five")
    got: dict[str, list[dict[str, Any]]] = {"one": [], "five": []}
    for _ in range(max(1, repeats)):
        for name, flow in (("one", one), ("five", five)):
            # run as a file: the praxis measured is the one PYTHONPATH names (--code), if any
            cmd = [PYTHON, str(Path(__file__).with_name("phase_cpu.py")), str(flow)]
            sample = json.loads(run_timed(cmd, cwd=flow).stdout.strip().splitlines()[-1])
            if sample["status"] != "done" or sample["container"] is None:
                raise BenchmarkFailed(f"phase CPU: {sample}")
            got[name].append(sample)
    extra = workload.STEPS - 1
    per = {
        k: (median([s[k] for s in got["five"]]) - median([s[k] for s in got["one"]])) / extra
        for k in ("host", "container", "wall")
    }
    cores = os.cpu_count() or 1
    results.details["phase_cpu"] = {"samples": got, "per_phase": per, "cores": cores}
    results.add(
        Row(
            "2. runner overhead",
            "CPU per phase, trivial script, back to back, docker (host + container)",
            (per["host"] + per["container"]) * 1000,
            "ms",
            note=f"host {per['host'] * 1000:.0f} ms, container {per['container'] * 1000:.0f} ms "
            f"(a fresh kernel's start-up, its code, its end): at least "
            f"{(per['host'] + per['container']) * 1000 / cores:.0f} ms of wall time a phase "
            f"on {cores} cores; measured {per['wall'] * 1000:.0f} ms",
        )
    )


def cold_start(results: Results, work: Path, repeats: int, backends: list[str]) -> None:
    """Benchmark 3: from starting `praxis run` to the first phase's first statement."""
    flow = workload.cold_flow(work / "cold")
    details: dict[str, Any] = {}
    for backend in backends:
        command.cold_start(flow, backend)  # warm-up: page cache, bytecode
        got = []
        for _ in range(repeats):
            sample = command.cold_start(flow, backend)
            shutil.rmtree(sample.pop("run_dir"), ignore_errors=True)
            got.append(sample)
        med = {k: median([g[k] for g in got]) for k in got[0]}
        details[backend] = {"samples": got, "median": med}
        results.add(
            Row(
                "3. cold start",
                f"`praxis run` -> first phase's code, {backend}",
                med["cold"],
                "s",
                note=f"run begun at {med['to_begun']:.2f} s, sandbox open at "
                f"{med['to_opened']:.2f} s",
            ),
        )
    if "docker" in backends:
        command.cold_floor(work / "floor")  # warm-up
        floor = median([command.cold_floor(work / "floor") for _ in range(repeats)])
        details["floor"] = floor
        results.add(
            Row(
                "3. cold start",
                "floor: a fresh container's python importing ipykernel and pandas, docker",
                floor,
                "s",
                note="from a fresh process starting it to its first statement: no runner, "
                "no kernel",
            ),
            Row(
                "3. cold start",
                "cold start, docker / its floor",
                ratio(details["docker"]["median"]["cold"], floor),
                "x",
                limit=1.15,
            ),
        )
    results.details["cold_start"] = details


def quick_commands(results: Results, work: Path, repeats: int) -> None:
    """Benchmark 0: the commands a person types to look (help, status, runs, check)."""
    flow = workload.cold_flow(work / "quick")
    command.run_flow(flow, "local")  # a run for status and runs to show
    cases = {
        "python -c pass (the interpreter alone)": [PYTHON, "-c", "pass"],
        "praxis --help": command.praxis("--help"),
        "praxis status": command.praxis("status", str(flow)),
        "praxis runs": command.praxis("runs", str(flow)),
        "praxis check": command.praxis("check", str(flow)),
    }
    details: dict[str, Any] = {}
    for label, cmd in cases.items():
        run_timed(cmd, cwd=flow)  # warm-up
        secs = median([run_timed(cmd, cwd=flow).seconds for _ in range(max(5, repeats))])
        details[label] = secs
        limit = None if label.startswith("python") else 0.1
        results.add(Row("0. quick commands", label, secs, "s", limit=limit))
    results.details["quick_commands"] = details


def transfer(results: Results, work: Path, repeats: int, backend: str, size: int = GB) -> None:
    """Benchmark 4: a 1 GB working input uploaded and a 1 GB output collected, against cp.

    Dirty pages are flushed (sync) before each copy, praxis's and cp's alike: on this kind
    of virtual disk a copy made while 2 GB are still being written back takes 3-5x longer,
    which would measure the disk's backlog rather than the copy."""
    need = 6 * size + (2 << 30)
    if free_bytes(work) < need:
        results.skipped.append(
            f"moving data: {free_bytes(work) / 2**30:.1f} GiB free below {work}, "
            f"need {need / 2**30:.0f}"
        )
        return
    big = workload.write_big(work / "big" / "big.bin", size)
    flow = workload.transfer_flow(work / "transfer", size)
    dest = work / "big" / "copy.bin"
    cp: list[float] = []
    got: list[dict[str, float]] = []
    try:
        run_timed(["cp", str(big), str(dest)])  # warm-up: the source in the page cache
        for _ in range(repeats):
            dest.unlink(missing_ok=True)
            run_timed(["sync"])  # as drive --sync does before praxis copies
            cp.append(run_timed(["cp", str(big), str(dest)]).seconds)
            dest.unlink(missing_ok=True)
            _, report = drive(flow, backend, work, sync=True)
            got.append(_transfer_times(report))
            _done(report, "moving data")
    finally:
        shutil.rmtree(work / "big", ignore_errors=True)
        shutil.rmtree(work / "transfer", ignore_errors=True)
    cp_s = median(cp)
    med = {k: median([g[k] for g in got]) for k in got[0]}
    results.details["transfer"] = {"bytes": size, "cp": cp, "praxis": got, "median": med}
    sec = "4. moving 1 GB"
    results.add(
        Row(sec, "cp of the file", cp_s, "s"),
        Row(
            sec,
            f"upload (working input), {backend}",
            med["upload"],
            "s",
            note="an earlier phase's output: flow.yaml refuses flow files over 50 MiB",
        ),
        Row(sec, "upload / cp", ratio(med["upload"], cp_s), "x", limit=1.2),
        Row(
            sec,
            f"collect, output of a phase that wrote it, {backend}",
            med["collect_make"],
            "s",
            note=f"fetch {med['fetch_make']:.2f} s",
        ),
        Row(sec, "collect / cp", ratio(med["collect_make"], cp_s), "x", limit=1.2),
        Row(
            sec,
            f"collect, output of a phase that read 1 GB and wrote 1 GB, {backend}",
            med["collect"],
            "s",
            note=f"fetch {med['fetch']:.2f} s",
        ),
        Row(
            sec,
            "collect / cp (read+write phase)",
            ratio(med["collect"], cp_s),
            "x",
            limit=1.2,
            note="the first read of pages a memory-capped container just wrote is slow "
            "for any reader (cp too)",
        ),
        Row(
            sec,
            "collect + record the output's hash / cp",
            ratio(med["collect_and_hash"], cp_s),
            "x",
            note=f"hashing and record {med['finish']:.2f} s",
        ),
    )


def _transfer_times(report: dict[str, Any]) -> dict[str, float]:
    """Upload of big.bin into phase ``copy``; collection of each phase's 1 GB output."""

    def at(kind: str, phase: str) -> dict[str, Any]:
        return next(e for e in events(report, kind) if e["phase"] == phase)

    def code_end(phase: str) -> float:
        # Collection starts once the flush after the code (drive --sync) is done.
        flushes = report["flushes"]
        return next(
            f["done_at"] for f in flushes if f["phase"] == phase and f["after"] == "code_ran"
        )

    fetch = report["sandbox_times"]["fetch"]
    return {
        "upload": at("inputs_uploaded", "copy")["seconds"],
        "collect_make": at("files_collected", "make")["at"] - code_end("make"),
        "fetch_make": fetch[0],
        "collect": at("files_collected", "copy")["at"] - code_end("copy"),
        "fetch": fetch[-1],
        "finish": at("phase_done", "copy")["at"] - at("files_collected", "copy")["at"],
        "collect_and_hash": at("phase_done", "copy")["at"] - code_end("copy"),
    }
