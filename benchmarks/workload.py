"""Generate what the benchmarks run: the data, the flows, the notebooks, the run folders.

Every generator writes below a folder it is given (``benchmarks/work/`` by default) and is
deterministic (seeded), so two machines measure the same work.
"""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import nbformat
import yaml

ROWS = 100_000
STEPS = 5
REGIONS = ["north", "south", "east", "west", "central"]

# The five steps of the pipeline: each reads the previous CSV with pandas, transforms it
# and writes the next one. The same source runs as a praxis phase, a papermill notebook
# cell and a bare `python` script.
STEP_CODE = {
    1: """
        import pandas as pd
        df = pd.read_csv("s0.csv", parse_dates=["date"])
        df = df[df["qty"] > 0].copy()
        df["amount"] = (df["qty"] * df["price"]).round(2)
        df.to_csv("s1.csv", index=False)
    """,
    2: """
        import pandas as pd
        df = pd.read_csv("s1.csv", parse_dates=["date"])
        df["week"] = df["date"].dt.strftime("%G-W%V")
        by = df.groupby("product")["amount"]
        df["z"] = ((df["amount"] - by.transform("mean")) / by.transform("std")).round(4)
        df.to_csv("s2.csv", index=False)
    """,
    3: """
        import pandas as pd
        df = pd.read_csv("s2.csv")
        orders = df.groupby("customer").size().rename("customer_orders")
        df = df.merge(orders, left_on="customer", right_index=True)
        df["flag"] = (df["z"].abs() > 3) | (df["amount"] < 0)
        df.to_csv("s3.csv", index=False)
    """,
    4: """
        import pandas as pd
        df = pd.read_csv("s3.csv")
        df["region"] = df["region"].str.upper()
        df["rank_in_region"] = df.groupby("region")["amount"].rank(ascending=False)
        df["share"] = (df["amount"] / df.groupby("week")["amount"].transform("sum")).round(6)
        df.to_csv("s4.csv", index=False)
    """,
    5: """
        import pandas as pd
        df = pd.read_csv("s4.csv")
        df = df.sort_values(["region", "rank_in_region"])
        df = df[["id", "date", "region", "product", "customer", "amount", "z", "flag", "share"]]
        df.to_csv("s5.csv", index=False)
    """,
}


def step_source(n: int) -> str:
    return textwrap.dedent(STEP_CODE[n]).lstrip()


