"""A sandbox's first kernels, each handed out with a first cell (as a phase's params cell) and
then running code that prints: ``python -m benchmarks.first_output [--backend local|docker]``.

For each of the first ``--kernels`` kernels: from asking for it to its hand-out, and from
sending the printing code to its execute's end (the output kept, as a phase's is). Each
variant runs in a fresh Python process, in turns, ``--rounds`` times: ``warm`` as the
backends are (nbclient and nbformat's output schema made ready on a thread while the first
kernel starts: ``sandbox.collector.warm_ahead``), ``cold`` with that warm-up turned off, so
the first printed output compiles the schema itself. Medians, in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

PROBE = """
import json, sys, tempfile, time
from pathlib import Path
import sandbox.collector
from sandbox.factory import open_sandbox

if sys.argv[1] == "cold":
    sandbox.collector.warm_ahead = lambda: None
backend, kernels = sys.argv[2], int(sys.argv[3])
root = Path(tempfile.mkdtemp(prefix="praxis-first-output-"))
box = open_sandbox({"backend": backend}, workspace=root / "w", name="first-output")
box.open()
found = []
try:
    for _ in range(kernels):
        asked = time.perf_counter()
        kernel, _ = box.kernel_running("params = {}", timeout=120)
        out = time.perf_counter()
        result = kernel.execute("print('rows:', 3)", timeout=120)
        done = time.perf_counter()
        assert result.ok and result.stdout == "rows: 3\\n", result
        found.append({"handout": (out - asked) * 1000, "execute": (done - out) * 1000})
        kernel.shutdown()
        time.sleep(0.3)  # the next spare starts meanwhile, as between phases
finally:
    box.close()
print(json.dumps(found))
"""


def measure(variant: str, backend: str, kernels: int) -> list[dict[str, float]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, variant, backend, str(kernels)],
        capture_output=True,
        text=True,
        timeout=600,
        env=_env(),
    )
    if done.returncode != 0:
        raise RuntimeError(f"{variant} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _env() -> dict[str, str]:
    return {**os.environ, "PRAXIS_SANDBOX": "local"}  # the person allows the local backend


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="local", choices=("local", "docker"))
    parser.add_argument("--kernels", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    runs: dict[str, list[list[dict[str, float]]]] = {"warm": [], "cold": []}
    for _ in range(args.rounds):
        for variant in runs:
            runs[variant].append(measure(variant, args.backend, args.kernels))
    print(f"{args.backend}, medians of {args.rounds} rounds (ms):")
    print("| kernel | variant | hand-out | printing execute |")
    print("|---|---|---|---|")
    for n in range(args.kernels):
        for variant, rounds in runs.items():
            handout = statistics.median(r[n]["handout"] for r in rounds)
            execute = statistics.median(r[n]["execute"] for r in rounds)
            print(f"| {n + 1} | {variant} | {handout:.1f} | {execute:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
