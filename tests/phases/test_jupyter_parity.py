"""A notebook phase's record is what nbclient writes for the same notebook (DESIGN.md §12).

The corpus: nbclient's own test notebooks (tests/data/jupyter/nbclient_*, from
jupyter/nbclient, BSD-3-Clause), praxis's papermill-behaviour notebooks (tests/data/notebooks),
the example flow's notebook, and one notebook per Jupyter behaviour (the other files of
tests/data/jupyter: displays updated in place, clear_output(wait=True), skip-execution and
blank cells, allow_errors, inline figures, stream coalescing, a DataFrame). Every notebook runs
once as a praxis notebook phase (one phase per notebook, on docker and on local)
and once through nbclient with a local ipykernel, the reference, as papermill runs it: the
same injected-parameters cell in the same place, run without taking an execution count.

Compared for every code cell: the execution count and the outputs, after this normalisation,
the same on both sides:
- stream outputs: consecutive outputs of one stream are one text, with ``\\r`` and ``\\b``
  applied (as JupyterLab keeps them; where ipykernel splits stream text is a matter of time);
- object addresses (``0x7f…``) as nbclient's own tests normalise them, and the working folder
  and site-packages paths in tracebacks (they differ between the host and the image);
- nothing else: images are compared byte for byte (the image pins the host's matplotlib), and
  output metadata as it is.
Not compared: ``metadata.execution`` timings (compared by their keys only) and widget state
(the image has no ipywidgets: nbclient's widget notebooks are not in the corpus). Also left
out: nbclient's Interrupt notebook (it never ends: see test_a_stopped_cell_keeps_its_outputs),
the tutorial notebooks (they import praxis, which the sandbox does not have), and notebooks
whose kernel praxis refuses (tests/flows/test_notebook_check.py).
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from praxis.flows.engine import runner
from praxis.flows.model.state import RunState
from praxis.phases.notebook import ERROR_CELL, INJECTED, STALE_MARKERS
from sandbox.collector import overwrite, text_of

from ..flows.helpers import local
from ..labels import TEST_LABELS

DATA = Path(__file__).resolve().parents[1] / "data"
REPO = DATA.parents[1]
# notebook -> allow_errors for the phase (and for nbclient)
CORPUS: dict[str, bool] = {
    "jupyter/nbclient_check_history_in_memory.ipynb": False,
    "jupyter/nbclient_clear_output.ipynb": False,
    "jupyter/nbclient_disable_stdin.ipynb": True,
    "jupyter/nbclient_empty_cell.ipynb": False,
    "jupyter/nbclient_error.ipynb": True,
    "jupyter/nbclient_factorials.ipynb": False,
    "jupyter/nbclient_helloworld.ipynb": False,
    "jupyter/nbclient_inline_image.ipynb": False,
    "jupyter/nbclient_other_comms.ipynb": False,
    "jupyter/nbclient_skip_exceptions.ipynb": True,
    "jupyter/nbclient_skip_exceptions_with_cell_tags.ipynb": False,
    "jupyter/nbclient_skip_execution_with_cell_tag.ipynb": False,
    "jupyter/nbclient_svg.ipynb": False,
    "jupyter/nbclient_unicode.ipynb": False,
    "jupyter/nbclient_unicodepy3.ipynb": False,
    "jupyter/nbclient_update_display_id.ipynb": False,
    "jupyter/update_display.ipynb": False,
    "jupyter/clear_output_wait.ipynb": False,
    "jupyter/skip_and_blank.ipynb": False,
    "jupyter/errors_allowed.ipynb": True,
    "jupyter/inline_figures.ipynb": False,
    "jupyter/streams.ipynb": False,
    "notebooks/line_magic_error.ipynb": True,
    "notebooks/syntax_error.ipynb": True,
    "notebooks/import_error.ipynb": True,
    "notebooks/raises_exception.ipynb": False,
    "notebooks/parameters.ipynb": False,
    "notebooks/no_parameters.ipynb": False,
    "notebooks/nbformat44.ipynb": False,
    "notebooks/stale_error_cells.ipynb": False,
    "notebooks/fail_after_markdown.ipynb": False,  # it fails its phase, as nbclient stops
}
FILES = ["jupyter/python.png"]  # working inputs the notebooks open by name
HEX = re.compile(r"0x[0-9a-fA-F]+")
SITE = re.compile(r"/[^\s'\"\x1b]*?/site-packages/")


def phase_id(name: str) -> str:
    return re.sub(r"[^a-z0-9_]", "_", Path(name).stem.lower())


@dataclass
class Ran:
    runs: dict[str, tuple[RunState, Path]]  # notebook -> its run's state and folder
    workdir: Path  # the reference's working folder: the same input files


def groups() -> list[list[str]]:
    """Flows to run: nbclient's and the behaviour notebooks in one (they write no file of the
    same name), each papermill-behaviour notebook in its own (they all write out.txt, and a
    later phase may not replace a file an earlier one wrote)."""
    jupyter = [n for n in CORPUS if n.startswith("jupyter/")]
    return [jupyter] + [[n] for n in CORPUS if n not in jupyter]


def corpus_flow(root: Path, names: list[str], sandbox: str) -> Path:
    (root / "nb").mkdir(parents=True)
    for name in FILES:
        shutil.copy(DATA / name, root / Path(name).name)
    phases = []
    for name in names:
        shutil.copy(DATA / name, root / "nb" / Path(name).name)
        phases.append(
            {
                "id": phase_id(name),
                "kind": "notebook",
                "script": f"nb/{Path(name).name}",
                "inputs": {"working": [Path(n).name for n in FILES]},
                **({"notebook": {"allow_errors": True}} if CORPUS[name] else {}),
            }
        )
    flow = {"flow": "parity", "sandbox": json.loads(sandbox), "phases": phases}
    (root / "flow.yaml").write_text(json.dumps(flow))
    return root


def run_corpus(tmp: Path, sandbox: str, make_sandbox: Any) -> Ran:
    runs = {}
    for i, names in enumerate(groups()):
        root = corpus_flow(tmp / f"flow{i}", names, sandbox)
        run = runner.begin(root)
        state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=make_sandbox))
        runs.update({name: (state, root / "runs" / run.id) for name in names})
    workdir = tmp / "reference"
    workdir.mkdir()
    for name in FILES:
        shutil.copy(DATA / name, workdir / Path(name).name)
    return Ran(runs=runs, workdir=workdir)


def docker_config(image: str) -> str:
    return json.dumps({"backend": "docker", "image": image, "labels": TEST_LABELS, "timeout": 120})


@pytest.fixture(scope="module")
def on_local(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    return run_corpus(tmp_path_factory.mktemp("local"), '{"backend": "local"}', local)


@pytest.fixture(scope="module")
def on_docker(tmp_path_factory: pytest.TempPathFactory, docker_image: str) -> Ran:
    return run_corpus(
        tmp_path_factory.mktemp("docker"), docker_config(docker_image), runner.default_sandbox
    )


# -- the reference -----------------------------------------------------------------------------


def as_run(record: nbformat.NotebookNode, source: Path) -> nbformat.NotebookNode:
    """The notebook praxis ran: the source's cells, the record's injected cell in its place."""
    nb = nbformat.read(source, as_version=4)
    mine = [c for c in record.cells if not _marker(c)]
    injected = [c for c in mine if INJECTED in _tags(c)]
    assert len(injected) == 1
    own = [c for c in nb.cells if not set(_tags(c)) & {INJECTED, *STALE_MARKERS}]
    at = mine.index(injected[0])
    assert [text_of(c.source) for c in mine if c is not injected[0]] == [
        text_of(c.source) for c in own
    ], "the record must keep every cell of the notebook, in order"
    cells = [nbformat.from_dict(json.loads(json.dumps(c))) for c in own]
    shot = nbformat.from_dict(json.loads(json.dumps(injected[0])))
    cells.insert(at, shot)
    for cell in cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nb.cells = cells
    return nb


def _warm_font_cache() -> None:
    """Build matplotlib's font cache before the reference kernel starts: a kernel that builds
    it says so on stderr ("Matplotlib is building the font cache"), which the image's kernels,
    whose cache is built with the image, never do (a fresh machine's first run only)."""
    import matplotlib.font_manager  # noqa: F401  (builds ~/.cache/matplotlib once)


def reference(nb: nbformat.NotebookNode, workdir: Path, allow_errors: bool) -> None:
    """nbclient runs ``nb`` in a local ipykernel, cell by cell as its ``execute`` does, the
    injected cell without an execution count (papermill's cell, praxis's numbering)."""
    _warm_font_cache()
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=120,
        allow_errors=allow_errors,
        resources={"metadata": {"path": str(workdir)}},
    )
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            try:
                client.execute_cell(cell, index, store_history=INJECTED not in _tags(cell))
            except CellExecutionError:
                break


