"""The example flows are golden tests: each runs end to end in the Docker sandbox."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from praxis.flows.definition import contract
from praxis.flows.engine import runner
from praxis.flows.store import state_file

from .labels import TEST_LABELS

FLOWS = Path(__file__).resolve().parent.parent / "flows"
EXAMPLES = sorted(p.name for p in FLOWS.iterdir() if (p / "flow.yaml").is_file())


def copy_flow(name: str, dest: Path, image: str) -> Path:
    """A copy of an example flow pinned to the test image and labelled for clean-up."""
    root = dest / name
    shutil.copytree(FLOWS / name, root, ignore=shutil.ignore_patterns("runs", "run.lock"))
    text = (root / "flow.yaml").read_text()
    labels = ", ".join(f'"{k}": "{v}"' for k, v in TEST_LABELS.items())
    pinned = f"sandbox: {{backend: docker, image: '{image}', labels: {{{labels}}}, timeout: 120}}"
    lines = [pinned if line.startswith("sandbox:") else line for line in text.splitlines()]
    (root / "flow.yaml").write_text("\n".join(lines) + "\n")
    return root


def praxis(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "praxis", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_flow_checks_clean(name: str) -> None:
    flow, report = contract.load(FLOWS / name)
    assert report.ok, report.errors
    assert flow is not None and flow.name == name


@pytest.mark.docker
def test_sales_report_in_docker_gate_edit_approve(tmp_path: Path, docker_image: str) -> None:
    flow = copy_flow("sales-report", tmp_path, docker_image)
    res = praxis("run", str(flow))
    assert res.returncode == 0, res.stderr
    assert "sandbox: docker" in res.stderr
    assert "waiting at the Gate after flag" in res.stdout
    assert "output/review.csv" in res.stdout
    status = json.loads(praxis("status", str(flow), "--json").stdout)
    assert (status["waiting"], status["gate"], status["backend"]) == ("gate", "flag", "docker")
    approve = status["next"][0]
    run_flag = f"--run {status['run']} --gate flag --attempt 1 --expect-revision"
    assert approve.startswith(f"praxis approve {flow} {run_flag} ")
    assert approve in res.stdout

    run_dir = flow / "runs" / status["run"]
    review = run_dir / "output" / "review.csv"
    edited = review.read_text().replace("negative amount,drop", "negative amount,keep")
    assert edited != review.read_text()
    runner.edit(flow, "review.csv", edited.encode(), expect_revision=status["revision"])
    res = praxis("approve", str(flow), "--expect-revision", str(status["revision"] + 1))
    assert res.returncode == 0, res.stderr
    assert state_file.load(run_dir / "run.json").status == "done"
    report = (run_dir / "output" / "report.md").read_text()
    assert "Orders left out after review: 2." in report  # the edited file was read
    assert "![Revenue by week](revenue_by_week.png)" in report  # a chart, drawn in the sandbox
    assert (run_dir / "output" / "revenue_by_week.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.docker
def test_notebook_example_in_docker(tmp_path: Path, docker_image: str) -> None:
    flow = copy_flow("notebook-example", tmp_path, docker_image)
    res = praxis("run", str(flow))
    assert res.returncode == 0, res.stderr
    run_dir = next((flow / "runs").iterdir())
    assert state_file.load(run_dir / "run.json").status == "done"
    assert (run_dir / "records" / "explore.ipynb").is_file()


@pytest.mark.docker
def test_agent_example_in_docker_with_a_scripted_model(tmp_path: Path, docker_image: str) -> None:
    flow = copy_flow("agent-example", tmp_path, docker_image)
    env = {
        "PRAXIS_MODEL": "praxis.agent.scripted:ScriptedChatModel",
        "PRAXIS_MODEL_SCRIPT": str(flow / "scripted-turn.json"),
    }
    res = praxis("run", str(flow), env=env)
    assert res.returncode == 0, res.stderr
    run_dir = next((flow / "runs").iterdir())
    state = state_file.load(run_dir / "run.json")
    assert (state.waiting, state.gate) == ("gate", "summarise")
    for name in ("totals.csv", "top_products.csv", "summary.md"):
        assert (run_dir / "output" / name).stat().st_size > 0
