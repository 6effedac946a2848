"""Notebook and script phases behave as papermill users expect: one notebook per behaviour
(tests/data/notebooks/), run through the real runner with a real kernel."""

from __future__ import annotations

import json
import shutil
import threading
import time
import warnings
from pathlib import Path

import nbformat
import pytest

from praxis.agent.tools import describe
from praxis.flows.definition.notebook_check import read
from praxis.flows.engine import runner
from praxis.flows.model.state import RunState
from praxis.phases.notebook import ERROR_CELL, INJECTED
from sandbox import Sandbox

from ..flows.helpers import advance, in_thread, local
from ..labels import TEST_LABELS

NOTEBOOKS = Path(__file__).resolve().parents[1] / "data" / "notebooks"


def flow_of(
    tmp_path: Path,
    notebook: str,
    *,
    outputs: str = "[]",
    timeout: int = 60,
    sandbox: str = "{backend: local}",
    extra: str = "",
) -> Path:
    root = tmp_path / "flow"
    (root / "nb").mkdir(parents=True)
    shutil.copy(NOTEBOOKS / notebook, root / "nb" / "work.ipynb")
    (root / "flow.yaml").write_text(
        f"flow: parity\nsandbox: {sandbox}\n{extra}phases:\n"
        f"  - id: work\n    kind: notebook\n    script: nb/work.ipynb\n"
        f"    outputs: {outputs}\n    timeout: {timeout}\n"
    )
    return root


def run_flow(root: Path, make_sandbox=local) -> tuple[RunState, nbformat.NotebookNode]:  # type: ignore[no-untyped-def]
    run = runner.begin(root)
    state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=make_sandbox))
    record = nbformat.read(root / "runs" / run.id / "records" / "work.ipynb", as_version=4)
    nbformat.validate(record)
    return state, record


def code_cells(record: nbformat.NotebookNode) -> dict[int, nbformat.NotebookNode]:
    """The notebook's own code cells of a record, by number."""
    found = {}
    for cell in record.cells:
        number = cell.metadata.get("praxis", {}).get("cell")
        if cell.cell_type == "code" and number is not None:
            found[number] = cell
    return found


def status(cell: nbformat.NotebookNode) -> str:
    return str(cell.metadata["praxis"]["status"])


def docker(image: str) -> str:
    labels = ", ".join(f'"{k}": "{v}"' for k, v in TEST_LABELS.items())
    return f"{{backend: docker, image: '{image}', labels: {{{labels}}}}}"


# -- 1. success is the kernel's word ---------------------------------------------------------


def test_a_line_magic_error_fails_at_its_cell(tmp_path: Path) -> None:
    state, record = run_flow(flow_of(tmp_path, "line_magic_error.ipynb", outputs="[out.txt]"))
    assert state.status == "failed"
    assert state.phase("work").error == (
        "nb/work.ipynb cell 2: UsageError: Line magic function `%undefined-magic` not found."
    )
    cells = code_cells(record)
    assert [status(cells[n]) for n in (1, 2, 3)] == ["ok", "error", "not-run"]
    assert not (tmp_path / "flow" / "runs" / state.run / "output" / "out.txt").exists()


@pytest.mark.docker
def test_a_line_magic_error_fails_at_its_cell_in_docker(tmp_path: Path, docker_image: str) -> None:
    root = flow_of(tmp_path, "line_magic_error.ipynb", sandbox=docker(docker_image))
    state, record = run_flow(root, make_sandbox=runner.default_sandbox)
    assert state.status == "failed" and state.backend == "docker"
    assert str(state.phase("work").error).startswith("nb/work.ipynb cell 2: UsageError: ")
    assert status(code_cells(record)[2]) == "error"


def test_a_syntax_error_fails_at_its_cell(tmp_path: Path) -> None:
    state, record = run_flow(flow_of(tmp_path, "syntax_error.ipynb"))
    assert state.status == "failed"
    assert str(state.phase("work").error).startswith("nb/work.ipynb cell 2: SyntaxError: ")
    assert status(code_cells(record)[2]) == "error"


def test_an_import_error_fails_at_its_cell(tmp_path: Path) -> None:
    state, _ = run_flow(flow_of(tmp_path, "import_error.ipynb"))
    assert state.phase("work").error == (
        "nb/work.ipynb cell 1: ModuleNotFoundError: "
        "No module named 'praxis_no_such_module_anywhere'"
    )


