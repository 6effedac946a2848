"""The model turn: completion, the model-call limit, the run_python limit, the record."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from praxis.agent import run_turn
from praxis.agent import turn as agent
from praxis.flows.engine.context import PhaseError

from .conftest import Make, call, reply

TOTALS = "import pandas as pd\npd.DataFrame({'a': [1, 2]}).to_csv('totals.csv', index=False)\n"


def write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)


def test_prepared_script_and_write_output_complete(make: Make, flow_root: Path) -> None:
    write(flow_root, "scripts/totals.py", TOTALS)
    h = make(
        [
            reply(call("run_prepared", name="totals"), text="Computing totals."),
            reply(call("write_output", name="summary.md", text="# Summary\nTwo rows.\n")),
            reply(text="All outputs written."),
        ],
        scripts=("scripts/totals.py",),
        outputs=("totals.csv", "summary.md"),
    )
    result = run_turn(h.ctx)

    assert (h.workspace / "totals.csv").read_text() == "a\n1\n2\n"
    assert (h.ctx.staging / "summary.md").read_text() == "# Summary\nTwo rows.\n"
    assert not (h.workspace / "summary.md").exists()
    assert result.written == {"totals.csv"}
    assert result.answer == "All outputs written." and result.calls == 3
    assert [e.call for e in h.of("model_called")] == [1, 2, 3]
    assert [(e.tool, e.status) for e in h.of("tool_called")] == [
        ("run_prepared", "ok"),
        ("write_output", "ok"),
    ]
    assert h.of("tool_called")[0].files == ["totals.csv"]
    assert [e.label for e in h.of("code_ran")] == ["prepared totals"]
    assert h.waits == []  # prepared code never waits for a person
    assert h.model.bound_tools == [
        "run_python",
        "run_prepared",
        "extract",
        "extract_prepared",
        "write_output",
    ]
    cells = h.ctx.record.nb.cells
    code = [c for c in cells if c.cell_type == "code"]
    assert [c.source for c in code] == [TOTALS]
    assert code[0].execution_count == 1
    text = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    assert "Computing totals." in text and "All outputs written." in text
    assert "## Prompt" in text


def test_the_21st_model_call_fails_the_phase_naming_the_limit(make: Make) -> None:
    busy = reply(call("write_output", name="not-declared.md", text="x"))
    h = make([busy] * 25, outputs=("report.md",))
    with pytest.raises(PhaseError, match=r"more than 20 calls \(limits\.model_calls\)"):
        agent.run(h.ctx)
    assert len(h.model.received) == 20
    assert [e.call for e in h.of("model_called")][-1] == 20


def test_a_lower_model_call_limit_is_honoured(make: Make) -> None:
    busy = reply(call("write_output", name="not-declared.md", text="x"))
    h = make([busy] * 5, outputs=("report.md",), limits={"model_calls": 3, "run_python": 8})
    with pytest.raises(PhaseError, match="more than 3 calls"):
        agent.run(h.ctx)
    assert len(h.model.received) == 3


def test_the_9th_run_python_is_refused_and_the_model_is_told(make: Make) -> None:
    code = "with open('runs.txt', 'a') as f:\n    f.write('x\\n')\n"
    h = make(
        [reply(*[call("run_python", code=code)] * 9), reply(text="Stopped.")],
        approver=lambda phase, source: True,
        outputs=("report.md",),
    )
    agent.run(h.ctx)
    assert (h.workspace / "runs.txt").read_text() == "x\n" * 8
    results = h.tool_results()
    assert len(results) == 9
    assert all(r.startswith("status: ok") for r in results[:8])
    assert results[8].startswith("refused: run_python limit reached (8 runs")
    assert [e.status for e in h.of("tool_called")] == ["ok"] * 8 + ["refused"]


def test_an_error_in_code_goes_back_to_the_model(make: Make) -> None:
    h = make(
        [reply(call("run_python", code="1/0")), reply(text="It failed.")],
        approver=lambda phase, source: True,
    )
    agent.run(h.ctx)
    (result,) = h.tool_results()
    assert result.startswith("status: error")
    assert "ZeroDivisionError: division by zero" in result
    assert "\x1b[" not in result


def test_long_output_is_clipped_and_says_so(make: Make) -> None:
    h = make(
        [reply(call("run_python", code="print('y' * 100_000)")), reply(text="ok")],
        approver=lambda phase, source: True,
    )
    agent.run(h.ctx)
    (result,) = h.tool_results()
    assert len(result) < 5_000
    assert "clipped" in result


def test_unknown_tools_and_bad_arguments_are_answered(make: Make) -> None:
    h = make(
        [reply(call("rm_rf", path="/"), call("run_python", source="1")), reply(text="ok")],
    )
    agent.run(h.ctx)
    unknown, bad = h.tool_results()
    assert unknown.startswith("refused: unknown tool 'rm_rf'")
    assert "bad arguments" in bad and "missing ['code']" in bad


def test_a_failing_model_call_fails_the_phase(make: Make) -> None:
    def boom(messages: object) -> AIMessage:
        raise ConnectionError("provider unreachable")

    h = make([boom])
    with pytest.raises(PhaseError, match="model call 1 failed: ConnectionError"):
        agent.run(h.ctx)
