"""What ``--keep-edits`` costs: one reviewer's cell edit re-applied to a re-run's output.

    python benchmarks/keep_edits.py [--rows 200000 1000000]

For each size, a child process builds a table of that many rows as the phase wrote it, the
same with one cell edited, and a new output with every row in reverse order, then re-applies
the edit (``carry.reapply``). Printed per size: the table's bytes, the seconds of the
re-application, and the child's peak RSS (``ru_maxrss`` of ``RUSAGE_CHILDREN``; it includes
the three tables the child built).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys

CHILD = """
import json, sys, time
from praxis.flows.engine import carry
n = int(sys.argv[1])
rows = [f"{i},city{i % 97},{i % 40}.5\\n" for i in range(n)]
wrote = ("day,city,temp\\n" + "".join(rows)).encode()
edited = wrote.replace(b"\\n17,city17,", b"\\n17,Oslo,")
new = ("day,city,temp\\n" + "".join(reversed(rows))).encode()
t = time.perf_counter()
out = carry.reapply("w.csv", ["day"], wrote, edited, new)
seconds = time.perf_counter() - t
assert out.applied and not out.skipped and b"\\n17,Oslo," in out.data
print(json.dumps({"rows": n, "bytes": len(new), "seconds": round(seconds, 2)}))
"""


def measure(rows: int) -> dict[str, float]:
    """One size in a fresh child (its peak RSS is its own: a child per size)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(rows)], capture_output=True, text=True, check=True
    )
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result = json.loads(done.stdout)
    result["max_rss_mib"] = round(max(peak, before) / 1024)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[200_000, 1_000_000])
    args = parser.parse_args()
    for rows in sorted(args.rows):  # growing: each child's peak is at least the last one's
        print(json.dumps(measure(rows)))


if __name__ == "__main__":
    main()
