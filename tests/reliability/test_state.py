"""docs/reliability.md items 8-12: run.json and events.jsonl survive errors, kills, corruption."""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from praxis.flows.definition import contract
from praxis.flows.model import state as st
from praxis.flows.model.events import RunStateChanged
from praxis.flows.model.machine import apply
from praxis.flows.model.moves import Transition
from praxis.flows.model.transitions import Fail, Finish, Rerun, Start
from praxis.flows.store import state_file
from praxis.flows.store.event_log import EventLog, EventLogCorrupt
from praxis.flows.store.handle import RunHandle, held

from ._flows import begin, one_line_error, praxis, praxis_here, write_flow

# every flow here asks for the fake or local backend: the person allows it
pytestmark = pytest.mark.usefixtures("local_env")

TWO_PHASES = """
    flow: tiny
    sandbox: {backend: fake, timeout: 30}
    phases:
      - id: a
        kind: script
        script: a.py
        outputs: [a.txt]
      - id: b
        kind: script
        script: b.py
        outputs: [b.txt]
"""
FILES = {"a.py": "open('a.txt', 'w').write('a')\n", "b.py": "open('b.txt', 'w').write('b')\n"}

# A cycle of real transitions that returns to where it began: paused at phase a.
CYCLE: list[Transition] = [
    Start(phase="a", pid=1),
    Finish(phase="a", hashes={"a.txt": "0" * 64}),
    Start(phase="b", pid=1),
    Fail(phase="b", error="boom"),
    Rerun(phase="a"),
]


def _state(revision: int = 0) -> st.RunState:
    state = st.new_run("r1", "tiny", ["a", "b"], now=1.0)
    for _ in range(revision):
        state = apply(state, CYCLE[state.revision % len(CYCLE)], now=2.0).state
    return state


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# --- item 8 -------------------------------------------------------------------------------


def test_item08_run_json_is_written_tmp_fsync_replace_fsync_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.json"
    calls: list[tuple[str, str]] = []
    kinds: dict[int, str] = {}
    real = {name: getattr(os, name) for name in ("open", "write", "fsync", "close", "replace")}

    def kind_of(fd: int) -> str:
        return kinds.get(fd, "?")

    def spy_open(p: Any, flags: int, *a: Any, **kw: Any) -> int:
        fd = real["open"](p, flags, *a, **kw)
        kinds[fd] = "dir" if Path(p) == tmp_path else f"file:{Path(p).name}"
        calls.append(("open", kinds[fd]))
        return fd

    def spy_write(fd: int, data: Any) -> int:
        calls.append(("write", kind_of(fd)))
        return real["write"](fd, data)

    def spy_fsync(fd: int) -> None:
        calls.append(("fsync", kind_of(fd)))
        real["fsync"](fd)

    def spy_close(fd: int) -> None:
        calls.append(("close", kind_of(fd)))
        kinds.pop(fd, None)
        real["close"](fd)

    def spy_replace(src: Any, dst: Any, **kw: Any) -> None:  # relative to the folder's fd
        calls.append(("replace", f"{Path(src).name}->{Path(dst).name}"))
        real["replace"](src, dst, **kw)

    for name, spy in (
        ("open", spy_open),
        ("write", spy_write),
        ("fsync", spy_fsync),
        ("close", spy_close),
        ("replace", spy_replace),
    ):
        monkeypatch.setattr(os, name, spy)
    state_file.save(_state(3), path)
    monkeypatch.undo()

    tmp_name = next(k.split(":", 1)[1] for op, k in calls if op == "open" and k != "dir")
    assert tmp_name.startswith(".run.") and tmp_name.endswith(".tmp")
    tmp = f"file:{tmp_name}"
    ops = [(op, k) for op, k in calls if op != "open"]
    writes = [i for i, c in enumerate(ops) if c == ("write", tmp)]
    assert writes, ops
    expected_tail = [
        ("fsync", tmp),
        ("close", tmp),
        ("replace", f"{tmp_name}->run.json"),
        ("fsync", "dir"),
        ("close", "dir"),
    ]
    assert ops[: writes[-1] + 1] == [("write", tmp)] * len(writes)
    assert ops[writes[-1] + 1 :] == expected_tail
    assert state_file.load(path).revision == 3
    assert _listing(tmp_path) == ["run.json"]


# --- item 9 -------------------------------------------------------------------------------


def _count_calls(monkeypatch: pytest.MonkeyPatch, path: Path) -> dict[str, int]:
    counts = {"write": 0, "fsync": 0, "replace": 0}
    for name in counts:
        real = getattr(os, name)

        def counting(
            *a: Any, _real: Callable[..., Any] = real, _name: str = name, **kw: Any
        ) -> Any:
            counts[_name] += 1
            return _real(*a, **kw)

        monkeypatch.setattr(os, name, counting)
    state_file.save(_state(1), path)
    monkeypatch.undo()
    return counts