def test_script_phases_and_run_python_take_the_kernels_word(
    tmp_path: Path, local_sandbox: Sandbox
) -> None:
    result = local_sandbox.kernel().execute("%undefined-magic", timeout=30)
    assert (result.status, result.ename) == ("error", "UsageError")
    assert result.evalue == "Line magic function `%undefined-magic` not found."
    told = describe(result, [])  # what an agent's model reads after run_python
    assert told.startswith("status: error")
    assert "error: UsageError: Line magic function `%undefined-magic` not found." in told

    root = tmp_path / "script"
    root.mkdir()
    (root / "go.py").write_text("print('a')\n%undefined-magic\n")
    (root / "flow.yaml").write_text(
        "flow: s\nsandbox: {backend: local}\nphases:\n"
        "  - id: go\n    kind: script\n    script: go.py\n"
    )
    run = runner.begin(root)
    state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=local))
    assert state.status == "failed"
    assert "UsageError: Line magic function `%undefined-magic` not found." in str(state.error)


# -- 2. sys.exit -------------------------------------------------------------------------------


def test_sys_exit_0_ends_the_notebook_cleanly(tmp_path: Path) -> None:
    state, record = run_flow(flow_of(tmp_path, "exit_zero.ipynb", outputs="[out.txt]"))
    assert state.status == "done", state.error
    out = tmp_path / "flow" / "runs" / state.run / "output" / "out.txt"
    assert out.read_text() == "written before exit"
    cells = code_cells(record)
    assert [status(cells[n]) for n in (1, 2, 3)] == ["ok", "exit", "not-run"]
    assert cells[3].outputs == [] and cells[3].metadata["praxis"]["ran"] is False


@pytest.mark.docker
def test_sys_exit_0_ends_the_notebook_cleanly_in_docker(tmp_path: Path, docker_image: str) -> None:
    root = flow_of(tmp_path, "exit_zero.ipynb", outputs="[out.txt]", sandbox=docker(docker_image))
    state, record = run_flow(root, make_sandbox=runner.default_sandbox)
    assert state.status == "done" and state.backend == "docker", state.error
    assert status(code_cells(record)[3]) == "not-run"


def test_sys_exit_1_fails_naming_the_code(tmp_path: Path) -> None:
    state, record = run_flow(flow_of(tmp_path, "exit_one.ipynb"))
    assert state.status == "failed"
    assert state.phase("work").error == "nb/work.ipynb cell 2: SystemExit: exit code 1"
    assert status(code_cells(record)[3]) == "not-run"


@pytest.mark.parametrize(
    ("code", "error"),
    [("sys.exit()", None), ("sys.exit(0)", None), ("sys.exit(3)", "SystemExit: exit code 3")],
)
def test_sys_exit_in_a_script_phase(tmp_path: Path, code: str, error: str | None) -> None:
    root = tmp_path / "script"
    root.mkdir()
    (root / "go.py").write_text(f"import sys\nopen('out.txt', 'w').write('x')\n{code}\n")
    (root / "flow.yaml").write_text(
        "flow: s\nsandbox: {backend: local}\nphases:\n"
        "  - id: go\n    kind: script\n    script: go.py\n    outputs: [out.txt]\n"
    )
    run = runner.begin(root)
    state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=local))
    if error is None:
        assert state.status == "done", state.error
    else:
        assert state.status == "failed"
        assert state.phase("go").error == f"go.py: {error}"


# -- 3. raises-exception -------------------------------------------------------------------------


def test_a_raises_exception_cell_may_fail(tmp_path: Path) -> None:
    state, record = run_flow(flow_of(tmp_path, "raises_exception.ipynb", outputs="[out.txt]"))
    assert state.status == "done", state.error
    cells = code_cells(record)
    assert status(cells[1]) == "allowed-error"
    assert [o.ename for o in cells[1].outputs if o.output_type == "error"] == ["ZeroDivisionError"]
    assert status(cells[2]) == "ok"


# -- 4. an nbformat 4.4 notebook (what check refuses: tests/flows/test_notebook_check.py) ---


def test_a_4_4_notebook_without_cell_ids_runs_without_id_warnings(tmp_path: Path) -> None:
    root = flow_of(tmp_path, "nbformat44.ipynb", outputs="[out.txt]")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert read(root / "nb" / "work.ipynb").nbformat_minor == 5
        state, record = run_flow(root)
    assert state.status == "done", state.error
    assert not [w for w in caught if "MissingIDField" in type(w.message).__name__]
    assert record.cells[-1].source == "no cell ids in nbformat 4.4"


# -- 5. the record -------------------------------------------------------------------------------


