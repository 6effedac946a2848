"""A cell stopped before it finished (the phase's timeout, `praxis cancel`, Ctrl-C, the
kernel's death) keeps in the record what it printed so far, and an error output says what
stopped it; the record is valid nbformat."""

from __future__ import annotations

import _thread
import threading
import time
from pathlib import Path

import nbformat
import pytest

from praxis.flows.engine import runner
from praxis.flows.model.state import RunState

from ..flows.helpers import in_thread, local
from ..labels import TEST_LABELS

WAITS = "print('started', flush=True)\nimport time\nfor _ in range(600):\n    time.sleep(0.1)"


def flow_of(root: Path, cells: list[str], *, timeout: int = 60, sandbox: str = "") -> Path:
    (root / "nb").mkdir(parents=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Py", "language": "python"}
    nbformat.write(nb, root / "nb" / "work.ipynb")
    (root / "flow.yaml").write_text(
        f"flow: stops\nsandbox: {sandbox or '{backend: local}'}\nphases:\n"
        f"  - id: work\n    kind: notebook\n    script: nb/work.ipynb\n    timeout: {timeout}\n"
    )
    return root


def record_of(root: Path, run_id: str) -> nbformat.NotebookNode:
    record = nbformat.read(root / "runs" / run_id / "records" / "work.ipynb", as_version=4)
    nbformat.validate(record)
    return record


def cell(record: nbformat.NotebookNode, number: int) -> nbformat.NotebookNode:
    return next(
        c
        for c in record.cells
        if c.cell_type == "code" and c.metadata.get("praxis", {}).get("cell") == number
    )


def printed(c: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in c.outputs if o.output_type == "stream")


def errors(c: nbformat.NotebookNode) -> list[tuple[str, str]]:
    return [(o.ename, o.evalue) for o in c.outputs if o.output_type == "error"]


def when_started(root: Path, run_id: str, act: object) -> threading.Thread:
    """Calls ``act()`` once the phase's live log shows the cell printed 'started'."""
    log = root / "runs" / run_id / "live" / "work.log"

    def watch() -> None:
        for _ in range(1200):
            if log.exists() and "started" in log.read_text():
                act()  # type: ignore[operator]
                return
            time.sleep(0.05)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_a_cell_past_the_timeout_keeps_what_it_printed(tmp_path: Path) -> None:
    root = flow_of(tmp_path / "flow", ["x = 1", WAITS], timeout=3)
    run = runner.begin(root)
    state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=local))
    assert state.phase("work").error == "nb/work.ipynb cell 2: timed out after 3 s"
    stopped = cell(record_of(root, run.id), 2)
    assert printed(stopped) == "started\n"
    assert errors(stopped)[-1] == ("CellTimeoutError", "timed out after 3 s (the phase's timeout)")
    assert ("KeyboardInterrupt", "") in errors(stopped)  # the interrupt, with where it was
    assert stopped.metadata["praxis"]["status"] == "error"
    assert stopped.execution_count == 2


def test_a_cancelled_cell_keeps_what_it_printed(tmp_path: Path) -> None:
    root = flow_of(tmp_path / "flow", [WAITS])
    run = runner.begin(root)
    result: list[RunState] = []
    worker = threading.Thread(
        target=in_thread(
            lambda: result.append(
                runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=local))
            )
        )
    )
    worker.start()
    when_started(root, run.id, lambda: runner.cancel(root, run.id)).join(90)
    worker.join(90)
    assert result and result[0].status == "cancelled"
    stopped = cell(record_of(root, run.id), 1)
    assert printed(stopped) == "started\n"
    assert errors(stopped)[-1] == ("Cancelled", "stopped by `praxis cancel`")
    assert stopped.metadata["praxis"]["status"] == "stopped"


def test_ctrl_c_in_the_runner_keeps_what_the_cell_printed(tmp_path: Path) -> None:
    root = flow_of(tmp_path / "flow", [WAITS])
    run = runner.begin(root)
    watcher = when_started(root, run.id, _thread.interrupt_main)
    with pytest.raises(KeyboardInterrupt):
        runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=local))
    watcher.join(5)
    stopped = cell(record_of(root, run.id), 1)
    assert printed(stopped) == "started\n"
    assert errors(stopped)[-1] == ("KeyboardInterrupt", "stopped by Ctrl-C in the runner")
    assert stopped.metadata["praxis"]["status"] == "stopped"
    assert stopped.execution_count == 1


def test_a_cell_whose_kernel_dies_keeps_what_it_printed(tmp_path: Path) -> None:
    root = flow_of(
        tmp_path / "flow", ["print('bye', flush=True)\nimport os, time\ntime.sleep(1)\nos._exit(3)"]
    )
    run = runner.begin(root)
    state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=local))
    assert state.status == "failed"
    stopped = cell(record_of(root, run.id), 1)
    assert printed(stopped) == "bye\n"
    assert errors(stopped)[-1][0] == "DeadKernelError"


@pytest.mark.docker
def test_a_cell_past_the_timeout_keeps_what_it_printed_in_docker(
    tmp_path: Path, docker_image: str
) -> None:
    labels = ", ".join(f'"{k}": "{v}"' for k, v in TEST_LABELS.items())
    sandbox = f"{{backend: docker, image: '{docker_image}', labels: {{{labels}}}}}"
    root = flow_of(tmp_path / "flow", ["x = 1", WAITS], timeout=3, sandbox=sandbox)
    run = runner.begin(root)
    state = runner.advance(
        root, run.id, options=runner.RunOptions(make_sandbox=runner.default_sandbox)
    )
    assert state.backend == "docker"
    assert state.phase("work").error == "nb/work.ipynb cell 2: timed out after 3 s"
    stopped = cell(record_of(root, run.id), 2)
    assert printed(stopped) == "started\n"
    assert errors(stopped)[-1][0] == "CellTimeoutError"
