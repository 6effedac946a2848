"""flows/agent-example runs end to end through the runner with its scripted model turn."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from praxis.flows.engine import runner
from praxis.flows.model.flow import Flow
from praxis.flows.store.layout import run_paths
from sandbox import Sandbox, open_sandbox

EXAMPLE = Path(__file__).resolve().parents[2] / "flows" / "agent-example"


def local(flow: Flow, run: runner.RunHandle) -> Sandbox:
    return open_sandbox(
        {"backend": "local", "warm": False}, workspace=run.paths.workspace, name=run.id
    )


def test_agent_example_flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "agent-example"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("runs", "run.lock"))
    monkeypatch.setenv("PRAXIS_MODEL", "praxis.agent.scripted:ScriptedChatModel")
    monkeypatch.setenv("PRAXIS_MODEL_SCRIPT", str(root / "scripted-turn.json"))
    run = runner.begin(root)
    state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=local))

    assert (state.status, state.waiting, state.error) == ("paused", "gate", None)
    paths = run_paths(root, run.id)
    assert (paths.output / "totals.csv").read_text().splitlines() == [
        "region,units,revenue",
        "east,12.0,373.8",
        "north,18.0,333.3",
        "south,7.0,176.0",
        "west,17.0,153.5",
    ]
    assert (paths.output / "top_products.csv").read_text().splitlines()[:2] == [
        "product,units",
        "pencil set,28",
    ]
    assert (paths.output / "summary.md").read_text().startswith("# May sales")
    record = nbformat.read(paths.record("summarise"), as_version=4)
    assert [c.cell_type for c in record.cells].count("code") == 1
    kinds = [line for line in paths.events.read_text().splitlines() if '"model_called"' in line]
    assert len(kinds) == 3
