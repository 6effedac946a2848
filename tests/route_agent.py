"""A test agent that operates praxis from the route alone: it reads `status --json`, runs
`route.commands[0]` exactly as given (in a process whose PATH holds no `praxis`), reads the
route again, and stops when the route hands over to a person or says there is nothing to do.

At a Gate it may decide, the route first says to read each file (`praxis read`, which records
a receipt), then to decide with those receipts: the agent runs those commands like any other.
It knows one thing besides the route: the program to ask for the first status with (as a
user who ran `make run` knows `.venv/bin/praxis`). Every later command, status included, is
run by the program the route names.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VERBS = {
    *("status", "advance", "approve", "reject", "rerun", "cancel", "log", "accept", "run"),
    "read",  # a file the route says to read: its receipt is what a decision passes
}
NO_PRAXIS = "/usr/sbin:/usr/bin:/sbin:/bin"  # praxis is only in the virtualenv


def venv_program() -> list[str]:
    """How a user of this checkout runs praxis: the virtualenv's console script."""
    script = Path(sys.executable).with_name("praxis")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "praxis"]


def agent_env(**extra: str) -> dict[str, str]:
    """The agent's environment: no `praxis` on PATH, no actor chosen for it, traced."""
    env = {k: v for k, v in os.environ.items() if k != "PRAXIS_ACTOR"}
    env.update(PATH=NO_PRAXIS, PRAXIS_TRACE="1", **extra)
    assert shutil.which("praxis", path=NO_PRAXIS) is None
    return env


@dataclass
class Step:
    argv: list[str]
    code: int
    reason: str  # of the route the command was taken from
    who: str
    err: str


@dataclass
class Drive:
    steps: list[Step] = field(default_factory=list)
    route: dict[str, Any] = field(default_factory=dict)  # the last one read
    status: str = ""

    @property
    def codes(self) -> list[int]:
        return [s.code for s in self.steps]

    @property
    def decisions(self) -> list[Step]:
        """The Gate decisions it took."""
        return [s for s in self.steps if s.argv[len(program_of(s.argv))] in ("approve", "reject")]

    @property
    def handed_over(self) -> bool:
        return self.route.get("who") == "person"

    @property
    def finished(self) -> bool:
        return self.status == "done" and self.route.get("step") == "none"


def program_of(argv: list[str]) -> list[str]:
    """The items of an argv before its verb."""
    for i, word in enumerate(argv):
        if word in VERBS:
            return argv[:i]
    raise AssertionError(f"no praxis verb in {argv}")


def drive(
    flow: str, run: str, *, cwd: Path, limit: int = 25, env: dict[str, str] | None = None
) -> Drive:
    """Follow the route of ``run`` until a person is needed or nothing is left to do, at most
    ``limit`` commands."""
    env = env or agent_env()
    program = venv_program()
    out = Drive()
    for _ in range(limit * 4):
        seen = _run([*program, "status", flow, "--run", run, "--json"], cwd, env)
        assert seen.returncode == 0, seen.stderr
        data = json.loads(seen.stdout)
        out.route, out.status = data["route"], data["status"]
        route = out.route
        if route["who"] == "person" or route["step"] == "none":
            return out
        if route["step"] == "wait":
            time.sleep(0.5)  # another process advances the run
            continue
        argv = list(route["commands"][0])
        program = program_of(argv)  # from now on, the program the route names
        done = _run(argv, cwd, env)
        out.steps.append(Step(argv, done.returncode, route["reason"], route["who"], done.stderr))
        if len(out.steps) >= limit:
            break
    raise AssertionError(f"no end within {limit} commands: {[s.reason for s in out.steps]}")


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
