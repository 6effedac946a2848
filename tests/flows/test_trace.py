"""trace.jsonl and `praxis replay` (fake sandbox, the CLI in-process): every traced command
with its argv, actor, exit code, facts and route; bounded; replayed per fact change with
each route recomputed from its facts."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from praxis import cli
from praxis.flows.engine import runner
from praxis.flows.model.events import Event, Traced, TraceFull, TraceStarted
from praxis.flows.report import trace
from praxis.flows.report.replay import in_start_order, replay
from praxis.flows.report.route import Facts, route
from praxis.flows.store.handle import RunHandle
from praxis.web.app import create_app
from praxis.web.background import Advancer
from praxis.web.security import Guard

from ..identity import PERSON, grant
from .gates import two_gates
from .helpers import Fakes, write_flow

# their flows ask for the fake or local backend: as with --allow-local
pytestmark = pytest.mark.usefixtures("allow_local")


def main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def follow(capsys: pytest.CaptureFixture[str], flow: str, run: str) -> list[str]:
    """The route's first command, as given (its argv after the program)."""
    code, out, _ = main(capsys, "status", flow, "--run", run, "--json")
    assert code == 0
    return list(json.loads(out)["route"]["commands"][0][1:])


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PRAXIS_TRACE", "1")
    return two_gates(tmp_path)


def newest(flow: Path) -> RunHandle:
    return RunHandle.open(runner.load_flow(flow), None)


