"""A phase's printed output is visible while it runs: runs/<run>/live/<phase>.log, the
terminal of `praxis run` (not with --quiet), and `praxis log --follow`."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from praxis.console import LiveTail, Progress, escape
from praxis.flows.engine import runner
from praxis.flows.model import events as ev
from praxis.flows.model.state import RunState
from praxis.flows.store import live
from praxis.flows.store.handle import RunHandle

from .helpers import advance, in_thread

# prints a line every 0.5 s until the file `stop` appears in the workspace (or 5 minutes)
TICKS = """\
import os, time
for i in range(600):
    print(f"tick {i}", flush=True)
    if os.path.exists("stop"):
        break
    time.sleep(0.5)
"""


def ticking_flow(root: Path, script: str = TICKS) -> Path:
    root.mkdir(parents=True)
    (root / "ticks.py").write_text(script)
    (root / "flow.yaml").write_text(
        "flow: live\nsandbox: {backend: local, timeout: 600}\nphases:\n"
        "  - id: ticks\n    kind: script\n    script: ticks.py\n"
    )
    return root


def wait_for(predicate, what: str, tries: int = 2400) -> None:  # type: ignore[no-untyped-def]
    for _ in range(tries):
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"never saw {what}")


def test_the_live_log_holds_the_first_line_while_the_phase_runs(tmp_path: Path) -> None:
    root = ticking_flow(tmp_path / "flow")
    run = runner.begin(root)
    result: list[RunState] = []
    worker = threading.Thread(target=in_thread(lambda: result.append(advance(root, run.id))))
    worker.start()
    log = live.path(root / "runs" / run.id, "ticks")
    try:
        wait_for(lambda: log.exists() and "tick 0\n" in log.read_text(), "tick 0 in the live log")
        still = RunHandle.open(runner.load_flow(root), run.id).state.phase("ticks").status
    finally:
        (root / "runs" / run.id / "workspace" / "stop").write_text("")
        worker.join(120)
    assert still == "running"  # read from the file while the phase had not finished
    assert result and result[0].status == "done", result
    assert log.read_text().startswith("tick 0\ntick 1\n")


def praxis(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "praxis", *args, "--allow-local"],  # its flow is local
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_praxis_run_prints_the_output_under_the_phase_and_quiet_hides_it(tmp_path: Path) -> None:
    script = "import time\nfor i in range(3):\n    print(f'tick {i}\\x1b[2J')\n"
    script += "    time.sleep(0.5)\n"
    root = ticking_flow(tmp_path / "flow", script)
    res = praxis("run", str(root))
    assert res.returncode == 0, res.stderr
    lines = res.stderr.splitlines()
    started = lines.index("▶ ticks (1/1)")
    printed = lines[started + 1 : started + 4]
    assert printed == ["    tick 0^[[2J", "    tick 1^[[2J", "    tick 2^[[2J"]
    assert "\x1b" not in res.stderr

    quiet = praxis("run", str(root), "--quiet", "--no-reuse")  # runs it again, not restored
    assert quiet.returncode == 0, quiet.stderr
    assert "▶ ticks (1/1)" in quiet.stderr and "tick 0" not in quiet.stderr + quiet.stdout


def test_log_follow_follows_the_live_log(tmp_path: Path) -> None:
    root = ticking_flow(tmp_path / "flow")
    run = runner.begin(root)
    worker = threading.Thread(target=in_thread(lambda: advance(root, run.id)))
    worker.start()
    log = live.path(root / "runs" / run.id, "ticks")
    follower = None
    try:
        wait_for(lambda: log.exists() and "tick 0\n" in log.read_text(), "tick 0 in the live log")
        follower = subprocess.Popen(
            [sys.executable, "-m", "praxis", "log", str(root), "--follow"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert follower.stdout is not None
        for line in follower.stdout:  # ends when the run does
            if line == "    tick 1\n":
                break
    finally:
        (root / "runs" / run.id / "workspace" / "stop").write_text("")
        worker.join(120)
    assert follower is not None
    rest, _ = follower.communicate(timeout=60)
    assert follower.returncode == 0
    assert "phase_done" in rest


def test_the_live_log_stops_at_its_limit_with_a_marker(tmp_path: Path) -> None:
    told: list[str] = []
    writer = live.LiveLog(tmp_path / "live" / "p.log", told.append, limit=10)
    writer("stdout", "0123456")
    writer("stderr", "789abcdef")
    writer("stdout", "more")
    text = (tmp_path / "live" / "p.log").read_text()
    assert text == "0123456789" + live.MARKER
    assert told == ["0123456", "789abcdef", "more"]  # the terminal sees every piece
    assert [getattr(t, "stream", None) for t in told] == ["stdout", "stderr", "stdout"]
    live.LiveLog(tmp_path / "live" / "p.log")  # a new attempt starts it afresh
    assert (tmp_path / "live" / "p.log").read_text() == ""


def test_progress_joins_pieces_into_lines_and_escapes_them() -> None:
    out = io.StringIO()
    progress = Progress(1, ["p"], out)
    progress(ev.PhaseStarted(phase="p", attempt=1))
    progress.message(live.Output("half a "))
    progress.message("a progress message, not output")
    progress.message(live.Output("line\r\nnext\x07"))
    progress(ev.PhaseDone(phase="p", attempt=1, seconds=1.0, hashes={}))
    assert out.getvalue().splitlines() == [
        "▶ p (1/1)",
        "    half a line^M",
        "    next^G",
        "✓ p done in 1.0 s",
    ]


def test_escape_shows_control_characters() -> None:
    assert escape("a\tb\nc") == "a\tb\nc"
    assert escape("\x1b[31m\x00\x7f\x9b") == "^[[31m^@^?\\x9b"


def test_live_tail_reads_what_a_running_phase_added(tmp_path: Path) -> None:
    file = live.path(tmp_path, "p")
    file.parent.mkdir()
    file.write_text("one\ntw")
    tail = LiveTail(tmp_path)
    assert tail.lines(["p"]) == ["    one"]
    with file.open("a") as fh:
        fh.write("o\n\x1b")
    assert tail.lines(["p"]) == ["    two"]
    assert tail.lines([]) == ["    ^["]  # the phase ended: its unfinished line is shown
    os.truncate(file, 0)
    file.write_text("again\n")
    assert tail.lines(["p"]) == ["    again"]
