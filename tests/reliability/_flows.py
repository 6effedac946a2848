"""Reliability suite helpers: small flows in tmp folders, the `praxis` CLI as a process or in
this one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

from praxis import cli
from praxis.flows.model import state as st
from praxis.flows.store import state_file

# Every container this session's flows create carries this label (checked in conftest.py).
SESSION_LABEL = "praxis.reliability"
SESSION = uuid.uuid4().hex[:12]


def write_flow(root: Path, yaml_text: str, files: dict[str, str] | None = None) -> Path:
    """A flow folder holding ``flow.yaml`` and ``files`` (dedented)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "flow.yaml").write_text(textwrap.dedent(yaml_text))
    for name, text in (files or {}).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def docker_sandbox(image: str, **options: Any) -> str:
    """The ``sandbox:`` line of a flow.yaml running on docker with this session's labels."""
    config = {
        "backend": "docker",
        "image": image,
        "labels": {"praxis.test": "1", SESSION_LABEL: SESSION},
        **options,
    }
    return "sandbox: " + json.dumps(config)


def praxis(
    *args: str, env: dict[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """Run the `praxis` command in a new process."""
    return subprocess.run(
        [sys.executable, "-m", "praxis", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


def praxis_here(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run the `praxis` command in this process: what ``praxis`` gives, without a process."""
    capsys.readouterr()
    code = cli.main(list(args))
    out = capsys.readouterr()
    return subprocess.CompletedProcess(["praxis", *args], code, out.out, out.err)


def popen_praxis(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "praxis", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def begin(flow: Path) -> Path:
    """Begin a run with the CLI; the run's folder."""
    res = praxis("begin", str(flow))
    assert res.returncode == 0, res.stderr
    return flow / "runs" / res.stdout.strip()


def only_run(flow: Path) -> Path:
    runs = sorted((flow / "runs").iterdir())
    assert len(runs) == 1, runs
    return runs[0]


def state_of(run: Path) -> st.RunState:
    return state_file.load(run / "run.json")


def event_kinds(run: Path) -> list[str]:
    lines = (run / "events.jsonl").read_text().splitlines()
    return [json.loads(line)["kind"] for line in lines if line.strip()]


def one_line_error(res: subprocess.CompletedProcess[str], prefix: str) -> str:
    """The error line of a refused command: it starts with ``prefix``, and no traceback."""
    assert "Traceback" not in res.stderr, res.stderr
    lines = [line for line in res.stderr.splitlines() if line.startswith(prefix)]
    assert len(lines) == 1, res.stderr
    return lines[0]
