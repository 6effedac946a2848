"""`praxis check` refuses a notebook that cannot run, in one line naming why."""

from __future__ import annotations

from pathlib import Path

import pytest

from praxis import cli
from praxis.flows.definition import contract
from praxis.flows.engine import runner

from ..phases.test_notebook_parity import flow_of


@pytest.mark.parametrize(
    ("notebook", "says"),
    [
        ("r_kernel.ipynb", "nb/work.ipynb: kernel language is 'R'; praxis runs Python notebooks"),
        ("not_json.ipynb", "nb/work.ipynb: is not JSON (line 1: Expecting value)"),
        ("empty_object.ipynb", "nb/work.ipynb: is not a Jupyter notebook"),
        ("nbformat3.ipynb", "nb/work.ipynb: is nbformat v3; praxis reads v4"),
        ("unknown_cell_type.ipynb", "nb/work.ipynb: cell 2 has an unknown type 'widget'"),
    ],
)
def test_check_refuses_a_notebook_that_cannot_run(
    tmp_path: Path, notebook: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = flow_of(tmp_path, notebook)
    assert cli.main(["check", str(root)]) == 2
    res = capsys.readouterr()
    problems = [line for line in res.out.splitlines() if "nb/work.ipynb" in line]
    assert len(problems) == 1 and "\n" not in problems[0]
    assert problems[0].startswith("flow.yaml: phases[") and says in problems[0]
    assert "Traceback" not in res.err
    with pytest.raises(contract.FlowInvalid):
        runner.begin(root)
