"""praxis/terminal.py: printed commands that work as printed, closed pipes met quietly, FLOW
found from inside a flow (through the `praxis` command)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from praxis import terminal
from praxis.cli import main
from praxis.flows.store import state_file

from .flows.helpers import three_phase_flow, write_flow
from .test_cli_edges import newest_run, run_cli

# the flows here ask for the fake backend: the person allows it, as --allow-local does
pytestmark = pytest.mark.usefixtures("local_env", "allow_local")

# -- printed commands work as printed ---------------------------------------------------------


def test_next_commands_use_the_invoked_path_when_praxis_is_not_on_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "venv" / "bin" / "praxis"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(script), "run"])
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    flow = three_phase_flow(tmp_path)
    code, out, _err = run_cli(capsys, "run", str(flow))
    assert code == 0
    assert f"  {script} approve {flow} --run " in out
    monkeypatch.setenv("PATH", str(script.parent))  # now `praxis` on PATH is this program
    code, out, _err = run_cli(capsys, "status", str(flow))
    assert f"next: praxis approve {flow} --run " in out


def test_python_dash_m_without_praxis_on_path_prints_python_dash_m() -> None:
    main_py = str(Path(terminal.__file__).with_name("__main__.py"))
    assert terminal.program(main_py, on_path="").endswith(" -m praxis")
    assert terminal.program(main_py, on_path="/usr/bin/praxis") == "praxis"


# -- a closed pipe ----------------------------------------------------------------------------


def _closed_stdout(args: list[str], cwd: Path, *, stderr_too: bool = False) -> tuple[int, str]:
    """Run praxis with its stdout (and stderr) a pipe whose reader is gone before it writes."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "praxis", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if stderr_too else subprocess.PIPE,
        env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"},
    )
    assert proc.stdout is not None
    proc.stdout.close()  # like `| head -0`: every write the program makes meets EPIPE
    err = ""
    if proc.stderr is not None:
        with proc.stderr:
            err = proc.stderr.read().decode()
    return proc.wait(timeout=120), err


def test_status_and_runs_into_a_closed_pipe_end_quietly(tmp_path: Path) -> None:
    flow = three_phase_flow(tmp_path)
    assert main(["run", str(flow)]) == 0
    for command in ("status", "runs", "log"):
        code, err = _closed_stdout([command, str(flow)], tmp_path)
        assert (code, err) == (0, ""), command


def test_a_run_writing_into_a_closed_pipe_goes_on(tmp_path: Path) -> None:
    flow = write_flow(
        tmp_path / "f",
        """
        sandbox: {backend: fake}
        phases:
          - {id: a, kind: script, script: s.py, outputs: [x.txt]}
          - {id: b, kind: script, script: s2.py, inputs: {working: [x.txt]}, outputs: [y.txt]}
        """,
        {
            "s.py": "for i in range(500): print('line', i)\nopen('x.txt', 'w').write('1')\n",
            "s2.py": "print('more')\nopen('y.txt', 'w').write('2')\n",
        },
    )
    code, _ = _closed_stdout(["run", str(flow)], tmp_path, stderr_too=True)
    state = state_file.load(newest_run(flow) / "run.json")
    assert state.status == "done", state.error
    assert [p.status for p in state.phases] == ["done", "done"]
    assert code == 0


# -- FLOW ------------------------------------------------------------------------------------


def test_flow_defaults_to_the_flow_holding_the_current_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    flow = three_phase_flow(tmp_path)
    monkeypatch.chdir(flow / "scripts")
    code, out, err = run_cli(capsys, "check")
    assert code == 0 and out.strip().startswith("demo: valid, 3 phase(s), NOT isolated"), err
    code, out, _ = run_cli(capsys, "run")
    assert code == 0 and "waiting at the Gate after review" in out
    assert len([r for r in (flow / "runs").iterdir() if not r.name.startswith(".")]) == 1


def test_a_file_that_is_not_flow_yaml_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = three_phase_flow(tmp_path)
    code, _, err = run_cli(capsys, "run", str(flow / "scripts" / "load.py"))
    assert code == 2
    assert err.splitlines()[0] == (
        f"NotAFlow: {flow / 'scripts' / 'load.py'} is not a flow: FLOW is a flow's folder "
        "(the one holding flow.yaml) or its flow.yaml"
    )
    assert not (flow / "runs").exists()
    assert main(["check", str(flow / "flow.yaml")]) == 0
