"""docs/reliability.md items 24 and 25 on the docker backend: limits cannot be switched off,
and text a phase controls never reaches the terminal with raw control characters."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..test_cli_edges import HOSTILE_FILES, HOSTILE_FLOW, _hostile_session
from ._flows import docker_sandbox, praxis, write_flow

OFF = {"memory": "0", "cpus": 0, "pids": 0, "timeout": 0, "tmp_size": "0m", "disk": "0m"}


@pytest.mark.docker
@pytest.mark.parametrize(("key", "value"), [*OFF.items(), ("collect", "0m")])
def test_item24_a_limit_cannot_be_switched_off(
    docker_image: str, tmp_path: Path, key: str, value: object
) -> None:
    flow = write_flow(
        tmp_path / "flow",
        f"""
        {docker_sandbox(docker_image, **{key: value})}
        phases:
          - {{id: work, kind: script, script: work.py, outputs: [out.txt]}}
        """,
        {"work.py": "open('out.txt', 'w').write('ran')\n"},
    )
    checked = praxis("check", str(flow))
    assert checked.returncode == 2, checked.stdout + checked.stderr
    assert f"sandbox.{key}:" in checked.stdout + checked.stderr
    ran = praxis("run", str(flow))
    assert ran.returncode == 2 and "Traceback" not in ran.stderr, ran.stderr
    assert not (flow / "runs").exists() or not any(
        p for p in (flow / "runs").iterdir() if not p.name.startswith(".")
    )  # refused before a run began: nothing ran unlimited


@pytest.mark.docker
def test_item25_phase_text_reaches_the_terminal_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], docker_image: str
) -> None:
    sandbox = docker_sandbox(docker_image, timeout=120).removeprefix("sandbox: ")
    flow = write_flow(tmp_path / "f", HOSTILE_FLOW.format(sandbox=sandbox), HOSTILE_FILES)
    _hostile_session(flow, capsys)  # run, the Gate's preview, approve, status, log, runs