def test_the_record_keeps_metadata_and_marks_the_failing_cell(tmp_path: Path) -> None:
    state, record = run_flow(flow_of(tmp_path, "fail_after_markdown.ipynb"))
    assert state.phase("work").error == "nb/work.ipynb cell 2: ValueError: bad total 6"
    assert record.metadata["authors"] == [{"name": "A. Analyst"}]
    assert record.metadata["custom"] == {"keep": True}
    assert record.metadata["kernelspec"]["name"] == "python3"
    assert record.metadata["praxis"]["status"] == "failed"
    assert record.metadata["praxis"]["parameters"]["phase_id"] == "work"
    cells = code_cells(record)
    assert cells[1].metadata["jupyter"] == {"source_hidden": True}
    assert cells[2].metadata["tags"] == ["step"]
    for n in (1, 2):
        meta = cells[n].metadata["praxis"]
        assert {"started_at", "ended_at", "seconds"} <= set(meta)
    # the link at the top, the anchor right before the failing cell
    top = record.cells[0]
    assert top.metadata["tags"] == [ERROR_CELL] and "](#cell-2)" in top.source
    assert cells[2].execution_count == 2  # the page's anchor #cell-2 is its In [2]
    at = record.cells.index(cells[2])
    marker = record.cells[at - 1]
    assert marker.metadata["tags"] == [ERROR_CELL] and "failed in cell 2, below" in marker.source
    assert "<" not in top.source + marker.source  # markdown a renderer without HTML shows
    own_markdown = [c.source for c in record.cells if c.cell_type == "markdown" and
                    ERROR_CELL not in c.metadata.get("tags", []) and
                    not c.source.startswith("**Phase failed")]  # fmt: skip
    assert own_markdown[1:] == ["## Setup", "## The failing step"]


def test_stale_error_cells_are_dropped_and_parameters_injected_afresh(tmp_path: Path) -> None:
    state, record = run_flow(flow_of(tmp_path, "stale_error_cells.ipynb", outputs="[out.txt]"))
    assert state.status == "done", state.error
    tags = [t for c in record.cells for t in c.metadata.get("tags", [])]
    assert "papermill-error-cell-tag" not in tags and ERROR_CELL not in tags
    injected = [c for c in record.cells if INJECTED in c.metadata.get("tags", [])]
    assert len(injected) == 1 and "x = 'old'" not in injected[0].source


def test_the_record_is_saved_as_cells_finish(tmp_path: Path) -> None:
    """A reviewer can open the record of a long cell while it runs."""
    root = tmp_path / "flow"
    (root / "nb").mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Py", "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("print('first cell done')"),
        nbformat.v4.new_code_cell(
            "import os, time\nfor _ in range(1200):\n"
            "    if os.path.exists('go'):\n        break\n    time.sleep(0.05)"
        ),
    ]
    nbformat.write(nb, root / "nb" / "work.ipynb")
    (root / "flow.yaml").write_text(
        "flow: parity\nsandbox: {backend: local}\nphases:\n"
        "  - id: work\n    kind: notebook\n    script: nb/work.ipynb\n"
    )
    run = runner.begin(root)
    result: list[RunState] = []
    worker = threading.Thread(target=in_thread(lambda: result.append(advance(root, run.id))))
    worker.start()
    path = root / "runs" / run.id / "records" / "work.ipynb"
    seen = None
    try:
        for _ in range(1200):  # until the record shows cell 2 running
            if path.exists():
                seen = json.loads(path.read_text())
                running = [c for c in seen["cells"] if c["metadata"].get("praxis", {}).get("cell")
                           == 2 and c["metadata"]["praxis"]["status"] == "running"]  # fmt: skip
                if running:
                    break
            time.sleep(0.05)
    finally:
        (root / "runs" / run.id / "workspace" / "go").write_text("")
        worker.join(120)
    assert seen is not None and seen["metadata"]["praxis"]["status"] == "running"
    first = [c for c in seen["cells"] if c["metadata"].get("praxis", {}).get("cell") == 1][0]
    assert "".join(first["outputs"][0]["text"]) == "first cell done\n"
    nbformat.validate(nbformat.from_dict(seen))
    assert result and result[0].status == "done"


# -- timeouts --------------------------------------------------------------------------------------


def test_a_60_s_cell_past_the_phase_timeout_fails_at_its_cell(tmp_path: Path) -> None:
    state, record = run_flow(flow_of(tmp_path, "sleep60.ipynb", timeout=2))
    assert state.status == "failed"
    assert state.phase("work").error == "nb/work.ipynb cell 2: timed out after 2 s"
    cells = code_cells(record)
    assert [status(cells[n]) for n in (1, 2, 3)] == ["ok", "error", "not-run"]
    assert record.cells[0].metadata["tags"] == [ERROR_CELL]
