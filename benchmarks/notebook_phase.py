"""What a notebook phase costs on docker: one flow of two notebook phases, run again and again.

    python benchmarks/notebook_phase.py [--runs 5]

Phase ``cells``: 40 small cells (prints, a DataFrame, a display updated in place). Phase
``figure``: a matplotlib figure saved with savefig and left open (the inline backend draws it
into the record; with Agg nothing is drawn). Each run is a fresh run of a fresh copy (nothing
reused), in one container; printed: the median seconds of each phase (the runner's own
phase_done seconds: kernel hand-out, code, collection, record) and of the whole advance.
Run it with another tree's interpreter to compare that code with this one side by side.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import nbformat

from praxis.flows.engine import runner
from sandbox.image.build import ensure_image

CELLS = [
    "import pandas as pd\nframe = pd.DataFrame({'a': range(5), 'b': list('vwxyz')})",
    *[f"print('cell {i}', {i} * 2)" for i in range(30)],
    "frame",
    "from IPython.display import display\nh = display('start', display_id=True)",
    *[f"h.update('step {i}')" for i in range(6)],
    "frame.describe()",
]
FIGURE = [
    "import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(5, 3), dpi=80)\n"
    "ax.plot(range(50), [i * i for i in range(50)])\nfig.savefig('chart.png')"
]


def notebook(path: Path, cells: list[str]) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Py", "language": "python"}
    nbformat.write(nb, path)


def flow(root: Path, image: str) -> Path:
    (root / "nb").mkdir(parents=True)
    notebook(root / "nb" / "cells.ipynb", CELLS)
    notebook(root / "nb" / "figure.ipynb", FIGURE)
    definition = {
        "flow": "bench-notebook",
        "sandbox": {"backend": "docker", "image": image, "timeout": 120},
        "phases": [
            {"id": "cells", "kind": "notebook", "script": "nb/cells.ipynb"},
            {"id": "figure", "kind": "notebook", "script": "nb/figure.ipynb"},
        ],
    }
    (root / "flow.yaml").write_text(json.dumps(definition))
    return root


def once(root: Path, image: str) -> dict[str, float]:
    folder = flow(root, image)
    run = runner.begin(folder)
    started = time.perf_counter()
    state = runner.advance(
        folder, run.id, options=runner.RunOptions(make_sandbox=runner.default_sandbox)
    )
    wall = time.perf_counter() - started
    if state.status != "done":
        raise SystemExit(f"the benchmark's run failed: {state.error}")
    seconds = {"advance": wall}
    for line in (folder / "runs" / run.id / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("kind") == "phase_done":
            seconds[event["phase"]] = float(event["seconds"])
    record = nbformat.read(folder / "runs" / run.id / "records" / "figure.ipynb", as_version=4)
    outputs = [o for c in record.cells for o in c.get("outputs", [])]
    seconds["figures shown"] = sum("image/png" in o.get("data", {}) for o in outputs)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    image = ensure_image()
    with tempfile.TemporaryDirectory(prefix="praxis-bench-") as tmp:
        once(Path(tmp) / "warm-up", image)
        results = [once(Path(tmp) / f"run{i}", image) for i in range(args.runs)]
    for key in results[0]:
        values = [r[key] for r in results]
        low, mid = min(values), statistics.median(values)
        print(f"{key}: median {mid:.3f} (min {low:.3f}) over {args.runs}")


if __name__ == "__main__":
    main()
