"""Route selection from facts alone: every run state, every kind of Gate, with and without
managed mode, repeated failures, changed parameters. No run folder, no kernel. (Every
reachable state's commands against the state tables: test_route_states.py.)"""

from __future__ import annotations

import dataclasses

import pytest

from praxis.flows.report.route import REASONS, Facts, invalid, route, without_run

BASE = Facts(flow="flows/f", run="r1", status="paused", revision=7, cursor_phase="b")
GATE = dataclasses.replace(BASE, gate="a", attempt=1, read=(("runs/r1/output/a.csv", "ab" * 32),))
BOUND = ["--gate", "a", "--attempt", "1"]
APPROVE = ["praxis", "approve", "flows/f", "--run", "r1", *BOUND, "--expect-revision", "7"]
REJECT = [
    *("praxis", "reject", "flows/f", "--run", "r1", *BOUND),
    *("--reopen", "a", "--note", "...", "--expect-revision", "7"),
]
ADVANCE = ["praxis", "advance", "flows/f", "--run", "r1", "--expect-revision", "7"]
READ_A = ["praxis", "read", "flows/f", "runs/r1/output/a.csv", "--run", "r1", "--as", "agent"]
MANAGED = dataclasses.replace(GATE, delegatable=True, managed=True)
READ = dataclasses.replace(MANAGED, receipts=(("runs/r1/output/a.csv", "r0a1"),))
FOLLOW = ["praxis", "log", "flows/f", "--run", "r1", "--follow"]
STATUS = ["praxis", "status", "flows/f", "--run", "r1"]
DECISIONS = ("approve", "reject", "edit", "rerun", "cancel", "manage", "accept", "delete")


def rerun(phase: str) -> list[str]:
    return ["praxis", "rerun", "flows/f", "--run", "r1", "--from", phase, "--expect-revision", "7"]


CASES = [
    # (name, facts, step, reason, who, first command)
    ("paused", BASE, "advance", "ready", "anyone", ADVANCE),
    ("running, held", dataclasses.replace(BASE, status="running", left_running=True, held=True),
     "wait", "running", "anyone", FOLLOW),
    ("a retry waits, held", dataclasses.replace(BASE, status="running", held=True,
                                                retrying=(2, 3, 10)),
     "wait", "retrying", "anyone", FOLLOW),
    ("running, nobody holds it", dataclasses.replace(BASE, status="running", left_running=True),
     "advance", "stopped", "anyone", ADVANCE),
    ("failed", dataclasses.replace(BASE, status="failed"), "rerun", "failed", "anyone", rerun("b")),
    ("cancelled", dataclasses.replace(BASE, status="cancelled"),
     "rerun", "cancelled", "person", rerun("b")),
    ("done", dataclasses.replace(BASE, status="done", cursor_phase=None),
     "none", "done", "anyone", None),
    ("definition changed", dataclasses.replace(BASE, status="done", changed_phases=("b", "c")),
     "rerun", "definition_changed", "anyone", rerun("b")),
    ("output changed outside", dataclasses.replace(BASE, changed_outputs=(("a.csv", "a"),)),
     "accept", "output_changed", "person", rerun("a")),
    ("gate, not delegatable", GATE, "decide", "gate_needs_person", "person", APPROVE),
    ("gate, not delegatable, managed", dataclasses.replace(GATE, managed=True),
     "decide", "gate_needs_person", "person", APPROVE),
    ("gate, delegatable, not managed", dataclasses.replace(GATE, delegatable=True),
     "decide", "gate_not_managed", "person", APPROVE),
    ("gate, delegatable, managed, not read", MANAGED, "read", "gate_delegated", "agent", READ_A),
    ("gate, delegatable, managed, read", READ,
     "decide", "gate_delegated", "agent", [*APPROVE, "--as", "agent", "--receipt", "r0a1"]),
    ("gate, a caller who may not decide it",
     dataclasses.replace(MANAGED, caller="agent:bot", refused=DECISIONS),
     "wait", "waiting_for_person", "person", STATUS),
    ("gate, a phase up to it changed", dataclasses.replace(READ, changed_phases=("a",)),
     "rerun", "gate_changed", "anyone", rerun("a")),
    ("gate, delegatable, managed, checks fail",
     dataclasses.replace(GATE, delegatable=True, managed=True, checks_failing=("bad",)),
     "fix", "gate_checks_fail", "person", REJECT),
    ("gate, not delegatable, checks fail", dataclasses.replace(GATE, checks_failing=("bad",)),
     "fix", "gate_checks_fail", "person", REJECT),
    ("gate, held by a process", dataclasses.replace(GATE, held=True),
     "decide", "gate_needs_person", "person", APPROVE),
    ("failed twice the same way", dataclasses.replace(BASE, status="failed", repeats=2),
     "fix", "failed_repeatedly", "person", rerun("b")),
    ("params changed, paused", dataclasses.replace(BASE, params_changed=("a",)),
     "advance", "params_changed", "anyone", ADVANCE),
    ("flow.yaml's phases changed", dataclasses.replace(BASE, flow_changed=True),
     "fix", "flow_changed", "person", ["praxis", "cancel", "flows/f", "--run", "r1",
                                       "--expect-revision", "7"]),
    ("running between phases, nobody holds it", dataclasses.replace(BASE, status="running"),
     "advance", "stopped", "anyone", ADVANCE),
    ("done, an approved output not published yet",
     dataclasses.replace(BASE, status="done", publish_pending=("s.csv -> w: t (replace)",)),
     "publish", "publish_pending", "anyone", ["praxis", "publish", "flows/f", "--run", "r1"]),
    ("done, not published, the last Gate approved by an agent",
     dataclasses.replace(BASE, status="done", publish_pending=("s.csv -> w: t (replace)",),
                         publish_blocked="approved by an agent"),
     "none", "publish_needs_person", "person", None),
]  # fmt: skip


