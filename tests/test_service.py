"""praxis.service: the one service the front doors call, on the fake sandbox."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

import praxis
from praxis import api
from praxis.flows.definition.sandbox_config import SandboxInvalid
from praxis.flows.engine import runner
from praxis.flows.model.events import RunBegun
from praxis.service import acting, reading

from .flows.helpers import Fakes, local, one_script_flow, three_phase_flow, write_flow


def test_the_python_api_is_the_service() -> None:
    for name in ("begin", "advance", "approve", "reject", "manage", "accept", "rerun"):
        assert getattr(praxis, name) is getattr(acting, name)
    for name in ("cancel", "edit"):
        assert getattr(api, name) is getattr(acting, name)
    for name in ("load", "check", "status", "outputs", "events"):
        assert getattr(praxis, name) is getattr(reading, name)
    assert praxis.Unbound is acting.Unbound


def test_the_options_of_an_advance_are_one_frozen_object_its_phases_read(tmp_path: Path) -> None:
    root = one_script_flow(tmp_path / "f", "print('hello from a')\nopen('x.txt', 'w').write('1')")
    run = runner.begin(root)
    events: list[str] = []
    messages: list[str] = []
    options = acting.run_options(
        local, lambda e: events.append(e.kind), messages.append, None, None, True, None, time.sleep
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.reuse = False  # type: ignore[misc]
    assert runner.advance(root, run.id, options=options).status == "done"
    assert "phase_done" in events  # on_event, read by the lifecycle
    assert "hello from a" in "".join(messages)  # on_message, read by the phase's context


def test_a_run_through_the_service_to_its_gate_and_on(tmp_path: Path) -> None:
    root = three_phase_flow(tmp_path)
    fakes = Fakes()
    begun: list[str] = []
    seen: list[str] = []
    state = acting.run(
        root, sandbox=fakes, on_begun=lambda run: begun.append(run.id), on_event=lambda e: (
            seen.append(e.kind)
        ),
    )  # fmt: skip
    assert state.waiting == "gate" and begun == [state.run] and "phase_done" in seen
    assert list(reading.outputs(root)) == ["clean.csv", "flags.csv"]
    state = acting.approve(root, expect_revision=state.revision)
    state = acting.advance(root, sandbox=fakes)
    assert state.status == "done"
    state = acting.rerun(root, "total", expect_revision=state.revision, reuse=False)
    assert state.status == "paused" and state.phase("total").status == "pending"
    assert isinstance(reading.events(root)[0], RunBegun)
    assert reading.status(root).status == "paused"


def test_begin_takes_the_runs_parameters_and_delete_runs_removes_them(tmp_path: Path) -> None:
    yaml_text = """
        sandbox: {backend: fake}
        params: {n: 1}
        phases:
          - {id: a, kind: script, script: s.py, outputs: [x.txt]}
    """
    root = write_flow(tmp_path / "one", yaml_text, {"s.py": "open('x.txt', 'w').write('x')"})
    first = acting.begin(root)
    second = acting.begin(reading.load(root), params={"n": "3"})
    assert reading.open_run(root).id == second.id and second.state.params == {"n": 3}
    assert acting.delete_runs(root, [first.id]) == [first.id]
    with pytest.raises(praxis.NoRun):
        reading.open_run(root, first.id)


def test_the_sandbox_choice(tmp_path: Path) -> None:
    fakes = Fakes()
    assert acting.sandbox_factory(None) is acting.default_sandbox
    assert acting.sandbox_factory(fakes) is fakes
    with pytest.raises(SandboxInvalid, match="timeout and collect cannot be overridden"):
        acting.sandbox_factory({"timeout": 5, "collect": "all"})
    root = one_script_flow(tmp_path / "one", "open('x.txt', 'w').write('x')")
    acting.begin(root)
    state = acting.advance(root, sandbox={"backend": "fake"})
    assert state.status == "done" and state.backend == "fake"