def write_sales(path: Path, rows: int = ROWS, seed: int = 7) -> Path:
    """A sales CSV of ``rows`` orders (about 6 MB for 100,000 rows)."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["id,date,region,product,customer,qty,price"]
    for i in range(rows):
        day = 1 + i * 365 // rows
        lines.append(
            f"{i},2025-{1 + (day - 1) // 31 % 12:02d}-{1 + (day - 1) % 28:02d},"
            f"{rng.choice(REGIONS)},p{rng.randrange(50):02d},c{rng.randrange(5000):04d},"
            f"{rng.randint(-1, 9)},{rng.uniform(1, 500):.2f}"
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def flow_yaml(name: str, phases: list[dict], sandbox: dict | None = None) -> str:
    """A flow.yaml in the block style people write."""
    doc = {"flow": name, "sandbox": sandbox or SANDBOX, "phases": phases}
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)


# Two CPUs and 2 GB, so the container limits do not handicap the docker backend against
# bare python (which has the whole 2-core machine).
SANDBOX = {"backend": "auto", "memory": "2g", "cpus": 2, "timeout": 600}


def pipeline_flow(root: Path, data: Path) -> Path:
    """The 5-phase pandas flow: data/s0.csv -> s1.csv -> ... -> s5.csv."""
    (root / "scripts").mkdir(parents=True, exist_ok=True)
    (root / "data").mkdir(exist_ok=True)
    target = root / "data" / "s0.csv"
    target.unlink(missing_ok=True)
    target.hardlink_to(data)
    phases = []
    for n in range(1, STEPS + 1):
        script = root / "scripts" / f"step{n}.py"
        # Phase 1 reads data/s0.csv from the workspace; the steps open plain names.
        source = step_source(n)
        if n == 1:
            source = source.replace('"s0.csv"', '"data/s0.csv"')
        script.write_text(source, encoding="utf-8")
        working = ["data/s0.csv"] if n == 1 else [f"s{n - 1}.csv"]
        phases.append(
            {
                "id": f"step{n}",
                "kind": "script",
                "script": f"scripts/step{n}.py",
                "inputs": {"working": working},
                "outputs": [f"s{n}.csv"],
            }
        )
    (root / "flow.yaml").write_text(flow_yaml("bench-pipeline", phases), encoding="utf-8")
    return root


def bare_folder(root: Path, data: Path) -> Path:
    """The same five steps as scripts (bare python) and notebooks (papermill)."""
    root.mkdir(parents=True, exist_ok=True)
    target = root / "s0.csv"
    target.unlink(missing_ok=True)
    target.hardlink_to(data)
    for n in range(1, STEPS + 1):
        (root / f"step{n}.py").write_text(step_source(n), encoding="utf-8")
        nb = nbformat.v4.new_notebook()
        nb.cells.append(nbformat.v4.new_code_cell(step_source(n)))
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nbformat.write(nb, root / f"step{n}.ipynb")
    return root


def trivial_flow(root: Path, *, sleep: float = 0.0, phases: int = STEPS) -> Path:
    """Five trivial phases, each copying a few bytes from the previous one's output.

    With ``sleep`` each phase also waits that long, leaving the warm standby time to be
    ready for the next phase (the sleep is part of the code's time, not the overhead).
    """
    (root / "scripts").mkdir(parents=True, exist_ok=True)
    (root / "data").mkdir(exist_ok=True)
    (root / "data" / "t0.txt").write_text("ok\n", encoding="utf-8")
    count, phases = phases, []
    for n in range(1, count + 1):
        src = "data/t0.txt" if n == 1 else f"t{n - 1}.txt"
        code = f"from pathlib import Path\nPath('t{n}.txt').write_text(Path('{src}').read_text())\n"
        if sleep:
            code += f"import time\ntime.sleep({sleep})\n"
        (root / "scripts" / f"t{n}.py").write_text(code, encoding="utf-8")
        phases.append(
            {
                "id": f"t{n}",
                "kind": "script",
                "script": f"scripts/t{n}.py",
                "inputs": {"working": [src]},
                "outputs": [f"t{n}.txt"],
            }
        )
    (root / "flow.yaml").write_text(flow_yaml("bench-trivial", phases), encoding="utf-8")
    return root


def cold_flow(root: Path) -> Path:
    """One phase whose first statement writes the time its code started."""
    (root / "scripts").mkdir(parents=True, exist_ok=True)
    code = "import time\nopen('started.txt', 'w').write(repr(time.time()))\n"
    (root / "scripts" / "first.py").write_text(code, encoding="utf-8")
    phase = {
        "id": "first",
        "kind": "script",
        "script": "scripts/first.py",
        "outputs": ["started.txt"],
    }
    (root / "flow.yaml").write_text(flow_yaml("bench-cold", [phase]), encoding="utf-8")
    return root


def transfer_flow(root: Path, size: int) -> Path:
    """Two phases: ``make`` writes a ``size``-byte output big.bin; ``copy`` takes it as its
    working input and writes a copy of it, big_out.bin, as its output.

    The big file is an earlier phase's output because flow.yaml refuses a definition file
    over 50 MiB as a working input; an output used as a working input is uploaded the same way.
    """
    (root / "scripts").mkdir(parents=True, exist_ok=True)
    make = (
        "import random\n"
        "block = random.Random(11).randbytes(1 << 20)\n"
        f"left = {size}\n"
        "with open('big.bin', 'wb') as fh:\n"
        "    while left > 0:\n"
        "        fh.write(block[: min(left, len(block))])\n"
        "        left -= len(block)\n"
    )
    (root / "scripts" / "make.py").write_text(make, encoding="utf-8")
    copy = "import shutil\nshutil.copyfile('big.bin', 'big_out.bin')\n"
    (root / "scripts" / "copy.py").write_text(copy, encoding="utf-8")
    phases: list[dict] = [
        {"id": "make", "kind": "script", "script": "scripts/make.py", "outputs": ["big.bin"]},
        {
            "id": "copy",
            "kind": "script",
            "script": "scripts/copy.py",
            "inputs": {"working": ["big.bin"]},
            "outputs": ["big_out.bin"],
        },
    ]
    (root / "flow.yaml").write_text(flow_yaml("bench-transfer", phases), encoding="utf-8")
    return root


def write_big(path: Path, size: int) -> Path:
    """A file of ``size`` bytes of incompressible data (a random 1 MiB block, repeated)."""
    block = random.Random(11).randbytes(1 << 20)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        left = size
        while left > 0:
            fh.write(block[: min(left, len(block))])
            left -= len(block)
    return path


def wide_flow(root: Path, phases: int = 200) -> Path:
    """A flow of ``phases`` script phases, each reading the previous one's output."""
    (root / "scripts").mkdir(parents=True, exist_ok=True)
    (root / "data").mkdir(exist_ok=True)
    (root / "data" / "w0.csv").write_text("a\n1\n", encoding="utf-8")
    items = []
    for n in range(1, phases + 1):
        script = f"scripts/w{n}.py"
        (root / script).write_text(f"# phase {n}\n", encoding="utf-8")
        src = "data/w0.csv" if n == 1 else f"w{n - 1}.csv"
        items.append(
            {
                "id": f"w{n}",
                "kind": "script",
                "script": script,
                "inputs": {"working": [src]},
                "outputs": [f"w{n}.csv"],
                "review": "required" if n % 50 == 0 else "none",
            }
        )
    (root / "flow.yaml").write_text(flow_yaml("bench-wide", items), encoding="utf-8")
    return root


def many_runs(root: Path, runs: int = 1000) -> Path:
    """A 5-phase flow with ``runs`` run folders, each with a valid run.json (state_file.save)."""
    from praxis.flows.model import state as st
    from praxis.flows.store import state_file
    from praxis.flows.store.layout import run_paths

    trivial_flow(root)
    ids = [p["id"] for p in yaml.safe_load((root / "flow.yaml").read_text())["phases"]]
    base = 1_760_000_000.0
    statuses = ["done", "failed", "paused", "cancelled"]
    for i in range(runs):
        now = base + 60 * i
        run_id = f"20251009-{i // 3600:02d}{i // 60 % 60:02d}{i % 60:02d}-{i:04x}"
        paths = run_paths(root, run_id)
        paths.make()
        state = st.new_run(run_id, "bench-trivial", ids, now=now)
        state.status = statuses[i % len(statuses)]
        done = len(ids) if state.status == "done" else 3
        state.cursor = min(done, len(ids))
        for p in state.phases[:done]:
            p.status, p.attempt, p.started, p.ended = "done", 1, now, now + 1.5
        state_file.save(state, paths.state)
    return root
