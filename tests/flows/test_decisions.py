"""Gate decisions: bound to what was seen, attributed, delegatable, checked (fake sandbox).
Hand edits and outputs changed outside praxis: test_reconcile.py."""

from __future__ import annotations

import json

import pytest

from praxis import cli
from praxis.flows.definition.digest import sha256_of
from praxis.flows.engine import runner
from praxis.flows.model.events import EventLog
from praxis.flows.report.status import status_of
from praxis.flows.store.handle import RunHandle

from .gates import two_gates
from .helpers import Fakes, write_flow

# their flows ask for the fake or local backend: as with --allow-local
pytestmark = pytest.mark.usefixtures("allow_local")


def at_first_gate(tmp_path):  # type: ignore[no-untyped-def]
    flow = two_gates(tmp_path)
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, make_sandbox=Fakes())
    assert (state.waiting, state.gate) == ("gate", "pick")
    return flow, run, state


def events(run: RunHandle) -> list:  # type: ignore[type-arg]
    return EventLog(run.paths.events).read()


def main(capsys, *argv: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_bare_approve_is_refused_with_the_bound_command(tmp_path, capsys) -> None:
    flow, run, state = at_first_gate(tmp_path)
    with pytest.raises(runner.Unbound) as caught:
        runner.approve(flow, run.id)
    assert f"--gate pick --expect-revision {state.revision}" in caught.value.command
    code, _, err = main(capsys, "approve", str(flow))
    assert code == 2
    assert f"praxis approve {flow} --run {run.id} --gate pick --expect-revision" in err
    code, _, err = main(capsys, "reject", str(flow), "--reopen", "pick", "--note", "x")
    assert code == 2 and "--reopen pick" in err
    assert RunHandle.open(run.flow, run.id).state.revision == state.revision  # nothing moved


def test_a_repeated_approve_never_passes_the_next_gate(tmp_path, capsys) -> None:
    flow, run, state = at_first_gate(tmp_path)
    bound = ("approve", str(flow), "--run", run.id, "--gate", "pick")
    code, _, err = main(capsys, *bound)
    assert code == 0, err
    now = RunHandle.open(run.flow, run.id).state
    assert (now.waiting, now.gate) == ("gate", "total")
    code, _, err = main(capsys, *bound)  # the same command again
    assert code == 4 and "waits at the Gate after total, not pick" in err
    again = ("approve", str(flow), "--run", run.id, "--expect-revision", str(state.revision))
    assert main(capsys, *again)[0] == 4  # bound to the first Gate's revision: stale
    after = RunHandle.open(run.flow, run.id).state
    assert (after.gate, after.revision) == ("total", now.revision)
    assert [e.phase for e in events(run) if e.kind == "gate_approved"] == ["pick"]


@pytest.mark.parametrize(
    "edit, check",
    [
        (lambda b: b.replace(b"action", b"decision"), "same_columns"),  # a renamed column
        (lambda b: b + b'5,"7,keep\n', "parse"),  # an unterminated quote
        (lambda b: b.replace(b"1,10,keep", b"1,10,maybe"), "values"),
        (lambda b: b.replace(b"3,30,keep", b"1,30,keep"), "unique"),
    ],
)
def test_a_broken_edit_at_the_gate_is_never_approved(tmp_path, capsys, edit, check) -> None:
    flow, run, state = at_first_gate(tmp_path)
    picks = run.paths.out("picks.csv")
    picks.write_bytes(edit(picks.read_bytes()))
    code, _, err = main(capsys, "approve", str(flow), "--gate", "pick")
    assert code == 4 and f"check {check} failed" in err
    status = status_of(RunHandle.open(run.flow, run.id))
    assert status.gate == "pick" and status.checks[0]["check"] == check
    assert status.route["reason"] == "gate_checks_fail"
    if check == "values":
        assert status.checks[0]["column"] == "action" and status.checks[0]["rows"] == [1]
    assert "decision_refused" in [e.kind for e in events(run)]
    original = run.paths.objects / state.phase("pick").hashes["picks.csv"]
    picks.write_bytes(original.read_bytes())
    assert main(capsys, "approve", str(flow), "--gate", "pick")[0] == 0  # mended: approved


def test_who_may_decide(tmp_path, monkeypatch) -> None:
    flow, run, state = at_first_gate(tmp_path)
    with pytest.raises(runner.Refused, match="not in managed mode"):
        runner.approve(flow, run.id, gate="pick", actor="agent")
    with pytest.raises(runner.Refused, match="only a person"):
        runner.manage(flow, run.id, actor="agent")
    monkeypatch.setenv("PRAXIS_ACTOR", "agent")
    with pytest.raises(runner.Refused, match="only a person"):
        runner.manage(flow, run.id)
    monkeypatch.delenv("PRAXIS_ACTOR")
    assert runner.manage(flow, run.id).managed
    picks = run.paths.out("picks.csv")
    good = picks.read_bytes()
    picks.write_bytes(good.replace(b"keep", b"KEEP"))
    with pytest.raises(runner.Refused, match="check"):  # never while a check fails
        runner.reject(flow, "pick", "again", run.id, gate="pick", actor="agent")
    picks.write_bytes(good)
    runner.approve(flow, run.id, gate="pick", actor="agent", acks=[sha256_of(picks)])
    runner.advance(flow, run.id, make_sandbox=Fakes())
    with pytest.raises(runner.Refused, match="not delegatable: a person decides it"):
        runner.approve(flow, run.id, gate="total", actor="agent")
    with pytest.raises(runner.Refused, match="not delegatable"):
        runner.reject(flow, "total", "no", run.id, gate="total", actor="agent")
    runner.approve(flow, run.id, gate="total")
    decided = [(e.phase, e.actor) for e in events(run) if e.kind == "gate_approved"]
    assert decided == [("pick", "agent"), ("total", "person")]
    granted = [e for e in events(run) if e.kind == "managed_mode"]
    assert [(g.granted, g.actor) for g in granted] == [(True, "person")]


def test_run_managed_is_recorded_before_the_first_phase(tmp_path, capsys) -> None:
    flow = two_gates(tmp_path)
    code, _, err = main(capsys, "run", str(flow), "--managed", "--quiet")
    assert code == 0, err
    run = RunHandle.open(runner.load_flow(flow), None)
    kinds = [e.kind for e in events(run)]
    assert run.state.managed and kinds.index("managed_mode") < kinds.index("phase_started")


def test_an_edit_through_the_api_keeps_a_cell_diff(tmp_path) -> None:
    flow, run, state = at_first_gate(tmp_path)
    data = run.paths.out("picks.csv").read_bytes().replace(b"4,-5,drop\n", b"")
    runner.edit(flow, "picks.csv", data + b"9,90,keep\n", run.id, expect_revision=state.revision)
    entry = json.loads((run.root / "edits" / "pick" / "1.json").read_text())[-1]
    assert (entry["by"], entry["actor"]) == ("reviewer", "person")
    assert (entry["diff"]["changed"], entry["diff"]["added"], entry["diff"]["removed"]) == (1, 0, 0)
    assert entry["diff"]["cells"][0] == {"row": 4, "column": "id", "old": "4", "new": "9"}
    assert entry["summary"] == "1 row(s) changed, 0 added, 0 removed"


def test_status_says_the_route_and_the_receipt_in_words(tmp_path, capsys) -> None:
    flow, run, state = at_first_gate(tmp_path)
    runner.manage(flow, run.id)
    picks = run.paths.out("picks.csv")
    picks.write_bytes(picks.read_bytes().replace(b"1,10,keep", b"1,10,drop"))
    code, out, err = main(capsys, "status", str(flow))
    assert code == 0, err
    assert "route: decide (gate_delegated)" in out and "an agent may take it" in out
    assert "Gate after pick: delegatable, managed run" in out
    assert f"do: praxis approve {flow} --run {run.id} --gate pick --expect-revision" in out
    assert "receipt: not ok, 1/3 phases done, managed" in out
    assert "picks.csv edited by hand: 1 row(s) changed, 0 added, 0 removed" in out
    data = json.loads(main(capsys, "status", str(flow), "--json")[1])
    ledger = data["receipt"]["ledger"][0]
    assert data["route"]["read"][0]["sha256"] == ledger["outputs"][0]["sha256"]


def test_approving_a_gate_after_the_last_phase_ends_the_run(tmp_path) -> None:
    flow = write_flow(
        tmp_path / "last",
        """
        flow: last
        sandbox: {backend: fake, timeout: 30}
        phases:
          - id: only
            kind: script
            script: s.py
            outputs: [a.txt]
            review: required
        """,
        {"s.py": "open('a.txt', 'w').write('x')\n"},
    )
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, make_sandbox=Fakes())
    runner.approve(flow, run.id, gate="only", expect_revision=state.revision)
    assert runner.advance(flow, run.id, make_sandbox=Fakes()).status == "done"


