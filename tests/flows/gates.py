"""A flow with two Gates, the first delegatable, the second not; its table has checks."""

from __future__ import annotations

from pathlib import Path

from .helpers import write_flow

TWO_GATES = """
    flow: gates
    description: Picks orders to keep, sums them, reports.
    sandbox: {backend: %(backend)s, timeout: 60}
    phases:
      - id: pick
        kind: script
        script: scripts/pick.py
        inputs: {working: [data/orders.csv]}
        outputs: [picks.csv]
        review: {required: true, delegatable: true}
        checks:
          picks.csv: {columns: [id, amount, action], unique: [id],
                      values: {action: [keep, drop]}, dtype: {amount: number}, min_rows: 1}
      - id: total
        kind: script
        script: scripts/total.py
        inputs: {working: [picks.csv]}
        outputs: [total.csv]
        review: required
      - id: report
        kind: script
        script: scripts/report.py
        inputs: {working: [total.csv]}
        outputs: [report.txt]
"""

FILES = {
    "data/orders.csv": "id,amount\n1,10\n2,20\n3,30\n4,-5\n",
    "scripts/pick.py": """
        import csv
        rows = list(csv.DictReader(open("data/orders.csv")))
        with open("picks.csv", "w") as fh:
            fh.write("id,amount,action\\n")
            for r in rows:
                action = "drop" if float(r["amount"]) < 0 else "keep"
                fh.write(f"{r['id']},{r['amount']},{action}\\n")
    """,
    "scripts/total.py": """
        import csv
        rows = [r for r in csv.DictReader(open("picks.csv")) if r["action"] == "keep"]
        with open("total.csv", "w") as fh:
            fh.write("kept,total\\n%d,%s\\n" % (len(rows), sum(float(r["amount"]) for r in rows)))
    """,
    "scripts/report.py": """
        import csv
        row = next(csv.DictReader(open("total.csv")))
        open("report.txt", "w").write(f"{row['kept']} orders, {row['total']}")
    """,
}


def two_gates(tmp_path: Path, backend: str = "fake") -> Path:
    return write_flow(tmp_path / "gates", TWO_GATES % {"backend": backend}, FILES)
