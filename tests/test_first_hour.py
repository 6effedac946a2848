"""What a new user reads in their first hour, each message with its fix (the CLI in-process)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from praxis.cli import main

from .flows.helpers import one_script_flow, write_flow

EXAMPLES = Path(__file__).resolve().parent.parent / "flows"


def _above_two_flows(tmp_path: Path) -> Path:
    top = tmp_path / "work"
    for name in ("sales-report", "notebook-example"):
        skip = shutil.ignore_patterns("runs")
        shutil.copytree(EXAMPLES / name, top / "flows" / name, ignore=skip)
    return top


@pytest.mark.parametrize("verb", ["status", "runs"])
def test_status_and_runs_above_several_flows_list_them(
    verb: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    top = _above_two_flows(tmp_path)
    monkeypatch.chdir(top)
    assert main([verb]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ". holds no flow.yaml; the flows below it:"
    assert out[1].split() == ["flows/notebook-example", "no", "runs", "yet"]
    assert out[2].split() == ["flows/sales-report", "no", "runs", "yet"]
    assert out[3].startswith("next: ") and out[3].endswith(" status flows/notebook-example")


def test_the_flow_with_the_newest_run_is_the_next_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    top = tmp_path / "work"
    one_script_flow(top / "b", "print(1)\n")
    one_script_flow(top / "a", "print(1)\n")
    monkeypatch.setenv("PRAXIS_SANDBOX", "fake")
    assert main(["begin", str(top / "b")]) == 0
    capsys.readouterr()
    monkeypatch.chdir(top)
    assert main(["status"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == ["a", "no", "runs", "yet"]
    assert out[2].split()[0] == "b" and out[2].endswith(": paused")
    assert out[3].endswith(" status b")


def test_another_command_above_the_flows_names_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    top = _above_two_flows(tmp_path)
    monkeypatch.chdir(top)
    assert main(["check"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (
        "NoFlowHere: . is not a flow: it holds no flow.yaml; flows below it: "
        "flows/notebook-example, flows/sales-report"
    )
    assert err[1].endswith(" status flows/notebook-example")


def test_a_folder_with_no_flow_below_points_to_the_first_flow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["status"]) == 2
    err = capsys.readouterr().err
    assert "holds no flow.yaml; no flow below it either (README: Your first flow)" in err


@pytest.mark.docker
def test_a_missing_module_on_docker_names_sandbox_packages_and_the_build(
    tmp_path: Path, docker_image: str, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = write_flow(
        tmp_path / "f",
        "sandbox: {backend: docker}\nphases:\n  - {id: a, kind: script, script: s.py}\n",
        {"s.py": "import seaborn\n"},
    )
    assert main(["run", str(flow)]) == 1
    err = capsys.readouterr().err.splitlines()
    failed = next(line for line in err if line.startswith("PhaseFailed:"))
    said, _, how = failed.partition(", then `")
    assert said == (
        "PhaseFailed: a: s.py line 1: ModuleNotFoundError: No module named 'seaborn': add "
        "'seaborn' to sandbox.packages in flow.yaml (or requirements.txt beside it)"
    )
    assert how.endswith("praxis sandbox build FLOW`")  # by the name praxis is reachable by
    nexts = [line.strip() for line in err if line.strip().startswith(("next:", "then:"))]
    assert nexts[0].startswith("next: ") and f"sandbox build {flow}" in nexts[0]
    assert nexts[1].startswith("then: ") and f"rerun {flow}" in nexts[1]


def test_a_failed_check_names_the_line_an_editor_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = write_flow(
        tmp_path / "f",
        """
        sandbox: {backend: fake}
        phases:
          - id: a
            kind: script
            script: s.py
            outputs: [t.csv]
            checks: {t.csv: {unique: [id]}}
        """,
        {"s.py": "open('t.csv', 'w').write('id,note\\n1,\"two\\nlines\"\\n2,ok\\n2,again\\n')\n"},
    )
    assert main(["run", str(flow)]) == 1
    err = capsys.readouterr().err
    assert "t.csv: check unique failed on column 'id': 1 row(s) with repeated values; " in err
    assert "data row 3 (line 5)" in err  # row 1 spans lines 2-3: line 5 is what an editor shows
