"""trace.jsonl and `praxis replay` (fake sandbox, the CLI in-process): every traced command
with its argv, actor, exit code, facts and route; bounded; replayed per fact change with
each route recomputed from its facts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from praxis import cli
from praxis.flows.engine import runner
from praxis.flows.model.events import Traced, TraceFull
from praxis.flows.report import trace
from praxis.flows.report.replay import replay
from praxis.flows.store.handle import RunHandle

from .gates import two_gates

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
    assert main(capsys, "run", "gates", "--managed", "--quiet")[0] == 0
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
    assert (first.exit, first.actor, approve.actor) == (0, "person", "agent")
    assert first.route["reason"] == "gate_delegated" and first.facts["gate"] == "pick"
    assert approve.facts["gate"] == "total" and approve.route["who"] == "person"


def test_without_the_variable_or_the_flag_nothing_is_traced(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PRAXIS_TRACE")
    assert main(capsys, "run", "gates", "--quiet")[0] == 0
    run = newest(here)
    assert not run.paths.trace.exists()
    assert main(capsys, "status", "gates", "--trace")[0] == 0
    assert [e.argv[1:3] for e in trace.read(run)] == [["status", "gates"]]  # type: ignore[attr-defined]


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
    assert main(capsys, "run", "gates", "--managed", "--quiet")[0] == 0
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
    assert "Gate after pick: the run paused (agent decides)" in out
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
    entry = json.loads(raw[0])
    entry["route"]["reason"] = "ready"  # as if another route had been chosen from these facts
    run.paths.trace.write_text("\n".join([json.dumps(entry), *raw[1:]]) + "\n")
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
