"""Item 34: the route converges. A test agent that runs only the route's argv, as given, with
no `praxis` on PATH (tests/route_agent.py), drives every example flow and small flows through
the states a run meets: Gates delegated and not, a phase that always fails, one that fails
once then passes, a person's `rerun --from P -p k=v` at each phase, a flow.yaml change, an
output changed by hand, a file edited by hand at a Gate after the agent read it, a phase's
script changed while its Gate waits, a cancel, a runner killed mid-phase. Each drive ends
`done` or with `who: person` within a bounded number of commands, never runs a command that
exits 4, and every Gate decision it took is recorded as `agent`, with a receipt of each file
it read. On docker; the runs are traced and `praxis replay` recomputes every route from the
trace."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from praxis.flows.store import state_file
from praxis.flows.store.event_log import EventLog

from ..identity import grant
from ..route_agent import Drive, agent_env, drive, program_of, venv_program
from ..test_examples import EXAMPLES, copy_flow
from ..test_warehouse_report import profile as warehouse_profile
from ._flows import docker_sandbox, write_flow

pytestmark = pytest.mark.docker
REFUSED = 4
HEX64 = re.compile(r"[0-9a-f]{64}")

CONV = """
    flow: conv
    %(sandbox)s
    params: {k: "1", fail: "no"}
    phases:
      - {id: a, kind: script, script: a.py, outputs: [a.txt]}
      - id: b
        kind: script
        script: b.py
        inputs: {working: [a.txt]}
        outputs: [b.txt]
        review: {required: true, delegatable: true}
      - {id: c, kind: script, script: c.py, inputs: {working: [b.txt]}, outputs: [c.txt]}
      - id: d
        kind: script
        script: d.py
        inputs: {working: [c.txt, a.txt]}
        outputs: [d.txt]
        review: required
"""
CONV_FILES = {
    "a.py": "open('a.txt', 'w').write('a' + str(params['k']))\n",
    "b.py": "open('b.txt', 'w').write(open('a.txt').read() + 'b')\n",
    "c.py": """
        if params["fail"] == "yes":
            raise ValueError("column 'amount' is missing")
        open('c.txt', 'w').write(open('b.txt').read() + 'c')
    """,
    "d.py": "open('d.txt', 'w').write(open('c.txt').read() + open('a.txt').read())\n",
}


def person(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A person at the terminal: the same program, acting as themself."""
    return subprocess.run(
        [*venv_program(), *args],
        cwd=cwd,
        env={**agent_env(), **env},
        capture_output=True,
        text=True,
        timeout=600,
    )


def route(cwd: Path, flow: str, run: str) -> dict[str, Any]:
    seen = person(cwd, "status", flow, "--run", run, "--json")
    assert seen.returncode == 0, seen.stderr
    return json.loads(seen.stdout)["route"]  # type: ignore[no-any-return]


def newest(cwd: Path, flow: str) -> str:
    return sorted(p.name for p in (cwd / flow / "runs").iterdir() if p.is_dir())[-1]


def decisions(cwd: Path, flow: str, run: str) -> list[tuple[str, str]]:
    log = EventLog(cwd / flow / "runs" / run / "events.jsonl").read()
    return [(e.phase, e.actor) for e in log if e.kind in ("gate_approved", "gate_rejected")]  # type: ignore[attr-defined]


def converged(d: Drive, *, reason: str | None = None) -> Drive:
    """The drive's invariants: no refused command, an end (done or a person), each of its
    Gate decisions taken as an agent, within its bound (drive() raises otherwise)."""
    assert REFUSED not in d.codes, [(s.argv, s.err) for s in d.steps if s.code == REFUSED]
    assert d.finished or d.handed_over, d.route
    for step in d.decisions:
        assert "--as" in step.argv and step.argv[step.argv.index("--as") + 1] == "agent"
    if reason is not None:
        assert d.route["reason"] == reason, d.route
    return d


def agent_decided(cwd: Path, flow: str, run: str, d: Drive, before: int) -> None:
    """The Gate decisions recorded since ``before`` that the drive took are the agent's."""
    taken = decisions(cwd, flow, run)[before:]
    assert [actor for _, actor in taken[: len(d.decisions)]] == ["agent:tester"] * len(d.decisions)