def test_each_command_on_a_run_is_traced_with_the_route_after_it(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(capsys, "run", "gates", "--quiet")[0] == 0
    grant("gates", None)  # the person lets their own --as agent decide its delegatable Gates
    run = newest(here)
    read = follow(capsys, "gates", run.id)
    assert read[:1] == ["read"] and "--as" in read  # the file to review first: a receipt
    assert main(capsys, *read)[0] == 0
    argv = follow(capsys, "gates", run.id)
    assert argv[:1] == ["approve"] and "--as" in argv and "--receipt" in argv
    assert main(capsys, *argv)[0] == 0
    lines = trace.read(RunHandle.open(run.flow, run.id))
    verbs = [e.argv[1] for e in lines if isinstance(e, Traced)]
    assert verbs == ["run", "status", "read", "status", "approve"]
    first, _, _, _, approve = (e for e in lines if isinstance(e, Traced))
    started = [e.argv[1] for e in lines if isinstance(e, TraceStarted)]
    assert started == verbs  # each traced as it started too
    assert isinstance(lines[0], TraceStarted) and lines[0].pid == first.pid  # run: once made
    assert (first.exit, first.actor, approve.actor) == (0, PERSON, "agent:tester")  # labels
    # the run was traced before the person's grant: its route then waited for them
    assert first.route["reason"] == "gate_not_managed" and first.facts["gate"] == "pick"
    assert approve.facts["gate"] == "total" and approve.route["who"] == "person"


def test_without_the_variable_or_the_flag_nothing_is_traced(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PRAXIS_TRACE")
    assert main(capsys, "run", "gates", "--quiet")[0] == 0
    run = newest(here)
    assert not run.paths.trace.exists()
    assert main(capsys, "status", "gates", "--trace")[0] == 0
    assert [e.argv[1:3] for e in trace.read(run) if isinstance(e, Traced)] == [["status", "gates"]]


def test_the_trace_is_bounded_and_says_where_it_stopped(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(capsys, "run", "gates", "--quiet")[0] == 0
    run = newest(here)
    one = run.paths.trace.stat().st_size
    monkeypatch.setattr(trace, "MAX_BYTES", one * 3 + 10)
    for _ in range(6):
        assert main(capsys, "status", "gates")[0] == 0
    kinds = [e.kind for e in trace.read(run)]
    assert kinds[-1] == "trace_full" and kinds.count("trace_full") == 1
    assert run.paths.trace.stat().st_size <= one * 4
    result = replay(trace.read(run), "the run")
    assert any("reached its bound" in line for line in result.lines)


def test_replay_shows_a_gate_a_failure_a_rerun_and_a_loop_and_recomputes_each_route(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (here / "scripts" / "total.py").write_text("raise ValueError('no total')\n")
    assert main(capsys, "run", "gates", "--quiet")[0] == 0
    grant("gates", None)  # the person lets their own --as agent decide its delegatable Gates
    run = newest(here)
    taken = []
    for _ in range(10):
        code, out, _ = main(capsys, "status", "gates", "--run", run.id, "--json")
        route = json.loads(out)["route"]
        if route["who"] == "person":
            break
        argv = route["commands"][0][1:]
        taken.append(argv[0])
        assert main(capsys, *argv)[0] in (0, 1)
    assert taken == ["read", "approve", "rerun", "advance"]
    assert route["reason"] == "failed_repeatedly"
    code, out, _ = main(capsys, "replay", "gates", "--run", run.id)
    assert code == 0
    assert "Gate after pick: the run paused (person decides)" in out  # before the grant
    assert "at the Gate after pick, delegatable, managed (revision 4)" in out  # after it
    assert "failed at total: scripts/total.py line 1: ValueError: no total" in out
    assert "loop: back where #" in out and "(round 2)" in out
    assert "route: fix (failed_repeatedly, person)" in out
    assert "[route command 1]" in out and "[not from the route]" not in out
    assert out.rstrip().endswith("every route recomputed from its facts is the one recorded")


def test_replay_names_a_route_that_its_facts_do_not_give(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(capsys, "run", "gates", "--quiet")[0] == 0
    run = newest(here)
    raw = run.paths.trace.read_text().splitlines()
    at = next(i for i, line in enumerate(raw) if '"kind": "traced"' in line)  # run's end
    entry = json.loads(raw[at])
    entry["route"]["reason"] = "ready"  # as if another route had been chosen from these facts
    raw[at] = json.dumps(entry)
    run.paths.trace.write_text("\n".join(raw) + "\n")
    code, out, _ = main(capsys, "replay", "gates")
    assert code == 1
    assert "(DIFFERS)" in out and "routes recomputed differently from their facts: #1" in out


def test_replay_of_a_run_without_a_trace_says_how_to_make_one(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PRAXIS_TRACE")
    runner.begin(here)
    code, _, err = main(capsys, "replay", "gates")
    assert code == 2 and "PRAXIS_TRACE=1" in err


def test_a_trace_full_line_is_an_event_of_its_own() -> None:
    assert TraceFull(bytes=5).to_json().startswith('{"kind": "trace_full"')


# -- the replay tells the story: start order, a killed command, a hand edit, the page ---------

STORY = """
    flow: story
    sandbox: {backend: fake, timeout: 300}
    phases:
      - id: work
        kind: script
        script: work.py
        inputs: {working: [mode.txt]}
        outputs: [work.csv]
      - id: pick
        kind: script
        script: pick.py
        inputs: {working: [work.csv]}
        outputs: [picks.csv]
        review: required
"""
WORK = """
    import time
    while open("mode.txt").read().strip() == "loop":
        time.sleep(0.05)
    open("work.csv", "w").write("id,amount\\n1,10\\n2,20\\n")
"""
PICK = 'open("picks.csv", "w").write(open("work.csv").read())\n'


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "praxis", *args], capture_output=True, text=True, timeout=180
    )


def _started(run: Path) -> bool:
    events = run / "events.jsonl"
    return events.exists() and '"phase_started"' in events.read_text()


def _approve_in_the_page(root: Path, ref: str, run_id: str) -> None:
    """A reviewer approves the Gate in the page (the app in this process, on the fake)."""
    guard, advancer = Guard(), Advancer(make_sandbox=Fakes())
    app = create_app(root, guard=guard, advancer=advancer)
    try:
        with TestClient(app, base_url="http://127.0.0.1:8765") as client:
            assert client.get(f"/?token={guard.token}", follow_redirects=False).status_code == 303
            page = client.get(f"/run?flow={ref}&run={run_id}").text
            csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
            revision = RunHandle.open(runner.load_flow(root / ref), run_id).state.revision
            form = {"flow": ref, "run": run_id, "revision": str(revision - 1), "csrf": csrf}
            r = client.post("/approve", data=form, follow_redirects=False)  # a stale page
            assert r.status_code != 303 and "changed since" in r.text, r.text[-2000:]
            form["revision"] = str(revision)
            r = client.post("/approve", data=form, follow_redirects=False)
            assert r.status_code == 303 and "notice=approved" in r.headers["location"], r.text
            advancer.wait(120)
    finally:
        advancer.close()


def test_replay_tells_a_killed_command_a_hand_edit_and_a_page_approval_in_start_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PRAXIS_TRACE", "1")
    flow = write_flow(tmp_path / "story", STORY, {"work.py": WORK, "pick.py": PICK})
    (flow / "mode.txt").write_text("loop\n")
    begun = _cli("begin", "story")
    assert begun.returncode == 0, begun.stderr
    run = flow / "runs" / begun.stdout.strip()
    killed = subprocess.Popen(
        [sys.executable, "-m", "praxis", "advance", "story", "--allow-local", "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not _started(run):  # a guard against a hang only
            assert killed.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
    (flow / "mode.txt").write_text("go\n")
    assert _cli("advance", "story", "--allow-local", "--quiet").returncode == 1  # recorded lost
    assert _cli("rerun", "story", "--from", "work").returncode == 0
    assert _cli("advance", "story", "--allow-local", "--quiet").returncode == 0
    picks = run / "output" / "picks.csv"
    picks.write_text(picks.read_text().replace("2,20", "2,25"))  # a hand edit at the Gate
    assert _cli("status", "story").returncode == 0
    _approve_in_the_page(tmp_path, "story", run.name)
    assert _cli("status", "story").returncode == 0
    code, out, _ = main(capsys, "replay", "story")
    assert code == 0, out
    heads = [line.split(" -> ")[0] for line in out.splitlines() if line.startswith("#")]
    verbs = [h.split()[1] if h.split()[1] != "praxis" else h.split()[2] for h in heads]
    assert verbs == [
        "begin", "advance", "advance", "rerun", "advance", "status", "page", "page", "status"
    ], out  # fmt: skip
    assert "#2 praxis advance story --allow-local --quiet -> never finished" in out
    page = [line for line in out.splitlines() if line.startswith(("#7 ", "#8 "))]
    assert page[0].startswith("#7 page approve") and " -> exit 4 " in page[0]  # a stale page
    assert page[1].startswith("#8 page approve") and " -> exit 0 " in page[1]
    assert "changed: re-run from work" in out
    assert "changed: hand edit: picks.csv" in out
    assert "Gate after pick: the run paused (person decides)" in out
    assert "loop" not in out.replace("0 loop round(s)", "")  # nothing went round
    assert "1 never finished" in out


def test_commands_are_told_in_the_order_they_started() -> None:
    def started(verb: str, pid: int) -> TraceStarted:
        return TraceStarted(argv=["praxis", verb, "f"], actor="person", pid=pid)

    def ended(verb: str, pid: int) -> Traced:
        facts = {"flow": "f", "run": "r", "status": "cancelled", "revision": 3,
                 "cursor_phase": "a"}  # fmt: skip
        return Traced(argv=["praxis", verb, "f"], actor="person", exit=7, facts=facts,
                      route={}, pid=pid)  # fmt: skip

    entries: list[Event] = [
        started("advance", 10),
        started("cancel", 11),
        ended("cancel", 11),
        ended("advance", 10),
    ]
    told = [c.argv[1] for c in in_start_order(entries)]
    assert told == ["advance", "cancel"]  # the cancel ended first, the advance started first
    out = "\n".join(replay(entries, "f run r").lines)
    assert out.index("#1 praxis advance") < out.index("#2 praxis cancel")


def test_each_fact_change_is_named_and_a_state_seen_again_after_one_is_no_loop() -> None:
    base = Facts(
        flow="f", run="r", status="paused", revision=4, cursor_phase="total", gate="pick",
        read=(("picks.csv", "a" * 64),), phases=("pick", "total"),
    )  # fmt: skip
    edited = {"read": (("picks.csv", "c" * 64),), "edited": (("picks.csv", "pick"),)}
    steps = [
        ("status", base),
        ("status", replace(base, revision=5, changed_outputs=(("picks.csv", "pick"),))),
        ("accept", replace(base, revision=6, read=(("picks.csv", "b" * 64),))),
        ("status", replace(base, revision=7, **edited)),
        ("status", replace(base, revision=8, changed_phases=("pick",), **edited)),
        ("status", replace(base, revision=9)),  # as #1 left it: edited back, definition too
        ("status", replace(base, revision=9)),
    ]
    entries: list[Event] = []
    for n, (verb, facts) in enumerate(steps):
        argv = ["praxis", verb, "f"]
        entries.append(TraceStarted(argv=argv, actor="person", pid=100 + n))
        entries.append(Traced(argv=argv, actor="person", exit=0, facts=facts.to_dict(),
                              route=route(facts).to_dict(), pid=100 + n))  # fmt: skip
    out = replay(entries, "f run r")
    said = [line.strip() for line in out.lines if line.strip().startswith("changed:")]
    assert said == [
        "changed: changed outside praxis: picks.csv",
        "changed: hand edit: picks.csv",
        "changed: definition changed: pick",
        "changed: hand edit: picks.csv",
    ]
    text = "\n".join(out.lines)
    assert out.loops == 0 and "loop:" not in text  # #6 is #1's state, with changes between
    assert "#7 praxis status f -> exit 0   (facts unchanged)" in text
