"""Small flows written into tmp folders, and a fake-sandbox factory for the runner."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from praxis.flows.engine import runner
from praxis.flows.model.flow import Flow
from praxis.flows.model.state import RunState
from praxis.flows.store.handle import RunHandle
from sandbox import Sandbox, close_thread_loop, open_sandbox
from sandbox.fake import FakeSandbox, Handler


def write_flow(root: Path, yaml_text: str, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "flow.yaml").write_text(textwrap.dedent(yaml_text))
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def one_script_flow(root: Path, source: str, output: str = "x.txt") -> Path:
    """A flow of one script phase ``a`` (s.py: ``source``) declaring ``output``, on the fake
    backend."""
    yaml_text = f"""
        sandbox: {{backend: fake}}
        phases:
          - {{id: a, kind: script, script: s.py, outputs: [{output}]}}
    """
    return write_flow(root, yaml_text, {"s.py": source})


class Fakes:
    """A sandbox factory for ``runner.advance`` that keeps the sandboxes it made."""

    def __init__(self, handler: Handler | None = None) -> None:
        self.handler = handler
        self.made: list[FakeSandbox] = []

    def __call__(self, flow: Any, run: Any) -> Sandbox:
        box = FakeSandbox(workspace=run.paths.workspace, name=run.id, handler=self.handler)
        self.made.append(box)
        return box

    @property
    def executed(self) -> list[str]:
        """The phases' own code (not the cell that sets ``params`` and ``note`` first)."""
        return [
            code
            for box in self.made
            for code in box.executed
            if not code.startswith("import json as _j\n")
        ]


THREE_PHASES = """
    flow: demo
    sandbox: {backend: fake, timeout: 30}
    phases:
      - id: load
        kind: script
        script: scripts/load.py
        inputs: {working: [data/raw.csv]}
        outputs: [clean.csv]
      - id: review
        kind: script
        script: scripts/review.py
        inputs: {working: [clean.csv]}
        outputs: [flags.csv]
        review: required
      - id: total
        kind: script
        script: scripts/total.py
        inputs: {working: [clean.csv, flags.csv]}
        outputs: [total.txt]
"""

THREE_FILES = {
    "data/raw.csv": "id,amount\n1,10\n2,20\n3,30\n",
    "scripts/load.py": """
        import csv, os
        with open("data/raw.csv") as fh:
            rows = list(csv.DictReader(fh))
        with open("clean.csv", "w") as fh:
            fh.write("id,amount\\n" + "".join(f"{r['id']},{r['amount']}\\n" for r in rows))
        os.makedirs("notes", exist_ok=True)
        with open("notes/log.txt", "w") as fh:
            fh.write(f"{len(rows)} rows")
        print("loaded", len(rows))
    """,
    "scripts/review.py": """
        import csv
        with open("clean.csv") as fh:
            rows = list(csv.DictReader(fh))
        with open("flags.csv", "w") as fh:
            fh.write("id,keep\\n" + "".join(f"{r['id']},yes\\n" for r in rows))
    """,
    "scripts/total.py": """
        import csv
        with open("flags.csv") as fh:
            keep = {r["id"] for r in csv.DictReader(fh) if r["keep"] == "yes"}
        with open("clean.csv") as fh:
            total = sum(int(r["amount"]) for r in csv.DictReader(fh) if r["id"] in keep)
        with open("total.txt", "w") as fh:
            fh.write(str(total))
    """,
}


def three_phase_flow(tmp_path: Path) -> Path:
    return write_flow(tmp_path / "demo", THREE_PHASES, THREE_FILES)


# -- real local kernels --------------------------------------------------------------------


def local(flow: Flow, run: RunHandle) -> Sandbox:
    return open_sandbox({"backend": "local"}, workspace=run.paths.workspace, name=run.id)


def advance(root: Path, run_id: str) -> RunState:
    return runner.advance(root, run_id, options=runner.RunOptions(make_sandbox=local))


def in_thread(work: Callable[[], object]) -> Callable[[], None]:
    """``work`` for a thread of its own, closing the event loop jupyter_client leaves there."""

    def target() -> None:
        try:
            work()
        finally:
            close_thread_loop()

    return target
