"""Gate decisions: bound to what was seen, attributed, delegatable, checked (fake sandbox).
Hand edits and outputs changed outside praxis: test_reconcile.py."""

from __future__ import annotations

import json
import re

import pytest

from praxis import cli, cli_parser
from praxis.flows.definition.digest import sha256_of
from praxis.flows.engine import runner
from praxis.flows.report.status import status_of
from praxis.flows.store.event_log import EventLog
from praxis.flows.store.handle import RunHandle

from ..identity import PERSON, agent_token, grant
from .gates import two_gates
from .helpers import Fakes, write_flow

HEX64 = re.compile(r"\b[0-9a-f]{64}\b")

# their flows ask for the fake or local backend: as with --allow-local
pytestmark = pytest.mark.usefixtures("allow_local")


def at_first_gate(tmp_path):  # type: ignore[no-untyped-def]
    flow = two_gates(tmp_path)
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert (state.waiting, state.gate) == ("gate", "pick")
    return flow, run, state


def events(run: RunHandle) -> list:  # type: ignore[type-arg]
    return EventLog(run.paths.events).read()


def verb_on(argv: list[str]) -> list[str]:
    """A route's command from its verb on (without the program praxis was invoked by)."""
    at = next(i for i, word in enumerate(argv) if word in cli_parser.COMMANDS)
    return argv[at:]


def main(capsys, *argv: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_bare_approve_is_refused_with_the_bound_command(tmp_path, capsys) -> None:
    flow, run, state = at_first_gate(tmp_path)
    with pytest.raises(runner.Unbound) as caught:
        runner.approve(flow, run.id)
    assert f"--gate pick --attempt 1 --expect-revision {state.revision}" in caught.value.command
    code, _, err = main(capsys, "approve", str(flow))
    assert code == 2
    assert f"praxis approve {flow} --run {run.id} --gate pick --attempt 1 --expect-revision" in err
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
    got = runner.read(flow, "output/picks.csv", run.id, actor="agent")
    runner.approve(flow, run.id, gate="pick", actor="agent", receipts=[got.receipt])
    runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    with pytest.raises(runner.Refused, match="not delegatable: a person decides it"):
        runner.approve(flow, run.id, gate="total", actor="agent")
    with pytest.raises(runner.Refused, match="not delegatable"):
        runner.reject(flow, "total", "no", run.id, gate="total", actor="agent")
    runner.approve(flow, run.id, gate="total")
    decided = [(e.phase, e.actor) for e in events(run) if e.kind == "gate_approved"]
    assert decided == [("pick", "agent"), ("total", "person")]
    granted = [e for e in events(run) if e.kind == "managed_mode"]
    assert [(g.granted, g.actor) for g in granted] == [(True, "person")]


def test_a_grant_on_a_run_is_recorded_in_its_events_and_the_audit(tmp_path, capsys) -> None:
    flow = two_gates(tmp_path)
    code, _, err = main(capsys, "run", str(flow), "--quiet")
    assert code == 0, err
    run = RunHandle.open(runner.load_flow(flow), None)
    agent_token("ci-bot")
    code, out, err = main(capsys, "manage", str(flow), "--run", run.id, "--agent", "ci-bot")
    assert code == 0 and "agent:ci-bot may decide the delegatable Gates of run" in out, err
    granted = [e for e in events(run) if e.kind == "managed_mode"]
    assert [(g.granted, g.actor) for g in granted] == [(True, PERSON)]
    code, out, _ = main(capsys, "audit", str(flow))
    assert code == 0 and f"{PERSON}  granted manage  run {run.id}" in out


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
    assert "route: read (gate_delegated)" in out and "an agent may take it" in out
    assert "Gate after pick: delegatable, managed run" in out
    assert f" read {flow} {picks} --run {run.id} --as agent" in out
    assert "receipt: not ok, 1/3 phases done, managed" in out
    assert "picks.csv edited by hand: 1 row(s) changed, 0 added, 0 removed" in out
    data = json.loads(main(capsys, "status", str(flow), "--json")[1])
    assert data["route"]["read"] == [{"path": str(picks)}]  # no digest
    assert not HEX64.search(json.dumps(data["route"]))


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
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    runner.approve(flow, run.id, gate="only", expect_revision=state.revision)
    assert (
        runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes())).status
        == "done"
    )


