"""`praxis serve` keeps the flows it serves: a real server process, its time a simulated
clock (``$PRAXIS_TEST_CLOCK``, a file the test writes), stopped and started again between
ticks. One run per tick, none twice; a Gate past its deadline told once, restart or not."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from praxis.flows.definition import contract
from praxis.flows.model.events import GateEscalated
from praxis.flows.model.flow import Flow
from praxis.flows.report import keeping
from praxis.flows.store.handle import RunHandle
from praxis.flows.store.layout import list_run_ids, run_paths
from praxis.flows.store.state_file import load as load_state
from praxis.service import acting, keeper

from ..flows.helpers import Fakes
from ..flows.test_notify import Hook
from ..waiting import GIVE_UP

UTC = ZoneInfo("UTC")


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def until(cond: Callable[[], bool], what: str) -> None:
    """Wait for ``cond`` (a guard against a hang, not a measurement)."""
    deadline = time.monotonic() + GIVE_UP
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


@contextmanager
def serving(root: Path, clock: Path, env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [sys.executable, "-m", "praxis", "serve", "--root", str(root), "--port", str(port)]
    proc = subprocess.Popen(
        [*argv, "--allow-local"],
        env={**os.environ, **env, keeper.CLOCK_ENV: str(clock)},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=GIVE_UP)
        assert proc.returncode == 0, err
        assert "Traceback" not in err, err


def make_flow(root: Path, head: str, review: str = "none") -> Flow:
    root.mkdir(parents=True)
    (root / "a.py").write_text("open('a.txt', 'w').write(repr(params))\n")
    (root / "flow.yaml").write_text(
        f"sandbox: {{backend: fake}}\n{head}phases:\n"
        f"  - {{id: a, kind: script, script: a.py, outputs: [a.txt], review: {review}}}\n"
    )
    return contract.require(root)


def states(flow: Flow) -> list[tuple[str, str]]:
    found = []
    for run_id in list_run_ids(flow.root):
        st = load_state(run_paths(flow.root, run_id).state)
        found.append((str(st.params["tick"]), st.status))
    return found


def test_a_schedule_every_minute_starts_one_run_per_tick_across_a_restart(
    tmp_path: Path,
) -> None:
    flow = make_flow(tmp_path / "root" / "daily", 'schedule: {cron: "* * * * *", catchup: all}\n')
    clock = tmp_path / "clock"
    clock.write_text(str(at("2026-12-07T10:00:30")))
    record = flow.root / ".praxis" / "keeper.json"
    with serving(flow.root.parent, clock, {}):
        until(record.exists, "the keeper's first look")
        clock.write_text(str(at("2026-12-07T10:01:10")))
        until(lambda: states(flow) == [("2026-12-07T10:01:00+00:00", "done")], "tick 10:01")
    clock.write_text(str(at("2026-12-07T10:03:10")))  # 10:02 and 10:03 pass while it is down
    with serving(flow.root.parent, clock, {}):
        until(lambda: len(states(flow)) >= 3, "the missed ticks")
        clock.write_text(str(at("2026-12-07T10:04:05")))
        # the 4th run is started by a look after the one that started 10:02 and 10:03: a
        # tick started twice would be there by now
        until(lambda: len(states(flow)) >= 4 and {s for _, s in states(flow)} == {"done"},
              "tick 10:04 and every run done")  # fmt: skip
    assert sorted(states(flow)) == [(f"2026-12-07T10:0{m}:00+00:00", "done") for m in (1, 2, 3, 4)]


@pytest.fixture
def hook(tmp_path: Path) -> Iterator[tuple[Hook, dict[str, str]]]:
    hook = Hook()
    hook.thread.start()
    profile = tmp_path / "profile.yaml"
    profile.write_text(f"notify: {{team: {{webhook: '{hook.url}'}}}}\n")
    try:
        yield hook, {"PRAXIS_PROFILE": str(profile)}
    finally:
        hook.server.shutdown()
        hook.server.server_close()


def test_a_gate_past_its_deadline_is_told_once_across_a_restart(
    tmp_path: Path, hook: tuple[Hook, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    listener, env = hook
    monkeypatch.setenv("PRAXIS_PROFILE", env["PRAXIS_PROFILE"])
    monkeypatch.delenv("PRAXIS_NOTIFY_COMMAND", raising=False)
    flow = make_flow(
        tmp_path / "root" / "gated", "", "{required: true, deadline: 2d, escalate: team}"
    )
    state = acting.run(flow, sandbox=Fakes())
    run = RunHandle.open(flow, state.run)
    since, _ = keeping.waiting_since(run)
    assert since is not None
    clock = tmp_path / "clock"
    clock.write_text(str(since + 2 * 86400 + 5))

    def escalated() -> list[GateEscalated]:
        events = RunHandle.open(flow, run.id).log.read()
        return [e for e in events if isinstance(e, GateEscalated)]

    with serving(flow.root.parent, clock, env):
        until(lambda: len(listener.seen) >= 1, "the deadline's webhook")
    with serving(flow.root.parent, clock, env):
        record = flow.root / ".praxis" / "keeper.json"
        record.unlink()
        until(record.exists, "a look of the restarted keeper")  # written by every look
    assert [body["event"] for _, _, body in listener.seen] == ["deadline"]
    assert len(escalated()) == 1
