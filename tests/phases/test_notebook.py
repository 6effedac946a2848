"""``kind: notebook`` phases through the real runner on the local backend."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat
import pytest
from nbformat import v4

from praxis import api
from praxis.flows.definition import contract
from praxis.flows.engine import runner
from praxis.flows.model.flow import Flow
from praxis.flows.store.handle import RunHandle
from praxis.phases.notebook import INJECTED, PARAMETERS, plan
from sandbox import Sandbox, open_sandbox

REPO = Path(__file__).resolve().parents[2]


def local(flow: Flow, run: RunHandle) -> Sandbox:
    return open_sandbox({"backend": "local"}, workspace=run.paths.workspace, name=run.id)


def notebook(*cells: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb = v4.new_notebook(cells=list(cells))
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nb


def tagged(source: str, *tags: str) -> nbformat.NotebookNode:
    cell = v4.new_code_cell(source)
    cell.metadata["tags"] = list(tags)
    return cell


def one_phase_flow(root: Path, nb: nbformat.NotebookNode, *, timeout: int = 60) -> Path:
    (root / "nb").mkdir(parents=True)
    nbformat.write(nb, root / "nb" / "work.ipynb")
    (root / "flow.yaml").write_text(
        "flow: nbtest\n"
        f"sandbox: {{backend: local, timeout: {timeout}}}\n"
        "phases:\n"
        "  - id: work\n"
        "    kind: notebook\n"
        "    script: nb/work.ipynb\n"
        "    outputs: [out.txt]\n"
    )
    return root


def records(root: Path, run_id: str) -> Path:
    return root / "runs" / run_id / "records"


def test_plan_puts_the_injected_cell_after_the_parameters_cell() -> None:
    nb = notebook(
        v4.new_markdown_cell("# title"),
        v4.new_code_cell("import os"),
        tagged("x = 1", PARAMETERS),
        v4.new_code_cell("print(x)"),
    )
    steps = plan(nb, "x = 2\n")
    kinds = [(s.cell.cell_type, s.number, s.injected) for s in steps]
    assert kinds == [
        ("markdown", None, False),
        ("code", 1, False),
        ("code", 2, False),
        ("code", None, True),
        ("code", 3, False),
    ]
    assert steps[3].cell.metadata["tags"] == [INJECTED]


def test_plan_without_parameters_cell_injects_at_the_top_and_drops_stale_injections() -> None:
    nb = notebook(tagged("x = 'old'", INJECTED), v4.new_code_cell("print(x)"))
    steps = plan(nb, "x = 'new'\n")
    assert [s.label for s in steps] == ["injected parameters", "cell 1"]
    assert steps[0].cell.source == "x = 'new'\n"


def test_example_flow_runs_and_its_notebook_sees_the_injected_values(tmp_path: Path) -> None:
    root = tmp_path / "notebook-example"
    shutil.copytree(
        REPO / "flows" / "notebook-example", root, ignore=shutil.ignore_patterns("runs", "run.lock")
    )
    run = runner.begin(root)
    state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=local))
    assert state.status == "done", state.error
    assert [p.status for p in state.phases] == ["done", "done", "done"]

    nb = nbformat.read(records(root, run.id) / "explore.ipynb", as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["praxis"]["status"] == "done"
    assert nb.metadata["praxis"]["kind"] == "notebook"
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    at = tags.index([PARAMETERS])
    assert tags[at + 1] == [INJECTED]
    injected = nb.cells[at + 1].source
    assert f"run_id = {run.id!r}" in injected
    assert "inputs = ['tidy.csv']" in injected and "outputs = ['stations.csv']" in injected
    assert "phase_id = 'explore'" in injected
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert f"run {run.id}, phase explore: 14 readings from tidy.csv" in printed
    html = [o for o in outputs if "text/html" in o.get("data", {})]
    assert html and "mean_temp_c" in html[0]["data"]["text/html"]
    assert any("image/png" in o.get("data", {}) for o in outputs)
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    assert markdown[0].startswith("# Explore the readings")
    stations = (root / "runs" / run.id / "output" / "stations.csv").read_text()
    assert stations.splitlines()[0].startswith("station,readings,mean_temp_c")


def test_an_error_in_cell_3_fails_the_phase_naming_the_cell(tmp_path: Path) -> None:
    nb = notebook(
        v4.new_markdown_cell("intro"),
        v4.new_code_cell("x = 1"),
        v4.new_code_cell("print('two')"),
        v4.new_markdown_cell("then"),
        v4.new_code_cell("y = 1\nx / 0"),
        v4.new_code_cell("open('out.txt', 'w').write('never')"),
    )
    root = one_phase_flow(tmp_path / "flow", nb)
    run = runner.begin(root)
    state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=local))
    assert state.status == "failed"
    assert state.phase("work").error == "nb/work.ipynb cell 3: ZeroDivisionError: division by zero"

    record = nbformat.read(records(root, run.id) / "work.ipynb", as_version=4)
    nbformat.validate(record)
    assert record.metadata["praxis"]["status"] == "failed"
    code = [c for c in record.cells if c.cell_type == "code"]
    # injected (top, no parameters cell), cells 1-3 run, cell 4 kept without outputs
    assert [c.metadata.get("praxis", {}).get("cell") for c in code] == [None, 1, 2, 3, 4]
    failed = code[3]
    errors = [o for o in failed.outputs if o.output_type == "error"]
    assert errors and errors[0].ename == "ZeroDivisionError"
    plain = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(errors[0].traceback))
    assert "x / 0" in plain and "ZeroDivisionError" in plain
    assert code[4].outputs == [] and code[4].execution_count is None
    assert code[4].source == "open('out.txt', 'w').write('never')"
    own = [c for c in record.cells if c.cell_type == "markdown" and not c.metadata.get("tags")]
    assert [c.source for c in own][:2] == ["intro", "then"]
    assert "cell 3" in record.cells[-1].source  # the runner's failure note
    assert not (root / "runs" / run.id / "output" / "out.txt").exists()


def test_a_cell_past_the_timeout_is_named_and_the_rest_is_kept(tmp_path: Path) -> None:
    nb = notebook(
        v4.new_code_cell("print('start')"),
        v4.new_code_cell("import time\ntime.sleep(60)"),
        v4.new_code_cell("print('after')"),
    )
    root = one_phase_flow(tmp_path / "flow", nb, timeout=2)
    run = runner.begin(root)
    state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=local))
    assert state.status == "failed"
    assert state.phase("work").error == "nb/work.ipynb cell 2: timed out after 2 s"
    record = nbformat.read(records(root, run.id) / "work.ipynb", as_version=4)
    nbformat.validate(record)
    sources = [c.source for c in record.cells if c.cell_type == "code"]
    assert sources[1:] == ["print('start')", "import time\ntime.sleep(60)", "print('after')"]


@pytest.mark.parametrize("content", ["{not json", ""])
def test_an_unreadable_notebook_is_refused_before_a_run_begins(
    tmp_path: Path, content: str
) -> None:
    root = one_phase_flow(tmp_path / "flow", notebook(v4.new_code_cell("1")))
    (root / "nb" / "work.ipynb").write_text(content)
    with pytest.raises(contract.FlowInvalid) as info:
        runner.begin(root)
    error = str(info.value.report.errors[0])
    assert error.startswith("flow.yaml: phases[") and "nb/work.ipynb: is not JSON" in error
    assert "save it again" in error
    assert not (root / "runs").exists()


def test_one_number_names_a_cell_after_blank_and_skipped_cells(tmp_path: Path) -> None:
    """The error, status, the record's In [n], its anchor and the traceback's Cell In[n] agree,
    and they count the cells the kernel ran, as Jupyter does."""
    nb = notebook(
        v4.new_code_cell("x = 1"),
        v4.new_code_cell(""),
        tagged("print('not run')", "skip-execution"),
        v4.new_code_cell("y = 2\nx / 0"),
    )
    root = one_phase_flow(tmp_path / "flow", nb)
    run = runner.begin(root)
    state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=local))
    assert state.phase("work").error == "nb/work.ipynb cell 2: ZeroDivisionError: division by zero"
    assert "cell 2: ZeroDivisionError" in api.status(root, run.id).message
    record = nbformat.read(records(root, run.id) / "work.ipynb", as_version=4)
    code = [c for c in record.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == [None, 1, None, None, 2]  # injected first
    assert [c.metadata["praxis"].get("status") for c in code[2:4]] == ["skipped", "skipped"]
    assert code[2].outputs == [] and code[3].outputs == []
    errors = [o for o in code[4].outputs if o.output_type == "error"]
    plain = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(errors[0].traceback))
    assert "Cell In[2], line 2" in plain
    assert "](#cell-2)" in record.cells[0].source  # the page's anchor of In [2]


def test_the_record_keeps_stream_text_as_jupyterlab_shows_it(tmp_path: Path) -> None:
    """``!head`` of a file with Windows line endings prints lines ending in \\r\\r\\n; a
    progress line is rewritten with \\r. The record keeps what JupyterLab shows."""
    nb = notebook(  # what a pty makes of each \\r\\n that `!head` prints
        v4.new_code_cell("import sys\n_ = sys.stdout.write('id,name\\r\\r\\n1,north\\r\\r\\n')"),
        v4.new_code_cell("print('abcdef\\rXY')\n_ = open('out.txt', 'w').write('x')"),
    )
    root = one_phase_flow(tmp_path / "flow", nb)
    run = runner.begin(root)
    state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=local))
    assert state.status == "done", state.error
    record = nbformat.read(records(root, run.id) / "work.ipynb", as_version=4)
    code = [c for c in record.cells if c.cell_type == "code"]
    assert [o.text for o in code[1].outputs] == ["id,name\n1,north\n"]
    assert [o.text for o in code[2].outputs] == ["XYcdef\n"]


def test_allow_errors_runs_past_a_failing_cell(tmp_path: Path) -> None:
    nb = notebook(v4.new_code_cell("1 / 0"), v4.new_code_cell("open('out.txt', 'w').write('x')"))
    root = one_phase_flow(tmp_path / "flow", nb)
    flow_yaml = root / "flow.yaml"
    flow_yaml.write_text(flow_yaml.read_text() + "    notebook: {allow_errors: true}\n")
    run = runner.begin(root)
    state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=local))
    assert state.status == "done", state.error
    record = nbformat.read(records(root, run.id) / "work.ipynb", as_version=4)
    code = [c for c in record.cells if c.cell_type == "code"]
    assert [c.metadata["praxis"]["status"] for c in code[1:]] == ["allowed-error", "ok"]


def test_a_figure_left_open_is_shown_in_a_script_phase_and_savefig_still_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MPLBACKEND", "Agg")  # the host's choice does not reach the kernel
    root = tmp_path / "flow"
    root.mkdir()
    (root / "plot.py").write_text(
        "import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(2, 2), dpi=50)\n"
        "ax.plot([1, 2])\nfig.savefig('out.png')\n"
    )
    (root / "flow.yaml").write_text(
        "flow: fig\nsandbox: {backend: local}\nphases:\n"
        "  - {id: plot, kind: script, script: plot.py, outputs: [out.png]}\n"
    )
    run = runner.begin(root)
    state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=local))
    assert state.status == "done", state.error
    record = nbformat.read(records(root, run.id) / "plot.ipynb", as_version=4)
    shown = [
        o for c in record.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})
    ]
    assert len(shown) == 1  # the open figure, drawn by the inline backend after the cell
    assert (root / "runs" / run.id / "output" / "out.png").read_bytes().startswith(b"\x89PNG")
