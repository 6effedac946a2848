"""The scripted authoring session the chat tests share: a CSV becomes a 3-phase flow with a
Gate; the first flow.yaml has a misspelt input, ``check`` reports it, the model fixes it,
tries phase 1 and ends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ORDERS = "order_id,region,amount\n1,North,10.5\n2,South,-3\n3,East,7.25\n4,North,120\n"
FLOW_BAD = """\
flow: orders
description: Orders cleaned, odd amounts flagged for review, totals by region.
phases:
  - id: clean
    kind: script
    script: scripts/clean.py
    inputs: {working: [data/orders.csv]}
    outputs: [clean.csv]
  - id: flag
    kind: script
    script: scripts/flag.py
    inputs: {working: [clean.csv]}
    outputs: [flagged.csv]
    may_be_empty: [flagged.csv]
    review: required
  - id: summarise
    kind: script
    script: scripts/summarise.py
    inputs: {working: [clean.csv, flaged.csv]}
    outputs: [by_region.csv]
"""
FLOW_OK = FLOW_BAD.replace("flaged.csv", "flagged.csv")
SCRIPTS = {
    "scripts/clean.py": (
        "import pandas as pd\n\n"
        'orders = pd.read_csv("data/orders.csv")\n'
        'orders.dropna(subset=["region"]).to_csv("clean.csv", index=False)\n'
    ),
    "scripts/flag.py": (
        "import pandas as pd\n\n"
        'clean = pd.read_csv("clean.csv")\n'
        "odd = clean[(clean.amount < 0) | (clean.amount > 100)]\n"
        'odd.assign(action="check").to_csv("flagged.csv", index=False)\n'
    ),
    "scripts/summarise.py": (
        "import pandas as pd\n\n"
        'clean = pd.read_csv("clean.csv")\n'
        'totals = clean.groupby("region", as_index=False).amount.sum()\n'
        'totals.to_csv("by_region.csv", index=False)\n'
    ),
}
ASK = "Turn data/orders.csv into a flow: clean it, flag odd amounts for review, total by region."


def call(name: str, **args: str) -> dict[str, Any]:
    return {"name": name, "args": args}


def replies() -> list[dict[str, Any]]:
    writes = [call("write_file", path=p, text=t) for p, t in SCRIPTS.items()]
    return [
        {
            "text": "First the folder and the data.",
            "tool_calls": [call("list_files"), call("profile", path="data/orders.csv")],
        },
        {
            "text": "Three script phases, with a Gate after flag.",
            "tool_calls": [
                *writes,
                call("write_file", path="flow.yaml", text=FLOW_BAD),
                call("check"),
            ],
        },
        {
            "text": "check found a misspelt input; fixing it.",
            "tool_calls": [call("write_file", path="flow.yaml", text=FLOW_OK), call("check")],
        },
        {"tool_calls": [call("try_phase", phase="clean")]},
        {
            "text": "flow.yaml passes check and phase clean runs. `praxis run` stops at the "
            "Gate after flag for you to review flagged.csv."
        },
    ]


def start(folder: Path) -> Path:
    """An empty flow folder holding only data/orders.csv."""
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "orders.csv").write_text(ORDERS)
    return folder


def script_file(path: Path, items: list[Any]) -> Path:
    path.write_text(json.dumps(items))
    return path
