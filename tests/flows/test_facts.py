"""The facts a route is chosen from, read from real run folders (fake sandbox): a parameter
change is not a changed definition, a failure carries its error and record and a repeated
one goes to a person, a run left running between phases is resumed."""

from __future__ import annotations

from pathlib import Path

import pytest

from praxis.flows.definition.digest import sha256_of
from praxis.flows.engine import runner
from praxis.flows.model.transitions import Finish, Start
from praxis.flows.report.facts import changes, one_line, state_facts
from praxis.flows.report.status import status_of
from praxis.flows.store.handle import RunHandle

from .helpers import Fakes, three_phase_flow, write_flow

TWO = """
    flow: two
    sandbox: {backend: fake, timeout: 30}
    params: {city: London}
    phases:
      - {id: a, kind: script, script: a.py, outputs: [a.txt]}
      - {id: b, kind: script, script: b.py, inputs: {working: [a.txt]}, outputs: [b.txt]}
"""


def two(tmp_path: Path, b: str = "open('b.txt', 'w').write(open('a.txt').read() + '!')") -> Path:
    files = {"a.py": "open('a.txt', 'w').write(params['city'])", "b.py": b}
    return write_flow(tmp_path / "two", TWO, files)


def route_of(root: Path, run_id: str) -> dict:  # type: ignore[type-arg]
    return status_of(RunHandle.open(runner.load_flow(root), run_id)).route


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_a_rerun_with_other_parameters_is_params_changed_never_a_changed_flow_yaml(
    tmp_path: Path,
) -> None:
    root = two(tmp_path)
    run = runner.begin(root)
    assert (
        runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=Fakes())).status
        == "done"
    )
    runner.rerun(root, "b", run.id, params={"city": "Cairo"})
    handle = RunHandle.open(runner.load_flow(root), run.id)
    assert changes(handle) == ([], ["a"])  # a ran with London; its code is what ran
    r = route_of(root, run.id)
    assert (r["step"], r["reason"], r["who"]) == ("advance", "params_changed", "anyone")
    assert "flow.yaml" not in r["why"] and r["commands"][0][1] == "advance"
    assert r["problems"] == ["a ran with other parameters than the run's now"]
    assert (
        runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=Fakes())).status
        == "done"
    )
    assert (handle.paths.out("b.txt")).read_text() == "London!"  # b read a's output
    done = route_of(root, run.id)
    assert (done["step"], done["reason"]) == ("none", "done")
    (root / "a.py").write_text("open('a.txt', 'w').write(params['city'] + '?')")
    assert changes(RunHandle.open(runner.load_flow(root), run.id)) == (["a"], [])
    edited = route_of(root, run.id)
    assert (edited["reason"], edited["commands"][0][-3]) == ("definition_changed", "a")


def test_a_failure_carries_its_error_and_record_and_a_repeat_goes_to_a_person(
    tmp_path: Path,
) -> None:
    root = two(tmp_path, b="raise ValueError(\"column 'amount' is missing\")")
    run = runner.begin(root)
    runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    first = route_of(root, run.id)
    assert (first["step"], first["reason"], first["who"]) == ("rerun", "failed", "anyone")
    assert "ValueError: column 'amount' is missing" in first["problems"][0]
    record = f"two/runs/{run.id}/records/b.ipynb"
    assert first["problems"][1] == f"record: {record}"
    assert first["read"][0]["path"] == record
    runner.rerun(root, "b", run.id)
    runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    again = route_of(root, run.id)
    assert (again["step"], again["reason"], again["who"]) == ("fix", "failed_repeatedly", "person")
    assert first["problems"][0] in again["problems"]
    (root / "b.py").write_text("open('b.txt', 'w').write('fixed')")  # a person fixes it
    runner.rerun(root, "b", run.id)
    assert (
        runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=Fakes())).status
        == "done"
    )


def test_a_phase_that_fails_once_then_passes_is_retried_and_a_new_error_is_no_repeat(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "tries"
    root = two(
        tmp_path,
        b=f"""
        import pathlib
        p = pathlib.Path({str(marker)!r})
        n = int(p.read_text()) if p.exists() else 0
        p.write_text(str(n + 1))
        if n < 2:
            raise RuntimeError(f"try {{n}}")
        open('b.txt', 'w').write('ok')
        """,
    )
    run = runner.begin(root)
    for _ in range(2):  # two failures, each with its own error: no repeat
        runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
        r = route_of(root, run.id)
        assert (r["reason"], r["who"]) == ("failed", "anyone")
        runner.rerun(root, "b", run.id)
    assert (
        runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=Fakes())).status
        == "done"
    )
    state = RunHandle.open(runner.load_flow(root), run.id).state
    assert (state.phase("b").repeats, state.phase("b").failure) == (0, {})


def test_a_run_left_running_between_phases_is_resumed_by_advance(tmp_path: Path) -> None:
    root = two(tmp_path)
    run = runner.begin(root)
    run.change(Start(phase="a", pid=999_999))
    run.paths.out("a.txt").write_text("Lima")
    run.change(Finish(phase="a", hashes={"a.txt": sha256_of(run.paths.out("a.txt"))}))
    assert run.state.status == "running"  # and then its process died, before b started
    r = route_of(root, run.id)
    assert (r["step"], r["reason"]) == ("advance", "stopped")
    state = runner.advance(root, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert state.status == "done" and run.paths.out("b.txt").read_text() == "Lima!"


def test_state_facts_take_the_rerun_targets_from_the_state_tables(tmp_path: Path) -> None:
    root = three_phase_flow(tmp_path)
    run = runner.begin(root)
    f = state_facts(run.state, run.flow, flow_arg="demo", program=["praxis"])
    assert f.rerunnable == ("load",)  # a phase not reached yet cannot be re-run from
    assert (f.cursor_phase, f.flow_changed, f.left_running) == ("load", False, False)


def test_one_line_is_the_first_line_that_says_something_bounded() -> None:
    assert one_line("\n  \nValueError: x\nmore") == "ValueError: x"
    assert len(one_line("x" * 1000)) == 300
