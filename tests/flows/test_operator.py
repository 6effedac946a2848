"""A scripted agent operating praxis: observe (status --json), route, act (the argv the route
gives, as an agent), observe again. In managed mode it passes the delegatable Gate, is
refused at the other, and a person approves that one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from praxis import cli

from ..identity import PERSON, agent_token
from ..route_agent import program_of
from .gates import two_gates

# their flows ask for the fake or local backend: as with --allow-local
pytestmark = pytest.mark.usefixtures("allow_local")

Call = Callable[[list[str], str], tuple[int, str, str]]  # (argv without "praxis", actor)
TOKENS: dict[str, str] = {}  # actor (person, agent) -> its token, set by each test


@pytest.fixture(autouse=True)
def _tokens(person: str) -> None:
    TOKENS.update(person=person, agent=agent_token("bot"))


def in_process(capsys, monkeypatch) -> Call:  # type: ignore[no-untyped-def]
    def call(argv: list[str], actor: str) -> tuple[int, str, str]:
        monkeypatch.setenv("PRAXIS_TOKEN", TOKENS[actor])
        code = cli.main(argv)
        out = capsys.readouterr()
        return code, out.out, out.err

    return call


def as_process(argv: list[str], actor: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "praxis", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "PRAXIS_TOKEN": TOKENS[actor]},
        timeout=600,
    )
    return done.returncode, done.stdout, done.stderr


def words(argv: list[str]) -> list[str]:
    """A route's command after the program it starts with (the one praxis was invoked by)."""
    return argv[len(program_of(argv)) :]


def operate(flow: Path, call: Call, steps: int = 12) -> tuple[dict, list[tuple[str, str, int]]]:  # type: ignore[type-arg]
    """Loop as an agent until the route is done or needs a person; the last status and
    (step, reason, exit code) of each step taken."""
    taken: list[tuple[str, str, int]] = []
    for _ in range(steps):
        code, out, err = call(["status", str(flow), "--json"], "agent")
        assert code == 0, err
        status = json.loads(out)
        route = status["route"]
        if route["step"] == "none" or route["who"] == "person":
            return status, taken
        code, out, err = call(words(route["commands"][0]), "agent")
        taken.append((route["step"], route["reason"], code))
        assert code == 0, err
    raise AssertionError(f"no end after {steps} steps: {taken}")


def scenario(flow: Path, call: Call) -> None:
    code, _, err = call(["run", str(flow), "--quiet"], "person")
    assert code == 0, err
    run = json.loads(call(["status", str(flow), "--json"], "person")[1])["run"]
    code, _, err = call(["manage", str(flow), "--run", run, "--agent", "bot"], "person")
    assert code == 0, err
    status, taken = operate(flow, call)
    # it read the file to review, then passed the delegatable Gate after pick on its receipt
    assert taken == [("read", "gate_delegated", 0), ("decide", "gate_delegated", 0)]
    route = status["route"]
    assert (route["reason"], route["who"], route["gate"]["phase"]) == (
        "gate_needs_person",
        "person",
        "total",
    )
    assert route["gate"]["delegatable"] is False
    assert [r["path"].endswith("total.csv") for r in route["read"]] == [True]
    assert route["commands"] == [] and route["caller"] == "agent:bot"  # none it'd be refused
    persons = json.loads(call(["status", str(flow), "--json"], "person")[1])["route"]
    approve = persons["commands"][0]  # the person's route offers it
    code, _, err = call(words(approve), "agent")  # the agent tries anyway
    assert code == 4 and "not delegatable: a person decides it" in err
    assert "NotAuthorized: run" in err and "agent:bot may not approve" in err
    code, _, err = call(words(approve), "person")
    assert code == 0, err
    status, taken = operate(flow, call)
    assert status["route"]["reason"] == "done" and taken == []
    receipt = status["receipt"]
    assert receipt["ok"] and (receipt["done"], receipt["total"]) == (3, 3)
    decisions = [(p["phase"], d["actor"]) for p in receipt["ledger"] for d in p["decisions"]]
    assert decisions == [("pick", "agent:bot"), ("total", PERSON)]
    outputs = {o["name"]: o["sha256"] for p in receipt["ledger"] for o in p["outputs"]}
    assert set(outputs) == {"picks.csv", "total.csv", "report.txt"}
    assert (flow / "runs").is_dir()
    report = next((flow / "runs").iterdir()) / "output" / "report.txt"
    assert report.read_text() == "3 orders, 60.0"


def test_an_agent_operates_a_managed_run(tmp_path, capsys, monkeypatch) -> None:
    scenario(two_gates(tmp_path), in_process(capsys, monkeypatch))


def test_without_managed_mode_the_agent_stops_at_the_first_gate(
    tmp_path, capsys, monkeypatch
) -> None:
    flow = two_gates(tmp_path)
    call = in_process(capsys, monkeypatch)
    assert call(["run", str(flow), "--quiet"], "person")[0] == 0
    status, taken = operate(flow, call)
    assert taken == [] and status["route"]["reason"] == "gate_not_managed"
    assert status["route"]["commands"] == []  # the agent's route: no decision it'd be refused
    persons = json.loads(call(["status", str(flow), "--json"], "person")[1])["route"]
    code, _, err = call(words(persons["commands"][0]), "agent")
    assert code == 4 and "agent:bot holds no live grant on run" in err


@pytest.mark.docker
def test_an_agent_operates_a_managed_run_on_docker(tmp_path) -> None:
    scenario(two_gates(tmp_path, backend="docker"), as_process)