def replayed(cwd: Path, flow: str, run: str, **env: str) -> str:
    done = person(cwd, "replay", flow, "--run", run, **env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every route recomputed from its facts is the one recorded" in done.stdout
    return done.stdout


def take(cwd: Path, r: dict[str, Any], index: int = 0) -> subprocess.CompletedProcess[str]:
    """A person takes one of the route's commands as given."""
    done = subprocess.run(
        r["commands"][index], cwd=cwd, env=agent_env(), capture_output=True, text=True, timeout=600
    )
    assert done.returncode != REFUSED, done.stderr
    return done


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_flow_is_driven_to_done(
    name: str, tmp_path: Path, docker_image: str, request: pytest.FixtureRequest
) -> None:
    copy_flow(name, tmp_path, docker_image)
    extra: dict[str, str] = {}
    if (tmp_path / name / "scripted-turn.json").is_file():  # an agent example's model
        extra["PRAXIS_MODEL"] = "praxis.agent.scripted:ScriptedChatModel"
        extra["PRAXIS_MODEL_SCRIPT"] = str(tmp_path / name / "scripted-turn.json")
    shop = tmp_path / name / "data" / "shop.sql"
    if shop.is_file():  # the example's PostgreSQL database, on a server the test starts
        server = request.getfixturevalue("postgres")
        server.create("shop", shop.read_text())
        extra.update(server.profile(tmp_path, "shop"))  # the connection `shop` of the profile
    if "\npublish:" in (tmp_path / name / "flow.yaml").read_text():  # a table to publish to
        extra.update(warehouse_profile(tmp_path, write=True))
    env = agent_env(**extra)
    begun = person(tmp_path, "begin", name, **extra)
    assert begun.returncode == 0, begun.stderr
    run = begun.stdout.strip()
    for _ in range(4):  # the agent drives; at each Gate that is not its own, a person approves
        d = converged(drive(name, run, cwd=tmp_path, env=env))
        if d.finished:
            break
        assert d.route["reason"] == "gate_needs_person", d.route
        done = subprocess.run(
            d.route["commands"][0], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
    assert d.finished
    assert state_file.load(tmp_path / name / "runs" / run / "run.json").status == "done"
    replayed(tmp_path, name, run, **extra)


def test_gates_an_output_changed_by_hand_a_cancel_and_flow_yaml_changes(
    tmp_path: Path, docker_image: str
) -> None:
    write_flow(tmp_path / "conv", CONV % {"sandbox": docker_sandbox(docker_image)}, CONV_FILES)
    assert person(tmp_path, "run", "conv", "--quiet").returncode == 0
    grant(tmp_path / "conv", None)  # the person's own --as agent may decide its Gates
    run = newest(tmp_path, "conv")
    # a delegatable Gate of a managed run: the agent decides it; the next one is a person's
    d = converged(drive("conv", run, cwd=tmp_path), reason="gate_needs_person")
    assert [s.reason for s in d.steps] == ["gate_delegated", "gate_delegated"]
    read, decided = d.steps
    assert read.argv[len(program_of(read.argv))] == "read"  # the file first: its receipt
    assert not any(HEX64.fullmatch(word) for s in d.steps for word in s.argv)
    agent_decided(tmp_path, "conv", run, d, 0)
    approved = [e for e in EventLog(tmp_path / "conv/runs" / run / "events.jsonl").read()
                if e.kind == "gate_approved"]  # fmt: skip
    sha = hashlib.sha256((tmp_path / "conv/runs" / run / "output/b.txt").read_bytes())
    assert approved[0].acked == [  # type: ignore[attr-defined]
        {"name": "b.txt", "sha256": sha.hexdigest(), "receipt": decided.argv[-1]}
    ]
    take(tmp_path, d.route)  # the person approves d: done
    assert converged(drive("conv", run, cwd=tmp_path)).finished

    # an output changed by hand that a later phase reads: a person accepts it
    assert person(tmp_path, "rerun", "conv", "--run", run, "--from", "c").returncode == 0
    (tmp_path / "conv/runs" / run / "output/a.txt").write_text("edited by hand")
    d = converged(drive("conv", run, cwd=tmp_path), reason="output_changed")
    assert d.steps == []  # nothing an agent may do
    take(tmp_path, d.route, 1)  # accept --output a.txt
    d = converged(drive("conv", run, cwd=tmp_path), reason="gate_needs_person")
    take(tmp_path, d.route)

    # a phase's code changed: the agent re-runs from it (and decides its Gate again)
    (tmp_path / "conv/b.py").write_text(CONV_FILES["b.py"] + "# changed\n")
    before = len(decisions(tmp_path, "conv", run))
    d = converged(drive("conv", run, cwd=tmp_path), reason="gate_needs_person")
    assert [s.reason for s in d.steps][:2] == ["definition_changed", "ready"]
    agent_decided(tmp_path, "conv", run, d, before)

    # at the Gate, the file the agent read is edited by hand: its receipt no longer counts
    take(tmp_path, d.route)  # approve d
    assert person(tmp_path, "rerun", "conv", "--run", run, "--from", "b").returncode == 0
    assert person(tmp_path, "advance", "conv", "--run", run, "--quiet").returncode == 0
    r = route(tmp_path, "conv", run)
    assert r["step"] == "read"
    assert take(tmp_path, r).returncode == 0  # the agent reads b.txt: a receipt
    assert route(tmp_path, "conv", run)["step"] == "decide"
    b_txt = tmp_path / "conv/runs" / run / "output/b.txt"
    b_txt.write_text(b_txt.read_text() + "!")
    before = len(decisions(tmp_path, "conv", run))
    d = converged(drive("conv", run, cwd=tmp_path), reason="gate_needs_person")
    assert [s.argv[len(program_of(s.argv))] for s in d.steps][:2] == ["read", "approve"]
    agent_decided(tmp_path, "conv", run, d, before)

    # a phase's script changed while its Gate waits: the agent re-runs it, never approves
    take(tmp_path, d.route)  # approve d
    again = person(tmp_path, "rerun", "conv", "--run", run, "--from", "b", "--discard-edits")
    assert again.returncode == 0, again.stderr
    assert person(tmp_path, "advance", "conv", "--run", run, "--quiet").returncode == 0
    assert route(tmp_path, "conv", run)["step"] == "read"  # at the Gate after b
    (tmp_path / "conv/b.py").write_text(CONV_FILES["b.py"] + "# changed at the Gate\n")
    assert route(tmp_path, "conv", run)["reason"] == "gate_changed"
    before = len(decisions(tmp_path, "conv", run))
    d = converged(drive("conv", run, cwd=tmp_path), reason="gate_needs_person")
    assert [s.reason for s in d.steps][:2] == ["gate_changed", "ready"]
    agent_decided(tmp_path, "conv", run, d, before)

    # a cancel: a person resumes it
    take(tmp_path, d.route)  # approve d
    assert person(tmp_path, "rerun", "conv", "--run", run, "--from", "d").returncode == 0
    assert person(tmp_path, "cancel", "conv", "--run", run).returncode == 0
    d = converged(drive("conv", run, cwd=tmp_path), reason="cancelled")
    take(tmp_path, d.route)  # rerun --from d
    d = converged(drive("conv", run, cwd=tmp_path), reason="gate_needs_person")
    take(tmp_path, d.route)
    assert converged(drive("conv", run, cwd=tmp_path)).finished

    # flow.yaml's phases renamed: a person starts a new run
    yaml_text = (tmp_path / "conv/flow.yaml").read_text()
    (tmp_path / "conv/flow.yaml").write_text(yaml_text.replace("id: d", "id: e"))
    d = converged(drive("conv", run, cwd=tmp_path), reason="flow_changed")
    assert d.route["commands"][-1][-2:] == ["run", "conv"]
    (tmp_path / "conv/flow.yaml").write_text(yaml_text)
    out = replayed(tmp_path, "conv", run)
    assert "Gate after b: the run paused (agent decides)" in out
    assert "route: accept (output_changed, person)" in out


def test_a_phase_that_always_fails_goes_to_a_person_and_a_rerun_with_params_at_each_phase(
    tmp_path: Path, docker_image: str
) -> None:
    write_flow(tmp_path / "conv", CONV % {"sandbox": docker_sandbox(docker_image)}, CONV_FILES)
    started = person(tmp_path, "run", "conv", "-p", "fail=yes", "--quiet")
    grant(tmp_path / "conv", None)
    assert started.returncode == 0, started.stderr
    run = newest(tmp_path, "conv")
    d = converged(drive("conv", run, cwd=tmp_path), reason="failed_repeatedly")
    assert [s.reason for s in d.steps] == ["gate_delegated", "gate_delegated", "failed", "ready"]
    assert any("ValueError: column 'amount' is missing" in p for p in d.route["problems"])
    # a person fixes it with a parameter: the route says so, and never "flow.yaml"
    fixed = person(tmp_path, "rerun", "conv", "--run", run, "--from", "c", "-p", "fail=no")
    assert fixed.returncode == 0, fixed.stderr
    d = converged(drive("conv", run, cwd=tmp_path), reason="gate_needs_person")
    assert d.steps[0].reason == "params_changed"
    take(tmp_path, d.route)
    for phase, value in (("a", "2"), ("b", "3"), ("c", "4"), ("d", "5")):
        again = person(tmp_path, "rerun", "conv", "--run", run, "--from", phase, "-p", f"k={value}")
        assert again.returncode == 0, again.stderr
        for _ in range(3):  # the agent drives; the Gate after d is a person's
            d = converged(drive("conv", run, cwd=tmp_path))
            if d.finished:
                break
            assert d.route["reason"] == "gate_needs_person", d.route
            take(tmp_path, d.route)
        assert d.finished
        reasons = {s.reason for s in d.steps}
        assert "definition_changed" not in reasons, phase
    out = tmp_path / "conv/runs" / run / "output/d.txt"
    assert out.read_text().endswith("a2")  # d ran with k=2's a.txt, then k changed after a
    replayed(tmp_path, "conv", run)


SLOW = """
    flow: slow
    %(sandbox)s
    phases:
      - {id: nap, kind: script, script: nap.py, outputs: [nap.txt]}
      - {id: after, kind: script, script: after.py, inputs: {working: [nap.txt]}, outputs: [x.txt]}
"""
SLOW_FILES = {
    "nap.py": "import time\ntime.sleep(4)\nopen('nap.txt', 'w').write('rested')\n",
    "after.py": "open('x.txt', 'w').write(open('nap.txt').read())\n",
}


def test_a_phase_that_fails_once_then_passes_is_retried_to_done(
    tmp_path: Path, docker_image: str
) -> None:
    """The first attempt times out (the machine was slow: a 1 s limit); by the retry it is
    not (the limit raised in the flow's sandbox section, which no phase's definition holds)."""
    short = docker_sandbox(docker_image, timeout=1)
    write_flow(tmp_path / "slow", SLOW % {"sandbox": short}, SLOW_FILES)
    assert person(tmp_path, "run", "slow", "--quiet").returncode == 1
    run = newest(tmp_path, "slow")
    assert route(tmp_path, "slow", run)["reason"] == "failed"
    text = (tmp_path / "slow/flow.yaml").read_text()
    long = docker_sandbox(docker_image, timeout=60)
    (tmp_path / "slow/flow.yaml").write_text(text.replace(short, long))
    d = converged(drive("slow", run, cwd=tmp_path))
    assert d.finished and [s.reason for s in d.steps] == ["failed", "ready"]


def test_a_runner_killed_mid_phase_is_recovered_and_driven_to_done(
    tmp_path: Path, docker_image: str
) -> None:
    write_flow(tmp_path / "slow", SLOW % {"sandbox": docker_sandbox(docker_image)}, SLOW_FILES)
    begun = person(tmp_path, "begin", "slow")
    run = begun.stdout.strip()
    runner = subprocess.Popen(
        [*venv_program(), "advance", "slow", "--run", run, "--quiet"],
        cwd=tmp_path,
        env=agent_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    state = tmp_path / "slow/runs" / run / "run.json"
    deadline = time.monotonic() + 300
    while state_file.load(state).phases[0].status != "running":
        assert runner.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(runner.pid, signal.SIGKILL)
    runner.wait()
    d = converged(drive("slow", run, cwd=tmp_path))
    assert d.finished
    assert [s.reason for s in d.steps] == ["stopped", "failed", "ready"]
    assert d.codes[0] == 1  # advance recorded the phase as stopped (a failure, not a refusal)
    out = replayed(tmp_path, "slow", run)
    assert "left running at nap by a process that is gone" in out
    assert "praxis advance slow --run" in out and "--quiet -> never finished" in out  # killed