def test_an_agent_decides_on_receipts_of_what_it_read_never_on_digests(tmp_path, capsys) -> None:
    flow, run, state = at_first_gate(tmp_path)
    grant(flow, run.id)  # the person lets their own --as agent decide
    picks = run.paths.out("picks.csv")
    sha = sha256_of(picks)
    shown = str(picks)  # as the current folder names it
    bound = ("approve", str(flow), "--run", run.id, "--gate", "pick", "--as", "agent")
    code, _, err = main(capsys, *bound)
    assert code == 4 and "agent:tester passed no receipt of output/picks.csv" in err
    assert f"praxis read {flow} {shown} --run {run.id} --as agent" in err
    code, _, err = main(capsys, *bound, "--receipt", "r0123")
    assert code == 4 and "receipt r0123 is unknown" in err
    with pytest.raises(SystemExit) as usage:  # a digest acknowledges nothing any more
        main(capsys, *bound, "--ack", sha)
    assert usage.value.code == 2 and "unrecognized arguments: --ack" in capsys.readouterr().err
    refused = [e for e in events(run) if e.kind == "decision_refused"]
    assert len(refused) == 2 and all(e.actor == "agent:tester" for e in refused)
    assert RunHandle.open(run.flow, run.id).state.gate == "pick"  # nothing was decided
    route = status_of(RunHandle.open(run.flow, run.id)).route
    assert route["read"] == [{"path": shown}]  # as the cwd names it, and no digest
    assert route["step"] == "read" and not HEX64.search(json.dumps(route))
    code, out, err = main(capsys, *verb_on(route["commands"][0]))  # praxis read, as routed
    assert code == 0, err
    assert out == picks.read_text() and err.startswith("receipt: r")
    receipt = err.split()[1]
    read = [e for e in events(run) if e.kind == "file_read"]
    assert [(e.receipt, e.path, e.sha256, e.reader, e.name) for e in read] == [
        (receipt, "output/picks.csv", sha, "agent:tester", "picks.csv")
    ]
    route = status_of(RunHandle.open(run.flow, run.id)).route
    assert route["step"] == "decide" and route["commands"][0][-2:] == ["--receipt", receipt]
    assert not HEX64.search(json.dumps(route))
    code, _, err = main(capsys, *verb_on(route["commands"][0]))
    assert code == 0, err
    approved = [e for e in events(run) if e.kind == "gate_approved"]
    assert [(e.actor, e.acked) for e in approved] == [
        ("agent:tester", [{"name": "picks.csv", "sha256": sha, "receipt": receipt}])
    ]
    code, out, _ = main(capsys, "read", str(flow), "picks.csv", "--run", run.id, "--json")
    got = json.loads(out)  # an output named alone; as JSON, with its receipt
    assert code == 0 and got["text"] == picks.read_text() and got["receipt"] != receipt
    code, _, err = main(capsys, "read", str(flow), "nothing.csv", "--run", run.id)
    assert code == 4 and "output/nothing.csv cannot be read" in err and "Traceback" not in err


def test_a_receipt_of_content_since_changed_or_of_another_reader_does_not_count(
    tmp_path, capsys
) -> None:
    flow, run, state = at_first_gate(tmp_path)
    runner.manage(flow, run.id)
    picks = run.paths.out("picks.csv")
    mine = runner.read(flow, "output/picks.csv", run.id, actor="agent").receipt
    persons = runner.read(flow, "output/picks.csv", run.id, actor="person").receipt
    with pytest.raises(runner.Refused, match=f"receipt {persons} is person's, not agent's"):
        runner.approve(flow, run.id, gate="pick", actor="agent", receipts=[persons])
    picks.write_bytes(picks.read_bytes().replace(b"1,10,keep", b"1,10,drop"))  # by hand
    with pytest.raises(runner.Refused, match=f"changed since receipt {mine} was given"):
        runner.approve(flow, run.id, gate="pick", actor="agent", receipts=[mine])
    route = status_of(RunHandle.open(run.flow, run.id)).route
    assert route["step"] == "read"  # read it again
    again = runner.read(flow, "output/picks.csv", run.id, actor="agent").receipt
    revision = RunHandle.open(run.flow, run.id).state.revision
    state = runner.approve(
        flow, run.id, gate="pick", attempt=1, expect_revision=revision, actor="agent",
        receipts=[again],
    )  # fmt: skip
    assert state.waiting is None


def test_a_person_may_omit_receipts_and_is_held_to_those_given(tmp_path, capsys) -> None:
    flow, run, state = at_first_gate(tmp_path)
    bound = ("approve", str(flow), "--run", run.id, "--gate", "pick")
    assert main(capsys, *bound, "--receipt", "r0")[0] == 4
    code, _, err = main(capsys, *bound)
    assert code == 0, err
    approved = [e for e in events(run) if e.kind == "gate_approved"]
    assert [(e.actor, e.acked) for e in approved] == [(PERSON, [])]


def reopened(tmp_path, capsys):  # type: ignore[no-untyped-def]
    """At the Gate after pick, attempt 2: the reviewer rejected attempt 1 and reopened it."""
    flow, run, state = at_first_gate(tmp_path)
    code, _, err = main(
        capsys, "reject", str(flow), "--run", run.id, "--gate", "pick", "--attempt", "1",
        "--reopen", "pick", "--note", "again", "--expect-revision", str(state.revision),
    )  # fmt: skip
    assert code == 0, err
    now = RunHandle.open(run.flow, run.id).state
    assert (now.waiting, now.gate, now.phase("pick").attempt) == ("gate", "pick", 2)
    return flow, run, state, now