def test_item09_error_injection_leaves_old_or_new_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "count").mkdir()
    counts = _count_calls(monkeypatch, tmp_path / "count" / "run.json")
    assert counts == {"write": counts["write"], "fsync": 2, "replace": 1} and counts["write"] >= 1
    cases = [(name, k) for name, n in counts.items() for k in range(1, n + 1)]
    outcomes: dict[tuple[str, int], int] = {}
    for name, k in cases:
        folder = tmp_path / f"{name}-{k}"
        folder.mkdir()
        path = folder / "run.json"
        old, new = _state(4), _state(5)
        state_file.save(old, path)
        real = getattr(os, name)
        seen = 0

        def failing(*a: Any, _real: Callable[..., Any] = real, _k: int = k, **kw: Any) -> Any:
            nonlocal seen
            seen += 1
            if seen == _k:
                raise OSError(28, "injected: no space left on device")
            return _real(*a, **kw)

        monkeypatch.setattr(os, name, failing)
        try:
            with pytest.raises(OSError, match="injected"):
                state_file.save(new, path)
        finally:
            monkeypatch.undo()
        loaded = state_file.load(path)
        assert loaded.to_dict() in (old.to_dict(), new.to_dict()), (name, k)
        assert _listing(folder) == ["run.json"], (name, k)  # no temp file remains
        outcomes[(name, k)] = loaded.revision
    # A failure before the rename keeps the old state; only the fsync of the folder comes after.
    n_fsync = counts["fsync"]
    assert {c: r for c, r in outcomes.items() if c != ("fsync", n_fsync)} == {
        c: 4 for c in outcomes if c != ("fsync", n_fsync)
    }
    assert outcomes[("fsync", n_fsync)] == 5


# --- item 10 ------------------------------------------------------------------------------


def _writer(flow_root: Path, run_id: str, announce: int) -> None:
    """The child: loop through real transitions, announcing each revision before writing it."""
    flow = contract.require(flow_root)
    run = RunHandle.open(flow, run_id)
    while True:
        transition = CYCLE[run.state.revision % len(CYCLE)]
        os.write(announce, f"{run.state.revision + 1}\n".encode())
        run.change(transition)


def test_item10_sigkill_sweep_never_leaves_an_unreadable_run(tmp_path: Path) -> None:
    flow_root = write_flow(tmp_path / "tiny", TWO_PHASES, FILES)
    run_dir = begin(flow_root)
    flow = contract.require(flow_root)
    announced = {state_file.load(run_dir / "run.json").revision}
    rng = random.Random(1234)
    kills, rounds_with_progress = 0, 0
    while kills < 200:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child never returns into pytest
            code = 0
            try:
                os.close(read_fd)
                _writer(flow_root, run_dir.name, write_fd)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as pipe:
            # Kill only once the writer is inside its loop (it announced a revision), at a
            # random point after that: every round then tests a kill mid-write sequence,
            # however slowly a loaded machine runs the child.
            first = pipe.readline()
            time.sleep(rng.uniform(0.0, 0.01))
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            assert os.WIFSIGNALED(status), "the writer stopped by itself: it hit an error"
            announced.update(int(line) for line in (first + pipe.read()).split(b"\n")[:-1])
        kills += 1
        state = state_file.load(run_dir / "run.json")  # every load succeeds
        assert state.revision in announced, state.revision
        rounds_with_progress += bool(first)
        events = EventLog(run_dir / "events.jsonl").read()  # a torn last line is tolerated
        assert events
        assert RunHandle.open(flow, run_dir.name).state.revision == state.revision
    assert rounds_with_progress == kills, "a writer was killed before it began writing"
    leftovers = [n for n in _listing(run_dir) if n.startswith(".run.")]
    assert len(leftovers) <= kills  # a kill between mkstemp and replace may leave a tmp file
    changes = [
        e for e in EventLog(run_dir / "events.jsonl").read() if isinstance(e, RunStateChanged)
    ]
    assert changes and all(e.revision in announced for e in changes)
    # The next opener under the lock appends what the last kill left out: then every change
    # that run.json holds has its events in the log exactly once, and no other change has any.
    with held(flow, run_dir.name):
        RunHandle.open(flow, run_dir.name).catch_up()
    final = state_file.load(run_dir / "run.json")
    assert _stamped(run_dir / "events.jsonl") == _expected_counts(run_dir, final.revision)


def _stamped(path: Path) -> dict[int, int]:
    """How many lines of the log are stamped with each revision (the events of that change)."""
    counts: dict[int, int] = {}
    for line in path.read_bytes().split(b"\n")[:-1]:
        rev = json.loads(line).get("rev")
        if rev is not None:
            counts[rev] = counts.get(rev, 0) + 1
    return counts