def test_an_agent_acknowledges_each_file_to_read_by_its_current_sha256(tmp_path, capsys) -> None:
    flow, run, state = at_first_gate(tmp_path)
    runner.manage(flow, run.id)
    picks = run.paths.out("picks.csv")
    sha = sha256_of(picks)
    bound = ("approve", str(flow), "--run", run.id, "--gate", "pick", "--as", "agent")
    code, _, err = main(capsys, *bound)
    assert code == 4 and f"agent did not acknowledge runs/{run.id}/output/picks.csv" in err
    code, _, err = main(capsys, *bound, "--ack", "0" * 64)
    assert code == 4 and "picks.csv is not the file acknowledged" in err
    code, _, err = main(capsys, *bound, "--ack", sha, "--ack", "1" * 64)
    assert code == 4 and "matches no file to read" in err
    refused = [e for e in events(run) if e.kind == "decision_refused"]
    assert len(refused) == 3 and all(e.actor == "agent" for e in refused)
    assert RunHandle.open(run.flow, run.id).state.gate == "pick"  # nothing was decided
    route = status_of(RunHandle.open(run.flow, run.id)).route
    assert route["read"] == [{"path": str(picks), "sha256": sha}]  # as the cwd names it
    assert route["commands"][0][-2:] == ["--ack", sha]
    code, _, err = main(capsys, *bound, "--ack", sha)
    assert code == 0, err
    approved = [e for e in events(run) if e.kind == "gate_approved"]
    assert [(e.actor, e.acked) for e in approved] == [
        ("agent", [{"name": "picks.csv", "sha256": sha}])
    ]


def test_a_person_may_omit_acks_and_is_held_to_those_given(tmp_path, capsys) -> None:
    flow, run, state = at_first_gate(tmp_path)
    bound = ("approve", str(flow), "--run", run.id, "--gate", "pick")
    assert main(capsys, *bound, "--ack", "0" * 64)[0] == 4
    code, _, err = main(capsys, *bound)
    assert code == 0, err
    approved = [e for e in events(run) if e.kind == "gate_approved"]
    assert [(e.actor, e.acked) for e in approved] == [("person", [])]