def test_a_late_approve_after_a_reopen_never_lands_on_the_new_attempt(tmp_path, capsys) -> None:
    flow, run, first, now = reopened(tmp_path, capsys)
    bound = ("approve", str(flow), "--run", run.id, "--gate", "pick")
    code, _, err = main(capsys, *bound)  # meant for attempt 1, no revision
    assert code == 4 and "--gate pick alone is ambiguous" in err
    assert f"--attempt 2 --expect-revision {now.revision}" in err
    code, _, err = main(capsys, *bound, "--attempt", "1")
    assert code == 4
    assert "this approve is for attempt 1 of the Gate after pick, which is now at attempt 2" in err
    code, _, err = main(capsys, *bound, "--expect-revision", str(first.revision))
    assert code == 4 and f"not {first.revision}" in err
    after = RunHandle.open(run.flow, run.id).state
    assert (after.waiting, after.gate, after.revision) == ("gate", "pick", now.revision)
    assert [e.kind for e in events(run)].count("gate_approved") == 0  # nothing was approved
    route = status_of(RunHandle.open(run.flow, run.id)).route
    assert route["commands"][0][-4:] == ["--attempt", "2", "--expect-revision", str(now.revision)]
    code, _, err = main(capsys, *verb_on(route["commands"][0]))  # the route's own approve
    assert code == 0, err


def test_a_gate_never_reopened_is_decided_by_gate_alone_even_after_a_rerun(
    tmp_path, capsys
) -> None:
    flow, run, state = at_first_gate(tmp_path)
    code, _, err = main(capsys, "approve", str(flow), "--gate", "pick")  # the README's
    assert code == 0, err
    assert main(capsys, "approve", str(flow), "--gate", "total")[0] == 0
    assert RunHandle.open(run.flow, run.id).state.status == "done"
    # the README's first flow again: rerun --from, advance, approve --gate (no reopen)
    assert main(capsys, "rerun", str(flow), "--from", "pick")[0] == 0
    again = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert (again.gate, again.phase("pick").attempt) == ("pick", 2)
    code, _, err = main(capsys, "approve", str(flow), "--gate", "pick")
    assert code == 0, err


def test_advance_bound_to_a_stale_revision_is_refused_and_runs_nothing(tmp_path, capsys) -> None:
    flow = two_gates(tmp_path)
    run = runner.begin(flow)
    seen = run.state.revision
    runner.manage(flow, run.id)  # the run moves on after the agent looked
    code, _, err = main(capsys, "advance", str(flow), "--run", run.id, "--expect-revision",
                        str(seen))  # fmt: skip
    assert code == 4 and f"not {seen}: it changed since you looked" in err
    state = RunHandle.open(run.flow, run.id).state
    assert state.phases[0].status == "pending" and state.revision == seen + 1
    with pytest.raises(runner.Refused):
        runner.advance(
            flow, run.id, expect_revision=seen, options=runner.RunOptions(make_sandbox=Fakes())
        )
    done = runner.advance(
        flow, run.id, expect_revision=seen + 1, options=runner.RunOptions(make_sandbox=Fakes())
    )
    assert (done.waiting, done.gate) == ("gate", "pick")


def test_a_gate_whose_script_changed_routes_to_the_rerun_and_refuses_approval(
    tmp_path, capsys
) -> None:
    flow, run, state = at_first_gate(tmp_path)
    runner.manage(flow, run.id)
    script = flow / "scripts" / "pick.py"
    script.write_text(script.read_text().replace('"drop"', '"DROP"'))
    fresh = RunHandle.open(run.flow, run.id)
    route = status_of(fresh).route
    revision = fresh.state.revision
    assert (route["step"], route["reason"]) == ("rerun", "gate_changed")
    assert verb_on(route["commands"][0]) == [
        "rerun",
        str(flow),
        "--run",
        run.id,
        "--from",
        "pick",
        "--expect-revision",
        str(revision),
    ]
    assert not any(c[1] in ("approve", "reject") for c in route["commands"])
    code, out, _ = main(capsys, "status", str(flow))
    nexts = [line for line in out.splitlines() if line.startswith("next: ")]
    assert f" rerun {flow} --run {run.id} --from pick" in nexts[0]
    assert not any(" approve " in line or " reject " in line for line in nexts)
    code, _, err = main(capsys, "approve", str(flow), "--gate", "pick")
    assert code == 4 and "pick changed in flow.yaml or its files since it ran" in err
    assert f"praxis rerun {flow} --run {run.id} --from pick" in err
    after = RunHandle.open(run.flow, run.id).state
    assert (after.waiting, after.revision) == ("gate", revision)  # nothing changed


def test_a_renamed_phase_at_a_gate_is_never_approved(tmp_path, capsys) -> None:
    flow, run, state = at_first_gate(tmp_path)
    yaml = flow / "flow.yaml"
    yaml.write_text(yaml.read_text().replace("id: report", "id: summary"))
    code, out, _ = main(capsys, "status", str(flow))
    nexts = [line for line in out.splitlines() if line.startswith("next: ")]
    assert f" cancel {flow} --run {run.id}" in nexts[0]
    assert not any(" approve " in line or " reject " in line for line in nexts)
    code, _, err = main(capsys, "approve", str(flow), "--gate", "pick")
    assert code == 4 and "flow.yaml changed since run" in err
    assert [e.kind for e in events(run)].count("gate_approved") == 0
