"""The public Python API (praxis/__init__.py) over real runs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import praxis
from praxis.errors import UsageError
from praxis.flows.definition.sandbox_config import SandboxInvalid
from praxis.flows.model.events import ArtifactEdited, GateApproved, PhaseDone

REPO = Path(__file__).resolve().parents[1]


def copy_flow(name: str, dest: Path) -> Path:
    shutil.copytree(REPO / "flows" / name, dest, ignore=shutil.ignore_patterns("runs", "run.lock"))
    return dest


def test_all_names_the_public_api() -> None:
    assert set(praxis.__all__) >= {
        *("load", "check", "begin", "advance", "status", "approve", "reject", "rerun"),
        *("cancel", "edit", "outputs", "events", "read_table"),
    }
    assert all(hasattr(praxis, name) for name in praxis.__all__)


def test_sales_report_through_the_gate(tmp_path: Path) -> None:
    flow = copy_flow("sales-report", tmp_path / "sales-report")
    assert praxis.check(flow).ok and praxis.load(flow / "flow.yaml").name == "sales-report"
    run = praxis.begin(flow)
    state = praxis.advance(flow, sandbox={"backend": "local"})
    assert state.waiting == "gate" and state.gate == "flag"

    status = praxis.status(flow, run.id)
    assert status.gate == "flag" and status.backend == "local"
    assert status.next[0].startswith("praxis approve")
    assert list(praxis.outputs(flow)) == ["clean.csv", "review.csv"]

    review = praxis.read_table(flow, "review.csv")
    assert set(review["action"]) == {"drop"} and len(review) >= 1
    review.loc[0, "action"] = "keep"
    state = praxis.edit(flow, "review.csv", review.to_csv(index=False), run.id)
    with pytest.raises(praxis.Refused, match="not"):
        praxis.approve(flow, expect_revision=state.revision - 1)
    praxis.approve(flow, run.id, expect_revision=state.revision)
    with pytest.raises(praxis.Refused):
        praxis.approve(flow, run.id)

    state = praxis.advance(flow, run.id, sandbox={"backend": "local"})
    assert state.status == "done", state.error
    assert praxis.read_table(flow, "review.csv").loc[0, "action"] == "keep"
    by_region = praxis.read_table(flow, "by_region.csv")
    assert list(by_region.columns)[:2] == ["region", "orders"]
    outs = praxis.outputs(flow)
    assert list(outs) == [
        *(
            "clean.csv",
            "review.csv",
            "by_region.csv",
            "by_week.csv",
            "report.md",
            "revenue_by_week.png",
        ),
    ]
    assert "# Sales report" in outs["report.md"].read_text()
    with pytest.raises(ValueError, match="read_table reads"):
        praxis.read_table(flow, "report.md")
    with pytest.raises(praxis.NoOutput, match="no output 'nope.csv'"):
        praxis.read_table(flow, "nope.csv")

    events = praxis.events(flow, run.id)
    assert [e.phase for e in events if isinstance(e, PhaseDone)] == [
        *("clean", "flag", "summarise", "report"),
    ]
    assert [e.name for e in events if isinstance(e, ArtifactEdited)][0] == "review.csv"
    assert any(isinstance(e, GateApproved) for e in events)

    state = praxis.rerun(flow, "report")
    assert state.status == "paused" and state.phase("report").status == "pending"
    state, now = praxis.cancel(flow)
    assert now and state.status == "cancelled"


GATED = """\
flow: gated
sandbox: {backend: fake}
phases:
  - id: make
    kind: script
    script: make.py
    outputs: [t.csv]
    review: required
  - id: use
    kind: script
    script: use.py
    inputs: {working: [t.csv]}
    outputs: [u.csv]
"""


def test_reject_reopens_a_phase_with_the_note(tmp_path: Path, allow_local: None) -> None:
    flow = tmp_path / "gated"
    flow.mkdir()
    (flow / "flow.yaml").write_text(GATED)
    (flow / "make.py").write_text("open('t.csv', 'w').write('a\\n1\\n')\n")
    (flow / "use.py").write_text("open('u.csv', 'w').write(open('t.csv').read())\n")
    praxis.begin(flow)
    assert praxis.advance(flow).waiting == "gate"
    state = praxis.reject(flow, "make", "use two rows", gate="make")
    assert state.status == "paused" and state.waiting is None
    assert state.phase("make").note == "use two rows"
    assert praxis.advance(flow).waiting == "gate"


def test_errors_name_the_problem(tmp_path: Path) -> None:
    (tmp_path / "flow.yaml").write_text("flow: Bad Name\nphases: []\n")
    report = praxis.check(tmp_path)
    assert not report.ok and report.lines()
    with pytest.raises(praxis.FlowInvalid):
        praxis.load(tmp_path)
    flow = copy_flow("notebook-example", tmp_path / "nbx")
    with pytest.raises(praxis.NoRun):
        praxis.status(flow)


DOCKER_FLOW = """\
flow: boxed
sandbox: {backend: docker, memory: 1g}
phases:
  - {id: make, kind: script, script: make.py, outputs: [t.txt]}
"""


def test_an_unknown_sandbox_option_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """As `praxis check` refuses flow.yaml's: the caller's option is checked by the flow's
    backend, which names the nearest option it takes; no phase runs, the run is as it was."""
    flow = tmp_path / "boxed"
    flow.mkdir()
    (flow / "flow.yaml").write_text(DOCKER_FLOW)
    (flow / "make.py").write_text("open('t.txt', 'w').write('made')\n")
    run = praxis.begin(flow)
    record = run.paths.state.read_bytes(), run.paths.events.read_bytes()
    message = r"^sandbox: unknown option 'memroy' for the docker backend; did you mean 'memory'\?$"
    with pytest.raises(SandboxInvalid, match=message) as info:
        praxis.advance(flow, sandbox={"memroy": "2g"})
    assert isinstance(info.value, UsageError) and info.value.exit_code == 2
    assert praxis.SandboxInvalid is SandboxInvalid  # a public error, beside the others
    with pytest.raises(SandboxInvalid, match=r"^sandbox\.address: a flow names no cluster address"):
        praxis.advance(flow, sandbox={"address": "auto"})  # the profile's clusters: DESIGN §13
    with pytest.raises(SandboxInvalid, match=r"^sandbox\.memory: must be between 64m and "):
        praxis.advance(flow, sandbox={"memory": "1k"})
    with pytest.raises(SandboxInvalid, match="timeout cannot be overridden"):
        praxis.advance(flow, sandbox={"timeout": 5})
    assert (run.paths.state.read_bytes(), run.paths.events.read_bytes()) == record
    assert not (run.paths.output / "t.txt").exists()
