"""status_of: what a person needs to know about a run in each state, and the exact next
command (fake sandbox); it only reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from praxis.argv import flow_text
from praxis.command_line import typed
from praxis.flows.engine import runner
from praxis.flows.model.transitions import Start
from praxis.flows.report.status import Status, status_of
from praxis.flows.store.handle import RunHandle

from .helpers import Fakes, three_phase_flow


def status(run: RunHandle) -> Status:
    """The status of ``run`` as a new command would read it."""
    return status_of(RunHandle.open(run.flow, run.id))


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The flow, with the current folder its parent (commands name it as ``demo``)."""
    monkeypatch.chdir(tmp_path)
    return three_phase_flow(tmp_path)


def test_a_new_run_is_paused_before_its_first_phase(here: Path) -> None:
    run = runner.begin(here)
    before = run.paths.state.read_bytes()
    st = status(run)
    assert (st.status, st.message, st.next) == (
        "paused",
        "paused before load",
        [f"praxis advance demo --run {run.id} --expect-revision {run.state.revision}"],
    )
    assert [row["id"] for row in st.phases] == ["load", "review", "total"]
    assert st.review == [] and st.receipt["done"] == 0
    assert run.paths.state.read_bytes() == before  # status only reads


def test_at_a_gate_it_names_the_files_to_review_and_the_bound_commands(here: Path) -> None:
    run = runner.begin(here)
    state = runner.advance(here, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    st = status(run)
    assert st.message == "waiting at the Gate after review: review, then approve or reject"
    assert st.review == [f"demo/runs/{run.id}/output/flags.csv"]
    bound = f"--run {run.id} --gate review --attempt 1"
    assert st.next == [  # the route's own commands, a person's (no receipts asked)
        f"praxis approve demo {bound} --expect-revision {state.revision}",
        f"praxis reject demo {bound} --reopen review --note '...' "
        f"--expect-revision {state.revision}",
    ]
    verbs = [c[c.index("approve" if "approve" in c else "reject") :] for c in st.route["commands"]]
    assert verbs == [c.replace("'", "").split()[1:] for c in st.next]


def test_a_failed_run_says_why_and_offers_the_rerun(tmp_path: Path) -> None:
    root = three_phase_flow(tmp_path)
    (root / "scripts" / "load.py").write_text("raise ValueError('bad input')\n")
    run = runner.begin(root)
    state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    st = status(run)
    assert st.status == "failed" and st.message.startswith("failed: load: ")
    assert "ValueError: bad input" in st.message
    assert st.next == [
        f"praxis rerun {flow_text(runner.load_flow(root))} --run {run.id} --from load "
        f"--expect-revision {state.revision}"
    ]


def test_a_done_run_offers_its_log(here: Path) -> None:
    run = runner.begin(here)
    state = runner.advance(here, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    runner.approve(here, run.id, expect_revision=state.revision)
    runner.advance(here, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    st = status(run)
    assert (st.message, st.next) == ("every phase done", [f"praxis log demo --run {run.id}"])
    assert st.receipt["ok"] and st.changed == []


def test_a_phase_whose_code_changed_since_it_ran_is_named_with_the_rerun(here: Path) -> None:
    run = runner.begin(here)
    state = runner.advance(here, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    (here / "scripts" / "load.py").write_text("print('changed')\n")
    st = status(run)
    assert st.changed == ["load"]
    assert st.message.endswith("; changed since they ran: load (re-run from load)")
    # at the Gate: the re-run, never an approval of what the old script made
    assert st.next == [
        f"praxis rerun demo --run {run.id} --from load --expect-revision {state.revision}"
    ]


def test_a_phase_left_running_by_a_dead_process_is_named(here: Path) -> None:
    run = runner.begin(here)
    run.change(Start(phase="load", pid=999_999))
    st = status(run)
    assert st.message == "phase load was stopped before it finished: no process is running it"
    assert st.phases[0]["note"] == "stopped before it finished"
    assert st.next == [f"praxis advance demo --run {run.id} --expect-revision {run.state.revision}"]


def test_a_flow_path_with_a_space_is_quoted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = three_phase_flow(tmp_path / "my flows")
    monkeypatch.chdir(tmp_path)
    assert typed("status", flow_text(runner.load_flow(root))) == "praxis status 'my flows/demo'"
    monkeypatch.chdir(root)
    assert typed("status", flow_text(runner.load_flow(root))) == "praxis status ."


def test_the_receipt_shows_a_decision_however_its_kind_is_spelled_in_the_log(here: Path) -> None:
    """A log naming no decision or edit kind adds nothing to the receipt and is not parsed; a
    kind spelled with a JSON escape is still found."""
    run = runner.begin(here)
    state = runner.advance(here, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    runner.approve(here, run.id, expect_revision=state.revision)
    log = run.paths.events.read_bytes()
    assert b'"gate_approved"' in log
    decided = status(run).receipt["ledger"][1]["decisions"]
    assert [(d["decision"], d["actor"]) for d in decided] == [("approved", "person")]
    run.paths.events.write_bytes(log.replace(b'"gate_approved"', b'"gate\\u005fapproved"'))
    assert status(run).receipt["ledger"][1]["decisions"] == decided
    run.paths.events.write_bytes(log.replace(b'"gate_approved"', b'"gate_noted"'))
    assert status(run).receipt["ledger"][1]["decisions"] == []


def test_a_corrupt_log_leaves_the_receipt_without_decisions(here: Path) -> None:
    run = runner.begin(here)
    state = runner.advance(here, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    runner.approve(here, run.id, expect_revision=state.revision)
    run.paths.events.write_bytes(b"not json\n" + run.paths.events.read_bytes())
    st = status(run)
    assert all(p["decisions"] == [] for p in st.receipt["ledger"])
    assert st.receipt["done"] == 2  # the phases come from run.json