# -- the comparison ----------------------------------------------------------------------------


def comparable(nb: nbformat.NotebookNode, workdir: str) -> list[tuple[Any, list[Any]]]:
    """(execution count, normalised outputs) of each code cell but the injected one."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "code" or INJECTED in _tags(cell) or _marker(cell):
            continue
        found.append((cell.execution_count, [_normal(o, workdir) for o in _joined(cell.outputs)]))
    return found


def _joined(outputs: list[Any]) -> list[dict[str, Any]]:
    joined: list[dict[str, Any]] = []
    for out in json.loads(json.dumps(outputs)):
        last = joined[-1] if joined else None
        if (
            out["output_type"] == "stream"
            and last is not None
            and last["output_type"] == "stream"
            and last["name"] == out["name"]
        ):
            last["text"] = text_of(last["text"]) + text_of(out["text"])
        else:
            joined.append(out)
    for out in joined:
        if out["output_type"] == "stream":
            out["text"] = overwrite(text_of(out["text"]))
    return joined


def _normal(out: dict[str, Any], workdir: str) -> dict[str, Any]:
    def clean(text: str) -> str:
        return SITE.sub("<site>/", HEX.sub("<HEXADDR>", text.replace(workdir, "<cwd>")))

    out = dict(out)
    if "text" in out:
        out["text"] = clean(text_of(out["text"]))
    if "data" in out:
        out["data"] = {
            k: clean(text_of(v)) if k == "text/plain" else v for k, v in out["data"].items()
        }
    if "traceback" in out:
        out["traceback"] = [clean(line.replace("/workspace", "<cwd>")) for line in out["traceback"]]
    return out


def _tags(cell: Any) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _marker(cell: Any) -> bool:
    praxis = cell.get("metadata", {}).get("praxis", {})
    return ERROR_CELL in _tags(cell) or bool(praxis.get("failure"))


def compare(ran: Ran, name: str) -> None:
    record_path = ran.runs[name][1] / "records" / f"{phase_id(name)}.ipynb"
    record = nbformat.read(record_path, as_version=4)
    nbformat.validate(record)
    expected = as_run(record, DATA / name)
    reference(expected, ran.workdir, CORPUS[name])
    got = comparable(record, "/workspace")
    want = comparable(expected, str(ran.workdir))
    assert len(got) == len(want)
    for number, (mine, theirs) in enumerate(zip(got, want, strict=True), 1):
        assert mine == theirs, f"{name}: code cell {number} differs from nbclient's"
    timed = [c for c in record.cells if c.cell_type == "code" and c.execution_count]
    for cell in timed:  # nbclient's timings, under its own names
        assert {"iopub.execute_input", "shell.execute_reply"} <= set(cell.metadata["execution"])


# -- the tests ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CORPUS))
def test_the_record_is_nbclients_on_local(on_local: Ran, name: str) -> None:
    compare(on_local, name)


@pytest.mark.docker
@pytest.mark.parametrize("name", list(CORPUS))
def test_the_record_is_nbclients_on_docker(on_docker: Ran, name: str) -> None:
    compare(on_docker, name)


def test_only_a_notebook_failing_without_allow_errors_fails_its_phase(on_local: Ran) -> None:
    """allow_errors and raises-exception let the others run past their errors."""
    failed = [
        n for n, (state, _) in on_local.runs.items() if state.phase(phase_id(n)).status != "done"
    ]
    assert failed == ["notebooks/fail_after_markdown.ipynb"]
    state = on_local.runs[failed[0]][0]
    assert state.phase("fail_after_markdown").error == (
        "nb/fail_after_markdown.ipynb cell 2: ValueError: bad total 6"
    )


@pytest.mark.docker
def test_the_example_flows_notebook_reads_as_nbclient_runs_it(
    tmp_path: Path, docker_image: str
) -> None:
    root = tmp_path / "notebook-example"
    shutil.copytree(
        REPO / "flows" / "notebook-example", root, ignore=shutil.ignore_patterns("runs", "run.lock")
    )
    flow = json.dumps(
        {"backend": "docker", "image": docker_image, "labels": TEST_LABELS, "timeout": 120}
    )
    text = (
        (root / "flow.yaml")
        .read_text()
        .replace("sandbox: {backend: auto, timeout: 120}", f"sandbox: {flow}")
    )
    (root / "flow.yaml").write_text(text)
    run = runner.begin(root)
    state = runner.advance(
        root, run.id, options=runner.RunOptions(make_sandbox=runner.default_sandbox)
    )
    assert state.status == "done", state.error
    workdir = tmp_path / "reference"
    workdir.mkdir()
    shutil.copy(root / "runs" / run.id / "output" / "tidy.csv", workdir / "tidy.csv")
    record = nbformat.read(root / "runs" / run.id / "records" / "explore.ipynb", as_version=4)
    expected = as_run(record, root / "notebooks" / "explore.ipynb")
    reference(expected, workdir, False)
    assert comparable(record, "/workspace") == comparable(expected, str(workdir))
    images = [
        o for c in record.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})
    ]
    assert images  # the chart: matplotlib is in the image
