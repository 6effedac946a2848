"""`praxis params`: a notebook's parameters cell listed, the run seeing them, a flow
parameter the notebook does not declare warned of (real kernel)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from praxis.flows.definition import contract
from praxis.phases.notebook import INJECTED

from ..phases.test_notebook_parity import flow_of, run_flow


def praxis(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "praxis", *args], capture_output=True, text=True, timeout=120
    )


def test_params_lists_the_parameters_cell_and_the_run_sees_them(tmp_path: Path) -> None:
    root = flow_of(tmp_path, "parameters.ipynb", outputs="[out.txt]")
    res = praxis("params", str(root), "--phase", "work")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[:4] == [
        "nb/work.ipynb (phase work): parameters of cell 1",
        "  threshold: float (default 5.0)  smallest amount kept",
        '  region: str (default "North")  sales region',
        "  limit: int (default 3)",
    ]
    assert res.stderr == ""
    state, record = run_flow(root)
    assert state.status == "done", state.error
    out = (root / "runs" / state.run / "output" / "out.txt").read_text()
    assert out == "5.0 North 3 work"
    tags = [c.metadata.get("tags", []) for c in record.cells]
    assert tags.index([INJECTED]) == tags.index(["parameters"]) + 1


def test_params_of_a_notebook_without_a_parameters_cell(tmp_path: Path) -> None:
    root = flow_of(tmp_path, "no_parameters.ipynb", outputs="[out.txt]")
    res = praxis("params", str(root))
    assert res.returncode == 0
    assert res.stdout.startswith("nb/work.ipynb (phase work): no cell tagged 'parameters'")
    state, record = run_flow(root)
    assert state.status == "done", state.error
    assert (root / "runs" / state.run / "output" / "out.txt").read_text() == state.run
    assert record.cells[0].metadata["tags"] == [INJECTED]


def test_params_warns_of_a_flow_parameter_the_notebook_does_not_declare(tmp_path: Path) -> None:
    root = flow_of(tmp_path, "parameters.ipynb", outputs="[out.txt]")
    flow = contract.require(root)
    if not hasattr(flow, "params"):  # flow.yaml params: arrives with the run parameters
        from praxis.phases import notebook_params

        object.__setattr__(flow, "params", {"threshold": 8.0, "week": "2026-W48"})
        lines, warned = notebook_params.report(flow)
    else:
        text = (root / "flow.yaml").read_text()
        (root / "flow.yaml").write_text(text.replace("phases:", "params: {threshold: 8.0, "
                                                     "week: 2026-W48}\nphases:"))  # fmt: skip
        res = praxis("params", str(root))
        assert res.returncode == 0
        warned = res.stderr.splitlines()
    assert warned == [
        "warning: flow parameter 'week' is read by no phase (no script, notebook or prompt "
        "names it); read it as params['week'], or add `week = '2026-W48'` to a notebook's "
        "parameters cell"
    ]


def test_params_does_not_warn_of_a_parameter_a_script_phase_reads(tmp_path: Path) -> None:
    root = flow_of(tmp_path, "parameters.ipynb", outputs="[out.txt]")
    (root / "tally.py").write_text("print(params['week'])\n")
    text = (root / "flow.yaml").read_text()
    text = text.replace("phases:", "params: {threshold: 8.0, week: 2026-W48, unused: 1}\nphases:")
    text += "  - id: tally\n    kind: script\n    script: tally.py\n"
    (root / "flow.yaml").write_text(text)
    res = praxis("params", str(root))
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines() == [
        "warning: flow parameter 'unused' is read by no phase (no script, notebook or prompt "
        "names it); read it as params['unused'], or add `unused = 1` to a notebook's "
        "parameters cell"
    ]


def test_params_of_a_script_phase_is_a_usage_error(tmp_path: Path) -> None:
    root = tmp_path / "script"
    root.mkdir()
    (root / "go.py").write_text("print(1)\n")
    (root / "flow.yaml").write_text(
        "flow: s\nphases:\n  - id: go\n    kind: script\n    script: go.py\n"
    )
    res = praxis("params", str(root), "--phase", "go")
    assert res.returncode == 2
    assert res.stderr.startswith("Usage: phase 'go' is a script phase; only notebook phases")