def _expected_counts(run_dir: Path, last: int) -> dict[int, int]:
    """How many events each change of the writers' cycle records, up to revision ``last``."""
    data = json.loads((run_dir / "run.json").read_text())
    state = st.new_run(data["run"], data["flow"], [p["id"] for p in data["phases"]], now=1.0)
    counts = {0: 1}  # run_begun
    while state.revision < last:
        change = apply(state, CYCLE[state.revision % len(CYCLE)], now=2.0)
        state = change.state
        counts[state.revision] = len(change.events)
    return counts


# --- item 11 ------------------------------------------------------------------------------

GOOD_FLOW = """
    flow: tiny
    sandbox: {backend: fake, timeout: 30}
    phases:
      - id: a
        kind: script
        script: a.py
        outputs: [a.txt]
"""


def _corruptions(good: bytes) -> dict[str, bytes]:
    data = json.loads(good)
    wrong = {
        "no phases": {k: v for k, v in data.items() if k != "phases"},
        "phases not a list": {**data, "phases": {"a": "pending"}},
        "cursor a string": {**data, "cursor": "0"},
        "revision a string": {**data, "revision": "3"},
        "unknown phase key": {**data, "phases": [{**data["phases"][0], "colour": "red"}]},
        "status unknown": {**data, "status": "exploded"},
        "future schema": {**data, "schema": st.SCHEMA + 1},
    }
    cases = {
        "truncated": good[: len(good) // 2],
        "empty": b"",
        "not JSON": b"\x00\x01 this is not json",
        "a list": b"[1, 2, 3]\n",
    }
    cases.update({k: json.dumps(v).encode() for k, v in wrong.items()})
    return cases


def test_item11_corrupt_run_json_is_refused_never_reset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = write_flow(tmp_path / "tiny", GOOD_FLOW, {"a.py": FILES["a.py"]})
    run = flow / "runs" / praxis_here(capsys, "begin", str(flow)).stdout.strip()
    good = (run / "run.json").read_bytes()
    for case, bad in _corruptions(good).items():
        (run / "run.json").write_bytes(bad)
        ways: list[Callable[[str], Any]] = [lambda c: praxis_here(capsys, c, str(flow))]
        if case == "not JSON":  # once also as a process of its own: the exit code crosses it
            ways.append(lambda c: praxis(c, str(flow)))
        for way in ways:
            for command in ("status", "advance"):
                res = way(command)
                assert res.returncode == 4, (case, command, res.stdout, res.stderr)
                line = one_line_error(res, "StateCorrupt: ")
                assert "run.json" in line, (case, line)
                assert (run / "run.json").read_bytes() == bad, (case, command)
        assert not (run / "output" / "a.txt").exists(), case
        if case == "future schema":
            assert "newer than this praxis" in line


# --- item 12 ------------------------------------------------------------------------------


def test_item12_torn_last_event_is_dropped_and_the_next_append_starts_clean(
    tmp_path: Path,
) -> None:
    flow = write_flow(tmp_path / "tiny", GOOD_FLOW, {"a.py": FILES["a.py"]})
    run = begin(flow)
    log = EventLog(run / "events.jsonl")
    before = log.read()
    whole = (run / "events.jsonl").read_bytes()
    with open(run / "events.jsonl", "ab") as fh:
        fh.write(b'{"kind": "phase_started", "phase": "torn-tail", "att')  # a crash mid-append
    assert [e.to_json() for e in log.read()] == [e.to_json() for e in before]
    res = praxis("log", str(flow))
    assert res.returncode == 0, res.stderr
    res = praxis("advance", str(flow))  # appends events after the torn line
    assert res.returncode == 0, res.stderr
    raw = (run / "events.jsonl").read_bytes()
    assert raw.startswith(whole) and b"torn-tail" not in raw
    assert all(json.loads(line) for line in raw.splitlines())
    kinds = [e.kind for e in log.read()]
    assert kinds.count("phase_started") == 1 and "phase_done" in kinds


def test_item12_corruption_in_the_middle_is_reported_with_its_line(tmp_path: Path) -> None:
    flow = write_flow(tmp_path / "tiny", GOOD_FLOW, {"a.py": FILES["a.py"]})
    run = begin(flow)
    assert praxis("advance", str(flow)).returncode == 0
    lines = (run / "events.jsonl").read_bytes().splitlines(keepends=True)
    assert len(lines) >= 4
    lines[2] = b'{"kind": "phase_started", "pha\n'
    (run / "events.jsonl").write_bytes(b"".join(lines))
    with pytest.raises(EventLogCorrupt) as caught:
        EventLog(run / "events.jsonl").read()
    assert caught.value.line == 3
    res = praxis("log", str(flow))
    assert res.returncode == 4, (res.stdout, res.stderr)
    line = one_line_error(res, "EventLogCorrupt: ")
    assert "events.jsonl: line 3:" in line
    assert (run / "events.jsonl").read_bytes() == b"".join(lines)  # reported, not repaired
