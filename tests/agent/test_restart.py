"""An approval pending inside a phase when the process dies: the phase is failed on restart."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from praxis.flows import state as st

FLOW = """
    sandbox: {backend: local, timeout: 60}
    phases:
      - id: ask
        kind: agent
        prompt: task.md
        outputs: [x.txt]
"""

CHILD = """
import sys, threading
from pathlib import Path
from praxis.flows import runner

flow, marker = Path(sys.argv[1]), Path(sys.argv[2])

def approver(phase, code):
    marker.write_text(code)
    threading.Event().wait()  # nobody ever answers: the process is killed while waiting
    return False

runner.advance(flow, approver=approver)
"""


def praxis(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "praxis", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_killed_while_an_approval_is_pending(tmp_path: Path) -> None:
    flow = tmp_path / "flow"
    flow.mkdir()
    (flow / "flow.yaml").write_text(textwrap.dedent(FLOW))
    (flow / "task.md").write_text("Write x.txt.\n")
    replies = [{"tool_calls": [{"name": "run_python", "args": {"code": "print('unprepared')"}}]}]
    (tmp_path / "turn.json").write_text(json.dumps(replies))
    env = {
        **os.environ,
        "PRAXIS_MODEL": "praxis.agent.scripted:ScriptedChatModel",
        "PRAXIS_MODEL_SCRIPT": str(tmp_path / "turn.json"),
    }
    assert praxis("begin", str(flow), env=env).returncode == 0
    marker = tmp_path / "asked"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(flow), str(marker)], env=env)
    try:
        deadline = time.monotonic() + 90
        while not marker.exists():
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        run = sorted((flow / "runs").iterdir())[-1]
        assert st.load(run / "run.json").phase("ask").waiting == "approval"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    res = praxis("status", str(flow), env=env)
    assert "approval lost in restart" in res.stdout
    res = praxis("advance", str(flow), env=env)
    assert res.returncode == 1
    assert "PhaseFailed: ask: approval lost in restart" in res.stderr
    assert praxis("rerun", str(flow), "--from", "ask", env=env).returncode == 0
    assert st.load(run / "run.json").phase("ask").status == "pending"
