"""Gate forms (flow.yaml ``review: {form:}``, DESIGN.md §16): a reviewer's typed answers,
checked at approve (a wrong type refused naming the field, exit 2, nothing changed), bound to
that Gate attempt's approval, reaching the later phases as ``params`` and the receipt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from praxis.flows.definition import contract
from praxis.flows.engine import runner
from praxis.flows.model.forms import BadValue
from praxis.flows.report.status import status_of
from praxis.flows.store.handle import RunHandle

from ._flows import praxis_here, state_of, write_flow

FLOW = """
    sandbox: {backend: fake}
    params: {threshold: 1}
    phases:
      - id: load
        kind: script
        script: load.py
        outputs: [rows.csv]
        review:
          required: true
          form:
            threshold: {type: number, default: 5}
            region: {choices: [north, south], required: true}
            comment: {type: text}
      - id: report
        kind: script
        script: report.py
        inputs: {working: [rows.csv]}
        outputs: [seen.json]
"""
FILES = {
    "load.py": "open('rows.csv', 'w').write('a\\n1\\n')\n",
    "report.py": (
        "import json\n"
        "json.dump({k: params[k] for k in ('threshold', 'region', 'comment')},"
        " open('seen.json', 'w'))\n"
    ),
}


@pytest.fixture
def at_gate(tmp_path: Path, allow_local: None) -> tuple[Path, str]:
    root = write_flow(tmp_path / "f", FLOW, FILES)
    state = runner.run(root)
    assert (state.waiting, state.gate) == ("gate", "load"), state.error
    return root, state.run


def test_a_form_value_reaches_the_next_phase_and_the_receipt(at_gate: tuple[Path, str]) -> None:
    root, run_id = at_gate
    state = runner.approve(root, run_id, gate="load", values={"threshold": "7", "region": "south"})
    assert state.phase("load").answers == {"threshold": 7, "region": "south", "comment": None}
    state = runner.advance(root, run_id)
    assert state.status == "done", state.error
    seen = json.loads((root / "runs" / run_id / "output" / "seen.json").read_text())
    assert seen == {"threshold": 7, "region": "south", "comment": None}  # params["threshold"] == 7
    run = RunHandle.open(contract.require(root), run_id)
    receipt = status_of(run).receipt
    gate = next(p for p in receipt["ledger"] if p["phase"] == "load")
    assert gate["decisions"][0]["values"] == {"threshold": 7, "region": "south", "comment": None}
    assert gate["decisions"][0]["attempt"] == 1


def test_a_non_number_is_refused_naming_the_field_and_nothing_changes(
    at_gate: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, run_id = at_gate
    before = state_of(root / "runs" / run_id)
    res = praxis_here(
        capsys, "approve", str(root), "--gate", "load", "--set", "threshold=seven",
        "--set", "region=north",
    )  # fmt: skip
    assert res.returncode == 2, res.stderr
    assert (
        "--set threshold='seven': expected a number (threshold, in the form of the Gate after load)"
        in res.stderr
    )
    next_line = [line for line in res.stderr.splitlines() if "next:" in line]
    assert len(next_line) == 1 and next_line[0].split()[-2:] == ["status", str(root)]
    after = state_of(root / "runs" / run_id)
    assert (after.revision, after.waiting, after.phase("load").answers) == (
        before.revision, "gate", {},
    )  # fmt: skip
    with pytest.raises(BadValue, match="region is required"):
        runner.approve(root, run_id, gate="load", values={"threshold": 7})
    with pytest.raises(BadValue, match="expected one of north, south"):
        runner.approve(root, run_id, gate="load", values={"region": "east"})
    with pytest.raises(BadValue, match="--set colour: not a field"):
        runner.approve(root, run_id, gate="load", values={"region": "north", "colour": "red"})


def test_the_cli_sets_values_and_the_route_asks_for_the_required_ones(
    at_gate: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, run_id = at_gate
    res = praxis_here(capsys, "status", str(root), "--json")
    route = json.loads(res.stdout)["route"]
    approve = next(c for c in route["commands"] if "approve" in c)
    assert approve[-2:] == ["--set", "region=<north|south>"]  # the person fills it in
    assert [f["name"] for f in route["gate"]["form"]] == ["threshold", "region", "comment"]
    res = praxis_here(
        capsys, "approve", str(root), "--gate", "load", "--set", "threshold=7",
        "--set", "region=north", "--set", "comment=looks fine",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    seen = json.loads((root / "runs" / run_id / "output" / "seen.json").read_text())
    assert seen == {"threshold": 7, "region": "north", "comment": "looks fine"}


def test_a_rerun_of_the_gates_phase_drops_its_answers(at_gate: tuple[Path, str]) -> None:
    root, run_id = at_gate
    runner.approve(root, run_id, gate="load", values={"threshold": 9, "region": "north"})
    state = runner.advance(root, run_id)
    assert state.status == "done"
    runner.rerun(root, "load", run_id)
    state = runner.advance(root, run_id)
    assert (state.gate, state.phase("load").answers) == ("load", {})  # attempt 2 asks again


@pytest.mark.parametrize(
    ("form", "message"),
    [
        (
            "{threshold: {type: number, default: five}}",
            "review.form.threshold.default: string 'five' is not a number value",
        ),
        (
            "{threshold: {type: decimal}}",
            "review.form.threshold.type: 'decimal' is not a field type",
        ),
        (
            "{region: {choices: []}}",
            "review.form.region.choices: expected a list of 1 to 100 choices",
        ),
        ("{2x: {type: text}}", "review.form.2x: is not a field name"),
    ],
)
def test_a_form_is_checked_naming_the_field(tmp_path: Path, form: str, message: str) -> None:
    root = write_flow(
        tmp_path / "f",
        f"""
        phases:
          - {{id: load, kind: script, script: s.py, review: {{required: true, form: {form}}}}}
        """,
        {"s.py": "pass\n"},
    )
    lines = contract.check(root).lines()
    assert len(lines) == 1 and message in lines[0], lines


def test_a_form_needs_a_gate(tmp_path: Path) -> None:
    root = write_flow(
        tmp_path / "f",
        """
        phases:
          - {id: load, kind: script, script: s.py, review: {form: {n: {type: number}}}}
        """,
        {"s.py": "pass\n"},
    )
    assert contract.check(root).lines() == [
        "flow.yaml: phases[load].review.form: a form needs a Gate: add required: true"
    ]
