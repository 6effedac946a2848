"""The keeper (praxis.service.keeper): one run per tick of a schedule and per settled version
of a trigger's file, missed ticks by ``catchup``, a Gate past its deadline told once; on the
fake sandbox, with the time given by a simulated clock (nothing waits for a tick)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from praxis.errors import RecordCorrupt
from praxis.flows.definition import contract
from praxis.flows.model.events import GateEscalated, Notified
from praxis.flows.model.flow import Flow
from praxis.flows.report import keeping
from praxis.flows.store import keeper_state
from praxis.flows.store.handle import RunHandle
from praxis.flows.store.layout import list_run_ids, run_paths
from praxis.flows.store.state_file import load as load_state
from praxis.service import acting, keeper

from .flows.helpers import Fakes
from .flows.test_notify import Hook
from .waiting import GIVE_UP, waits_for_lock

UTC = ZoneInfo("UTC")


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def make_flow(root: Path, head: str, review: str = "none") -> Flow:
    root.mkdir(parents=True, exist_ok=True)
    (root / "a.py").write_text("open('a.txt', 'w').write(repr(params))\n")
    (root / "flow.yaml").write_text(
        "flow: kept\nsandbox: {backend: fake}\n"
        + textwrap.dedent(head)
        + "phases:\n"
        + f"  - {{id: a, kind: script, script: a.py, outputs: [a.txt], review: {review}}}\n"
    )
    return contract.require(root)


def params_of(flow: Flow) -> list[dict[str, object]]:
    return [load_state(run_paths(flow.root, r).state).params for r in list_run_ids(flow.root)]


def ticks_of(flow: Flow) -> list[str]:
    return [str(p["tick"]) for p in params_of(flow)]


def every_minute(tmp_path: Path, catchup: str) -> Flow:
    return make_flow(tmp_path / "f", f'schedule: {{cron: "* * * * *", catchup: {catchup}}}\n')


# -- ticks ------------------------------------------------------------------------------------


def test_each_tick_starts_one_run_and_looking_again_starts_none(tmp_path: Path) -> None:
    flow = every_minute(tmp_path, "latest")
    clock = Clock(at("2026-12-07T10:00:30"))
    assert keeper.tend(flow, clock=clock) == []  # ticks count from the first look
    clock.now = at("2026-12-07T10:01:05")
    (started,) = keeper.tend(flow, clock=clock)
    assert started.why == "tick 2026-12-07T10:01:00+00:00"
    assert keeper.tend(flow, clock=clock) == []
    assert ticks_of(flow) == ["2026-12-07T10:01:00+00:00"]
    record = keeper_state.read(flow.root)["schedule"]
    assert [(t["state"], t["run"]) for t in record["ticks"]] == [("started", started.run)]


def test_catchup_latest_starts_the_newest_missed_tick(tmp_path: Path) -> None:
    flow = every_minute(tmp_path, "latest")
    clock = Clock(at("2026-12-07T10:00:30"))
    keeper.tend(flow, clock=clock)
    clock.now = at("2026-12-07T10:05:20")  # 10:01 .. 10:05 missed
    assert len(keeper.tend(flow, clock=clock)) == 1
    assert ticks_of(flow) == ["2026-12-07T10:05:00+00:00"]
    assert keeper_state.read(flow.root)["schedule"]["skipped"] == 4


def test_catchup_all_starts_each_missed_tick_once(tmp_path: Path) -> None:
    flow = every_minute(tmp_path, "all")
    clock = Clock(at("2026-12-07T10:00:30"))
    keeper.tend(flow, clock=clock)
    clock.now = at("2026-12-07T10:03:20")
    assert len(keeper.tend(flow, clock=clock)) == 3
    clock.now = at("2026-12-07T10:04:01")
    assert len(keeper.tend(flow, clock=clock)) == 1
    assert ticks_of(flow) == [f"2026-12-07T10:0{m}:00+00:00" for m in (1, 2, 3, 4)]


def test_catchup_none_skips_missed_ticks(tmp_path: Path) -> None:
    flow = make_flow(tmp_path / "f", 'schedule: {cron: "*/5 * * * *", catchup: none}\n')
    clock = Clock(at("2026-12-07T10:00:30"))
    keeper.tend(flow, clock=clock)
    clock.now = at("2026-12-07T10:05:20")  # 20 s late: on time (ticks.GRACE)
    assert len(keeper.tend(flow, clock=clock)) == 1
    clock.now = at("2026-12-07T10:22:00")  # 10:10, 10:15 and 10:20 (2 min late) missed
    assert keeper.tend(flow, clock=clock) == []
    assert keeper_state.read(flow.root)["schedule"]["skipped"] == 3
    clock.now = at("2026-12-07T10:25:01")  # the next tick on time runs
    assert len(keeper.tend(flow, clock=clock)) == 1
    assert ticks_of(flow) == ["2026-12-07T10:05:00+00:00", "2026-12-07T10:25:00+00:00"]


def test_a_changed_schedule_counts_its_ticks_from_then(tmp_path: Path) -> None:
    flow = every_minute(tmp_path, "all")
    clock = Clock(at("2026-12-07T10:00:30"))
    keeper.tend(flow, clock=clock)
    hourly = make_flow(flow.root, 'schedule: {cron: "0 * * * *", catchup: all}\n')
    clock.now = at("2026-12-07T10:30:00")
    assert keeper.tend(hourly, clock=clock) == []  # not the half hour of minutes missed
    clock.now = at("2026-12-07T11:00:10")
    assert [s.why for s in keeper.tend(hourly, clock=clock)] == ["tick 2026-12-07T11:00:00+00:00"]


def test_a_claim_a_crash_left_finds_its_run_or_begins_it(tmp_path: Path) -> None:
    """A keeper killed after it claimed a tick: between the claim and the run (the run is
    begun on the next look) or after the run was begun (it is found, not begun again)."""
    flow = every_minute(tmp_path, "all")
    clock = Clock(at("2026-12-07T10:00:30"))
    keeper.tend(flow, clock=clock)

    class Killed(BaseException):
        pass

    def killed_before(flow: Flow, params: dict[str, str]) -> str:
        raise Killed()

    def killed_after(flow: Flow, params: dict[str, str]) -> str:
        keeper.begin(flow, params)
        raise Killed()

    clock.now = at("2026-12-07T10:01:10")
    with pytest.raises(Killed):
        keeper.tend(flow, clock=clock, start=killed_before)
    assert list_run_ids(flow.root) == []
    clock.now = at("2026-12-07T10:02:10")
    with pytest.raises(Killed):
        keeper.tend(flow, clock=clock, start=killed_after)  # begins 10:01, killed
    assert ticks_of(flow) == ["2026-12-07T10:01:00+00:00"]
    with pytest.raises(Killed):
        keeper.tend(flow, clock=clock, start=killed_after)  # 10:01 found; 10:02 begun, killed
    states = [t["state"] for t in keeper_state.read(flow.root)["schedule"]["ticks"]]
    assert states == ["started", "starting"]
    started = keeper.tend(flow, clock=clock)  # 10:02 is found: nothing begun twice
    assert started == []
    assert ticks_of(flow) == ["2026-12-07T10:01:00+00:00", "2026-12-07T10:02:00+00:00"]


def test_two_keepers_on_one_folder_start_one_run_per_tick(tmp_path: Path) -> None:
    """Two `praxis schedule --once` processes at the same moment: the keeper's lock takes
    them in turn, the record says what the first one started."""
    flow = every_minute(tmp_path, "all")
    clock_file = tmp_path / "clock"
    clock_file.write_text(str(at("2026-12-07T10:00:30")))
    keeper.tend(flow, clock=keeper.file_clock(clock_file))
    clock_file.write_text(str(at("2026-12-07T10:04:10")))
    env = {**os.environ, keeper.CLOCK_ENV: str(clock_file)}
    argv = [sys.executable, "-m", "praxis", "schedule", str(flow.root), "--once"]
    argv += ["--no-advance", "--allow-local"]
    both = [subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True) for _ in "ab"]
    said = [p.communicate(timeout=120)[1] for p in both]
    assert [p.returncode for p in both] == [0, 0], said
    assert sorted(ticks_of(flow)) == [f"2026-12-07T10:0{m}:00+00:00" for m in (1, 2, 3, 4)]
    assert sum(s.count("started run") for s in said) == 4
    assert any("nothing due" in s for s in said)


# -- files ------------------------------------------------------------------------------------


@pytest.fixture
def triggered(tmp_path: Path) -> Flow:
    flow = make_flow(tmp_path / "f", 'trigger: {files: "incoming/*.csv", settle: 30s}\n')
    (flow.root / "incoming").mkdir()
    return flow


def files_of(flow: Flow) -> list[str]:
    return [str(p["file"]) for p in params_of(flow)]


def test_a_file_still_being_written_starts_once_it_settled_once(triggered: Flow) -> None:
    flow, clock = triggered, Clock(1000.0)
    data = flow.root / "incoming" / "a.csv"
    data.write_text("id,amount\n")
    assert keeper.tend(flow, clock=clock) == []
    clock.now += 20
    with data.open("a") as f:  # still being written: it changed, so it settles from now
        f.write("1,5\n")
    assert keeper.tend(flow, clock=clock) == []
    clock.now += 25  # 45 s since it was first seen, 25 since it last changed
    assert keeper.tend(flow, clock=clock) == []
    clock.now += 6
    (started,) = keeper.tend(flow, clock=clock)
    assert started.why == "file incoming/a.csv"
    clock.now += 600
    assert keeper.tend(flow, clock=clock) == []  # this version is handled
    assert files_of(flow) == ["incoming/a.csv"]


def test_a_changed_file_is_a_new_version_and_runs_again(triggered: Flow) -> None:
    flow, clock = triggered, Clock(1000.0)
    data = flow.root / "incoming" / "a.csv"
    data.write_text("id\n1\n")
    keeper.tend(flow, clock=clock)
    clock.now += 31
    assert len(keeper.tend(flow, clock=clock)) == 1
    data.write_text("id\n1\n2\n")
    keeper.tend(flow, clock=clock)
    clock.now += 31
    assert len(keeper.tend(flow, clock=clock)) == 1
    assert files_of(flow) == ["incoming/a.csv", "incoming/a.csv"]


def test_links_dot_files_and_other_names_start_nothing(triggered: Flow, tmp_path: Path) -> None:
    flow, clock = triggered, Clock(1000.0)
    outside = tmp_path / "secret.csv"
    outside.write_text("x\n")
    (flow.root / "incoming" / "link.csv").symlink_to(outside)
    (flow.root / "incoming" / ".part.csv").write_text("x\n")
    (flow.root / "incoming" / "notes.txt").write_text("x\n")
    (flow.root / "incoming" / "sub.csv").mkdir()
    keeper.tend(flow, clock=clock)
    clock.now += 60
    assert keeper.tend(flow, clock=clock) == []


def test_a_trigger_folder_that_is_a_link_is_not_followed(tmp_path: Path) -> None:
    flow = make_flow(tmp_path / "f", 'trigger: {files: "incoming/*.csv", settle: 1s}\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "a.csv").write_text("x\n")
    (flow.root / "incoming").symlink_to(elsewhere)
    clock = Clock(1000.0)
    keeper.tend(flow, clock=clock)
    clock.now += 60
    assert keeper.tend(flow, clock=clock) == []


# -- Gate deadlines ---------------------------------------------------------------------------


@pytest.fixture
def hook(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Hook]:
    monkeypatch.delenv("PRAXIS_NOTIFY_COMMAND", raising=False)
    hook = Hook()
    hook.thread.start()
    profile = tmp_path / "profile.yaml"
    profile.write_text(f"notify: {{team: {{webhook: '{hook.url}'}}}}\n")
    monkeypatch.setenv("PRAXIS_PROFILE", str(profile))
    try:
        yield hook
    finally:
        hook.server.shutdown()
        hook.server.server_close()


def gated_run(tmp_path: Path) -> tuple[Flow, RunHandle]:
    flow = make_flow(tmp_path / "g", "", review="{required: true, deadline: 2d, escalate: team}")
    state = acting.run(flow, sandbox=Fakes())
    assert state.waiting == "gate"
    return flow, RunHandle.open(flow, state.run)


def test_a_gate_past_its_deadline_is_told_once(tmp_path: Path, hook: Hook) -> None:
    flow, run = gated_run(tmp_path)
    since, _ = keeping.waiting_since(run)
    assert since is not None
    clock = Clock(since + 86400)
    keeper.tend(flow, clock=clock)
    assert hook.seen == []
    left = keeping.time_left(flow, RunHandle.open(flow, run.id), clock.now)
    assert left == pytest.approx(86400) and keeping.left_words(left) == "1 d 00 h left"
    clock.now = since + 2 * 86400 + 1
    keeper.tend(flow, clock=clock)
    keeper.tend(flow, clock=clock)  # a second look, as after a restart: the event says told
    ((method, _, body),) = hook.seen
    assert method == "POST" and body["event"] == "deadline" and body["phase"] == "a"
    assert set(body) == {"flow", "run", "event", "status", "phase", "url"}
    events = RunHandle.open(flow, run.id).log.read()
    (told,) = [e for e in events if isinstance(e, GateEscalated)]
    assert (told.phase, told.since, told.targets) == ("a", since, ["team"])
    assert [e.about for e in events if isinstance(e, Notified)] == ["deadline"]


def test_status_shows_the_time_left_and_the_next_tick(tmp_path: Path, hook: Hook) -> None:
    flow, run = gated_run(tmp_path)
    since, _ = keeping.waiting_since(run)
    assert since is not None
    clock_file = tmp_path / "clock"
    clock_file.write_text(str(since + 3600))
    env = {**os.environ, keeper.CLOCK_ENV: str(clock_file)}
    argv = [sys.executable, "-m", "praxis", "status", str(flow.root)]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120).stdout
    assert "gate deadline: 1 d 23 h left" in out
    as_json = subprocess.run([*argv, "--json"], env=env, capture_output=True, text=True,
                             timeout=120).stdout  # fmt: skip
    assert json.loads(as_json)["deadline_left"] == pytest.approx(2 * 86400 - 3600)
    sched = make_flow(tmp_path / "s", 'schedule: {cron: "0 6 * * 1-5", timezone: Europe/Berlin}\n')
    clock_file.write_text(str(datetime(2026, 12, 4, 12, tzinfo=UTC).timestamp()))  # a Friday
    acting.begin(sched)
    out = subprocess.run([*argv[:-1], str(sched.root)], env=env, capture_output=True, text=True,
                         timeout=120).stdout  # fmt: skip
    assert "next tick 2026-12-07T06:00:00+01:00" in out


def test_the_record_keeps_the_newest_ticks_only(tmp_path: Path) -> None:
    flow = every_minute(tmp_path, "all")
    clock = Clock(at("2026-12-07T10:00:30"))
    keeper.tend(flow, clock=clock, start=lambda f, p: "r")
    clock.now = at("2026-12-07T11:00:30")
    assert len(keeper.tend(flow, clock=clock, start=lambda f, p: "r")) == 24
    assert len(keeper_state.read(flow.root)["schedule"]["ticks"]) == keeper_state.KEPT_TICKS


def test_a_second_keeper_waits_for_the_first_and_starts_nothing_twice(tmp_path: Path) -> None:
    """Keeper B looks while keeper A, holding the lock, begins its first run: B waits at the
    lock (seen in the kernel, not timed) and, let in, finds every due tick started."""
    flow = every_minute(tmp_path, "all")
    clock = Clock(at("2026-12-07T10:00:30"))
    keeper.tend(flow, clock=clock)
    clock.now = at("2026-12-07T10:03:10")
    second: list[keeper.Started] = []
    b = threading.Thread(target=lambda: second.extend(keeper.tend(flow, clock=clock)))

    def a_begins(flow: Flow, params: dict[str, str]) -> str:
        if not b.is_alive():
            b.start()
            waits_for_lock(b, keeper_state.lock_path(flow.root))
        return keeper.begin(flow, params)

    first = keeper.tend(flow, clock=clock, start=a_begins)
    b.join(GIVE_UP)
    assert len(first) == 3 and second == []
    assert ticks_of(flow) == [f"2026-12-07T10:0{m}:00+00:00" for m in (1, 2, 3)]


def test_a_praxis_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    flow = every_minute(tmp_path, "all")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (flow.root / ".praxis").symlink_to(elsewhere)
    with pytest.raises(RecordCorrupt, match="not a folder"):
        keeper.tend(flow, clock=Clock(at("2026-12-07T10:00:30")))
    assert list(elsewhere.iterdir()) == []


# -- praxis schedule --------------------------------------------------------------------------


def schedule_cli(flow: Flow, clock_file: Path, *more: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "praxis", "schedule", str(flow.root), *more]
    env = {**os.environ, keeper.CLOCK_ENV: str(clock_file)}
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=GIVE_UP)


def test_praxis_schedule_once_starts_and_advances_what_is_due(tmp_path: Path) -> None:
    flow = every_minute(tmp_path, "latest")
    clock_file = tmp_path / "clock"
    clock_file.write_text(str(at("2026-12-07T10:00:30")))
    first = schedule_cli(flow, clock_file, "--once", "--allow-local", "--quiet")
    assert first.returncode == 0 and "kept: nothing due" in first.stderr
    clock_file.write_text(str(at("2026-12-07T10:01:30")))
    done = schedule_cli(flow, clock_file, "--once", "--allow-local", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "(tick 2026-12-07T10:01:00+00:00)" in done.stderr
    (run_id,) = list_run_ids(flow.root)
    state = load_state(run_paths(flow.root, run_id).state)
    assert state.status == "done" and state.params["tick"] == "2026-12-07T10:01:00+00:00"
    assert (
        "'tick': '2026-12-07T10:01:00+00:00'"
        in (run_paths(flow.root, run_id).out("a.txt")).read_text()
    )


def test_praxis_schedule_says_what_is_missing_in_one_line(tmp_path: Path) -> None:
    plain = make_flow(tmp_path / "plain", "")
    clock_file = tmp_path / "clock"
    clock_file.write_text("0")
    nothing = schedule_cli(plain, clock_file, "--once")
    assert nothing.returncode == 2
    assert nothing.stderr.splitlines()[0].startswith("Usage: kept has no schedule:, trigger:")
    kept = every_minute(tmp_path, "latest")
    once = schedule_cli(kept, clock_file)
    assert once.returncode == 2 and "add --once" in once.stderr.splitlines()[0]


def test_praxis_check_says_what_starts_the_flow_by_itself(tmp_path: Path, hook: Hook) -> None:
    flow = make_flow(
        tmp_path / "f",
        'schedule: {cron: "0 6 * * 1-5", timezone: Europe/Berlin}\n'
        'trigger: {files: "incoming/*.csv", settle: 2min}\n',
        review="{required: true, deadline: 2d, escalate: team}",
    )
    clock_file = tmp_path / "clock"
    clock_file.write_text(str(at("2026-12-04T12:00:00")))  # a Friday
    argv = [sys.executable, "-m", "praxis", "check", str(flow.root)]
    env = {**os.environ, keeper.CLOCK_ENV: str(clock_file)}
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=GIVE_UP).stdout
    assert "  notify target team (phases.a.review.escalate): ok: http://127.0.0.1:" in out
    assert (
        "schedule: 0 6 * * 1-5 (Europe/Berlin, catchup latest): "
        "next tick 2026-12-07T06:00:00+01:00, run parameter tick"
    ) in out
    assert "trigger: a run per file incoming/*.csv once unchanged for 2 min 00 s" in out
    assert "Gate after a: after 2 d 00 h waiting, team told" in out