@pytest.mark.parametrize(
    "facts, step, reason, who, first", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_route_from_facts(facts: Facts, step: str, reason: str, who: str, first) -> None:
    r = route(facts)
    assert (r.step, r.reason, r.who) == (step, reason, who)
    assert r.why.endswith(REASONS[reason])  # a waiting retry says when first
    assert (r.commands[0] if r.commands else None) == first
    assert route(facts) == r  # the same facts, the same route


def test_a_waiting_retry_says_when_and_which() -> None:
    facts = dataclasses.replace(BASE, status="running", held=True, retrying=(2, 3, 10))
    assert route(facts).why.startswith("retrying in 10 s (2 of 3)")


def test_every_reason_is_reachable() -> None:
    outside = {without_run("f", ("praxis",)).reason, invalid("f", [], ("praxis",)).reason}
    assert {route(c[1]).reason for c in CASES} | outside == set(REASONS)


def test_without_a_run_the_route_runs_the_flow_and_a_broken_flow_yaml_is_fixed() -> None:
    none = without_run("flows/f", ("praxis",))
    assert (none.step, none.reason, none.who) == ("run", "no_run", "anyone")
    assert none.commands == [["praxis", "run", "flows/f"]]
    broken = invalid("flows/f", ["flow.yaml:3:1: mapping values are not allowed"], ("praxis",))
    assert (broken.step, broken.reason, broken.who) == ("fix", "flow_invalid", "person")
    assert broken.problems == ["flow.yaml:3:1: mapping values are not allowed"]
    assert broken.commands == [["praxis", "check", "flows/f"]]


def test_a_gate_route_names_the_gate_and_the_files_to_read_never_their_digests() -> None:
    r = route(READ)
    assert r.gate == {"phase": "a", "delegatable": True, "managed": True}
    assert r.read == [{"path": "runs/r1/output/a.csv"}]
    agent = ["--as", "agent", "--receipt", "r0a1"]
    assert r.commands == [[*APPROVE, *agent], [*REJECT, *agent]]
    for facts in (MANAGED, READ, GATE):
        assert "ab" * 32 not in str(route(facts).to_dict())
    failing = route(dataclasses.replace(GATE, checks_failing=("a.csv: check values failed",)))
    assert failing.problems == ["a.csv: check values failed"]
    assert APPROVE not in failing.commands  # approving is refused while a check fails


def test_an_output_changed_outside_offers_rerun_and_accept() -> None:
    r = route(dataclasses.replace(BASE, changed_outputs=(("a.csv", "a"),)))
    accept = ["praxis", "accept", "flows/f", "--run", "r1", "--output", "a.csv"]
    assert r.commands == [rerun("a"), [*accept, "--expect-revision", "7"]]
    gone = route(dataclasses.replace(r_facts := BASE, changed_outputs=(("a.csv", "a"),),
                                     missing_outputs=("a.csv",)))  # fmt: skip
    assert gone.commands == [rerun("a")] and r_facts is BASE  # a missing file is not accepted


def test_every_command_starts_with_the_program_praxis_was_invoked_by() -> None:
    program = ("/opt/venv/bin/python", "-m", "praxis")
    for _, facts, *_ in CASES:
        for argv in route(dataclasses.replace(facts, program=program)).commands:
            assert tuple(argv[:3]) == program and argv[3] != "praxis"


def test_a_delegated_gate_reads_each_file_first_then_passes_a_receipt_of_every_one() -> None:
    files = (("runs/r1/output/a.csv", "ab" * 32), ("runs/r1/output/b.md", "cd" * 32))
    unread = route(dataclasses.replace(MANAGED, read=files))
    read_b = [*READ_A[:3], "runs/r1/output/b.md", *READ_A[4:]]
    assert (unread.step, unread.commands) == ("read", [READ_A, read_b])
    half = route(dataclasses.replace(READ, read=files))
    assert (half.step, half.commands) == ("read", [read_b])  # only what has no receipt yet
    both = (("runs/r1/output/b.md", "r0b2"), ("runs/r1/output/a.csv", "r0a1"))
    r = route(dataclasses.replace(READ, read=files, receipts=both))
    receipts = ["--as", "agent", "--receipt", "r0a1", "--receipt", "r0b2"]
    assert r.commands == [[*APPROVE, *receipts], [*REJECT, *receipts]]
    for reason, facts in [("person", GATE), ("person", dataclasses.replace(GATE, read=files))]:
        commands = route(facts).commands
        assert all("--as" not in argv and "--receipt" not in argv for argv in commands)
        assert route(facts).who == reason


def test_a_gate_whose_phase_changed_routes_to_the_rerun_never_to_approve() -> None:
    for facts in (GATE, MANAGED, READ):
        r = route(dataclasses.replace(facts, changed_phases=("a",)))
        assert (r.step, r.reason, r.commands[0]) == ("rerun", "gate_changed", rerun("a"))
        assert not any(argv[1] in ("approve", "reject") for argv in r.commands)
        assert r.problems == ["a changed since it ran"]


def test_a_failure_carries_its_error_and_record_and_a_repeat_goes_to_a_person() -> None:
    failed = dataclasses.replace(
        BASE,
        status="failed",
        failure="scripts/b.py line 3: ValueError: column 'amount' is missing",
        record=("runs/r1/records/b.ipynb", "ef" * 32),
        repeats=1,
    )
    once = route(failed)
    assert (once.step, once.reason, once.who) == ("rerun", "failed", "anyone")
    assert once.problems == [
        "b: scripts/b.py line 3: ValueError: column 'amount' is missing",
        "record: runs/r1/records/b.ipynb",
    ]
    assert once.read == [{"path": "runs/r1/records/b.ipynb"}]
    again = route(dataclasses.replace(failed, repeats=2))
    assert (again.step, again.reason, again.who) == ("fix", "failed_repeatedly", "person")
    assert once.problems[0] in again.problems and again.read == once.read


def test_a_parameter_change_is_its_own_reason_never_a_changed_flow_yaml() -> None:
    paused = route(dataclasses.replace(BASE, params_changed=("a",)))
    assert paused.reason == "params_changed" and "flow.yaml" not in paused.why
    assert paused.commands == [ADVANCE, rerun("a")]  # the person's choice first: advance
    done = route(dataclasses.replace(BASE, status="done", params_changed=("a",)))
    assert (done.step, done.reason, done.commands) == ("none", "done", [])
    assert done.problems == ["a ran with other parameters than the run's now"]


def test_a_rerun_the_state_does_not_allow_is_never_proposed() -> None:
    """``rerunnable`` comes from the state tables: a phase not in it is never a target."""
    facts = dataclasses.replace(BASE, status="done", changed_phases=("c",), rerunnable=("a",))
    r = route(facts)
    assert all(argv[argv.index("--from") + 1] == "a" for argv in r.commands if "--from" in argv)
    assert r.reason != "definition_changed"
    failed = route(dataclasses.replace(BASE, status="failed", rerunnable=()))
    assert (failed.who, failed.commands) == ("person", [])


def test_facts_round_trip_through_their_json() -> None:
    import json

    for _, facts, *_ in CASES:
        again = Facts.from_dict(json.loads(json.dumps(facts.to_dict())))
        assert again == facts and route(again) == route(facts)


def test_three_failures_in_a_row_from_the_same_inputs_go_to_a_person_whatever_the_errors() -> None:
    failed = dataclasses.replace(BASE, status="failed", repeats=1, retries=2)
    assert route(failed).reason == "failed"
    r = route(dataclasses.replace(failed, retries=3))
    assert (r.reason, r.who) == ("failed_repeatedly", "person")
    assert r.problems[-1] == "failed 3 times in a row from the same inputs and definition"
