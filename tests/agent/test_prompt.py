"""What the model sees: clipped references, CSV profiles, earlier outputs, the reviewer's note."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from praxis.agent import prompt
from praxis.agent import turn as agent
from praxis.flows.model.events import PhaseStarted, ToolCalled
from praxis.flows.model.flow import Phase
from praxis.flows.store.event_log import EventLog
from praxis.phases.kinds import ScriptSpec

from .conftest import Make, reply


def seen(h: object) -> str:
    model = h.model
    return "\n".join(str(m.content) for m in model.received[0])


def test_a_long_reference_is_clipped_with_a_marker(make: Make, flow_root: Path) -> None:
    (flow_root / "docs").mkdir()
    (flow_root / "docs" / "long.md").write_text("a" * 19_990 + "TAIL-BEYOND-LIMIT" + "b" * 5_000)
    h = make([reply(text="ok")], reference=("docs/long.md",))
    agent.run(h.ctx)
    text = seen(h)
    assert "a" * 19_990 + "TAIL-BEYO" in text
    assert "TAIL-BEYOND" not in text
    assert "[... clipped: showing the first 20,000 of 25,007 characters ...]" in text


def test_a_short_reference_is_whole(make: Make, flow_root: Path) -> None:
    (flow_root / "notes.md").write_text("Revenue is in euros.")
    h = make([reply(text="ok")], reference=("notes.md",))
    agent.run(h.ctx)
    assert "Revenue is in euros." in seen(h)
    assert "clipped" not in seen(h)


def test_a_csv_working_input_appears_as_a_profile(make: Make, flow_root: Path) -> None:
    (flow_root / "data").mkdir()
    rows = "\n".join(f"2024-05-{d:02d},north,{d}" for d in range(1, 10))
    (flow_root / "data" / "sales.csv").write_text(f"date,region,units\n{rows}\n2024-05-10,,\n")
    h = make([reply(text="ok")], working=("data/sales.csv",))
    agent.run(h.ctx)
    text = seen(h)
    assert "## `data/sales.csv`\n\n10 rows, 3 columns" in text
    assert "| units | float64 | 1 |" in text
    assert "| region |" in text and "| 1 |" in text
    assert "First 5 rows:\n```\ndate,region,units\n2024-05-01,north,1.0\n" in text
    assert "2024-05-06" not in text  # only a few sample rows
    assert (h.workspace / "data" / "sales.csv").exists()


def test_an_earlier_output_is_profiled_from_the_run_folder(make: Make, tmp_path: Path) -> None:
    run_output = tmp_path / "run" / "output"
    run_output.mkdir(parents=True)
    (run_output / "clean.csv").write_text("k,v\nx,1\ny,2\n")
    clean = Phase(
        id="clean", kind="script", spec=ScriptSpec("scripts/clean.py"), outputs=("clean.csv",)
    )
    h = make([reply(text="ok")], before=(clean,), working=("clean.csv",))
    agent.run(h.ctx)
    assert "## `clean.csv`\n\n2 rows, 2 columns" in seen(h)


def test_the_prompt_names_task_outputs_prepared_and_limits(make: Make, flow_root: Path) -> None:
    (flow_root / "scripts").mkdir()
    (flow_root / "scripts" / "profile.py").write_text("print('profile')\n")
    (flow_root / "queries").mkdir()
    (flow_root / "queries" / "top.sql").write_text("SELECT 1")
    h = make(
        [reply(text="ok")],
        scripts=("scripts/profile.py",),
        queries=("queries/top.sql",),
        outputs=("findings.md", "top.csv"),
        may_be_empty=("top.csv",),
        limits={"model_calls": 7, "run_python": 3},
    )
    agent.run(h.ctx)
    text = seen(h)
    assert "Produce the report." in text
    assert "- `findings.md`\n- `top.csv`" in text
    assert "## `profile` (scripts/profile.py)" in text
    assert "## `top` (queries/top.sql)" in text
    assert "At most 7 model calls" in text and "at most 3 run_python runs" in text
    assert "Reviewer's note" not in text


def test_a_reviewers_note_appears_in_the_prompt(make: Make) -> None:
    h = make([reply(text="ok")], note="Use net revenue, not gross.")
    agent.run(h.ctx)
    assert "# Reviewer's note" in seen(h)
    assert "Use net revenue, not gross." in seen(h)


def test_descriptions_are_in_every_prompt(make: Make) -> None:
    h = make([reply(text="ok")], description="Rank the regions by revenue.")
    h.ctx.flow = dataclasses.replace(h.ctx.flow, description="Weekly sales report.")
    text = prompt.task_message(h.ctx)
    assert "# What this is for" in text
    assert "The flow `t`: Weekly sales report." in text
    assert "This phase `report`: Rank the regions by revenue." in text
    assert "previous attempt" not in text  # a first attempt has none


def test_a_reopened_phase_sees_its_previous_attempt(make: Make) -> None:
    h = make([reply(text="ok")], outputs=("summary.md", "top.csv"), note="Drop the refunds.")
    h.ctx.attempt = 2
    run_dir = h.ctx.run_dir
    before = run_dir / "attempts" / "report" / "1" / "output"
    before.mkdir(parents=True)
    (before / "summary.md").write_text("North leads. " + "x" * 9_000)
    (before / "top.csv").write_text("region,revenue\nNorth,10\nSouth,-3\n")
    log = EventLog(run_dir / "events.jsonl")
    log.append(PhaseStarted(phase="report", attempt=1))
    log.append(ToolCalled(phase="report", tool="run_prepared", files=["top.csv"]))
    log.append(ToolCalled(phase="report", tool="run_python", status="refused", detail="no one"))
    log.append(PhaseStarted(phase="report", attempt=2))
    log.append(ToolCalled(phase="report", tool="write_output", detail="this attempt's"))
    text = prompt.task_message(h.ctx)
    assert "Drop the refunds." in text
    assert "# Your previous attempt (1)" in text
    assert "## `summary.md` (attempt 1)" in text and "North leads." in text
    assert "clipped: showing the first 5,000" in text
    assert "## `top.csv` (attempt 1)" in text and "2 rows, 2 columns" in text
    assert "- run_prepared: ok; wrote top.csv" in text
    assert "- run_python: refused (no one)" in text
    assert "this attempt's" not in text  # only the previous attempt's calls
