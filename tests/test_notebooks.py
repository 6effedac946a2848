"""The tutorial notebooks run top to bottom without errors (so they never rot).

They run in a kernel of this interpreter with notebooks/ as the working directory, on the
local backend (PRAXIS_SANDBOX=local), each writing only into its own temporary flow copy.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def execute(name: str) -> nbformat.NotebookNode:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    # jupyter_client runs a kernel spec's "python" as this interpreter (the project's venv)
    client = NotebookClient(
        nb, kernel_name="python3", timeout=240, resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    client.execute()
    return nb


@pytest.mark.parametrize("name", ["quickstart.ipynb", "review.ipynb"])
def test_notebook_runs_top_to_bottom(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRAXIS_SANDBOX", "local")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    before = sorted((NOTEBOOKS.parent / "flows").glob("*/runs/*"))
    nb = execute(name)  # raises CellExecutionError naming the cell on the first error
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    assert sorted((NOTEBOOKS.parent / "flows").glob("*/runs/*")) == before
    if name == "review.ipynb":
        assert any("image/png" in o.get("data", {}) for o in code[-2].outputs)
    else:
        shown = [o for c in code for o in c.outputs if "text/markdown" in o.get("data", {})]
        assert "# Sales report" in shown[0]["data"]["text/markdown"]
