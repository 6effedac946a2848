"""Retries (flow.yaml ``retries:``, DESIGN.md §16): a phase whose kernel dies is tried again
from its recorded pre-state, each attempt kept; the wait is an injected sleep.

What survives a retry: the restored pre-state resets the workspace (a file the failed attempt
wrote is gone) and, on docker, the sweep empties /tmp and kills every process. So the first
attempt's marker lives where the phase's code cannot reach on docker: on the local backend a
file on the host (a parameter names it); on docker the flow's own input, which the test's
sleep changes while the retry waits, as a person might fix a file (the retry uploads the
inputs again).
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import nbformat
import pytest

from praxis.console import Progress
from praxis.flows.definition import contract
from praxis.flows.engine import runner
from praxis.flows.report.status import status_of
from praxis.flows.store.handle import RunHandle

from ._flows import docker_sandbox, write_flow

KILLER = """
    import os, pathlib
    assert not pathlib.Path("partial.txt").exists(), "the failed attempt's file is back"
    if FIRST:
        pathlib.Path("partial.txt").write_text("half done")
        TOUCH
        os.kill(os.getpid(), 9)
    pathlib.Path("out.txt").write_text(f"ok {params['n']}")
"""

FLOW = """
    SANDBOX
    params: {n: 1, marker: MARKER}
    phases:
      - id: load
        kind: script
        script: s.py
        inputs: {working: [switch.txt]}
        outputs: [out.txt]
        retries: {count: 3, backoff: 10s, on: [kernel_died, out_of_memory]}
"""


LOCAL = "sandbox: {backend: local, timeout: 120}"


class Sleeps:
    """The injected sleep: records each wait, and calls ``then`` at the first."""

    def __init__(self, then: object = None) -> None:
        self.waits: list[float] = []
        self.then = then

    def __call__(self, seconds: float) -> None:
        if not self.waits and callable(self.then):
            self.then()
        self.waits.append(seconds)


def _flow(root: Path, sandbox: str, first: str, touch: str = "pass", marker: str = "''") -> Path:
    script = KILLER.replace("FIRST", first).replace("TOUCH", touch)
    yaml_text = FLOW.replace("SANDBOX", sandbox).replace("MARKER", marker)
    return write_flow(root, yaml_text, {"s.py": script, "switch.txt": "die"})


def read_events(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _kept(run: Path) -> list[str]:
    return sorted(p.name for p in (run / "attempts" / "load").iterdir())


def test_local_a_kernel_killed_on_its_first_attempt_is_done_on_the_second(
    tmp_path: Path, allow_local: None
) -> None:
    marker = tmp_path / "host" / "marker"  # outside the workspace: the restore leaves it
    marker.parent.mkdir()
    first = "not pathlib.Path(params['marker']).exists()"
    touch = "pathlib.Path(params['marker']).write_text('attempt 1 was here')"
    root = _flow(tmp_path / "f", LOCAL, first, touch, json.dumps(str(marker)))
    seen: list[dict[str, object]] = []

    def look() -> None:  # while the retry waits: what status and the route say
        run_id = next((root / "runs").iterdir()).name
        st = status_of(RunHandle.open(contract.require(root), run_id))
        seen.append({"why": st.route["why"], "message": st.message, "row": st.phases[0]["retry"]})

    sleeps = Sleeps(then=look)
    progress = io.StringIO()
    state = runner.run(
        root, options=runner.RunOptions(sleep=sleeps, on_event=Progress(1, ["load"], progress))
    )
    # seconds left of the real clock's 10 s: the injected sleep waited none of them
    assert re.match(r"retrying in (10|9) s \(1 of 3\): ", str(seen[0]["why"]))
    assert re.fullmatch(r"load failed; retrying in (10|9) s \(1 of 3\)", str(seen[0]["message"]))
    assert re.fullmatch(r"retrying in (10|9) s \(1 of 3\)", str(seen[0]["row"]))
    assert "↻ load: kernel died; retrying in 10 s (1 of 3)" in progress.getvalue()
    assert state.status == "done", state.error
    p = state.phase("load")
    assert (p.status, p.attempt, p.retry) == ("done", 2, {})
    assert sum(sleeps.waits) == 10.0  # backoff: 10s, waited through the injected sleep
    run = root / "runs" / state.run
    assert (run / "output" / "out.txt").read_text() == "ok 1"
    events = read_events(run / "events.jsonl")
    retrying = [e for e in events if e["kind"] == "phase_retrying"]
    shown = [tuple(e[k] for k in ("attempt", "number", "of", "cause", "backoff")) for e in retrying]
    assert shown == [(1, 1, 3, "kernel_died", 10.0)]
    failed = [e for e in events if e["kind"] == "phase_failed"]
    assert len(failed) == 1 and "kernel died" in str(failed[0]["error"])
    assert _kept(run) == ["1"]  # the failed attempt's record and files are kept


@pytest.mark.docker
def test_docker_a_kernel_killed_on_its_first_attempt_is_done_on_the_second(
    tmp_path: Path, docker_image: str
) -> None:
    first = "pathlib.Path('switch.txt').read_text() == 'die'"
    root = _flow(tmp_path / "f", docker_sandbox(docker_image, timeout=120), first)
    # while the retry waits, the flow's input changes (the retry uploads it again)
    sleeps = Sleeps(then=lambda: (root / "switch.txt").write_text("live"))
    state = runner.run(root, options=runner.RunOptions(sleep=sleeps))
    assert state.status == "done", state.error
    p = state.phase("load")
    assert (p.status, p.attempt) == ("done", 2)
    run = root / "runs" / state.run
    assert (run / "output" / "out.txt").read_text() == "ok 1"
    kinds = [e["kind"] for e in read_events(run / "events.jsonl")]
    assert kinds.count("phase_retrying") == 1 and kinds.count("phase_failed") == 1
    assert _kept(run) == ["1"]


def test_retries_spent_fail_naming_the_attempts(tmp_path: Path, allow_local: None) -> None:
    root = _flow(tmp_path / "f", LOCAL, "True")
    yaml_text = (root / "flow.yaml").read_text().replace("count: 3", "count: 2, exponential: true")
    (root / "flow.yaml").write_text(yaml_text)
    sleeps = Sleeps()
    state = runner.run(root, options=runner.RunOptions(sleep=sleeps))
    assert state.status == "failed"
    p = state.phase("load")
    assert p.attempt == 3
    assert "retries spent: attempts 1 to 3 failed, all kept" in str(p.error)
    assert sum(sleeps.waits) == 30.0  # 10 s, then 20 s: exponential
    events = read_events(root / "runs" / state.run / "events.jsonl")
    errors = [str(e["error"]) for e in events if e["kind"] == "phase_failed"]
    assert ["retries spent" in e for e in errors] == [False, False, True]
    assert _kept(root / "runs" / state.run) == ["1", "2"]


def test_a_failure_retries_do_not_cover_fails_at_once(tmp_path: Path, allow_local: None) -> None:
    root = _flow(tmp_path / "f", LOCAL, "False")
    (root / "s.py").write_text("raise ValueError('bad data')\n")
    state = runner.run(root, options=runner.RunOptions(sleep=Sleeps()))
    assert state.status == "failed" and state.phase("load").attempt == 1
    assert "retries spent" not in str(state.phase("load").error)


@pytest.mark.parametrize(
    ("retries", "kind", "message"),
    [
        (
            "{count: 0}",
            "script",
            "phases[load].retries.count: expected a whole number from 1 to 20, got integer 0",
        ),
        (
            "{count: 2, backoff: soon}",
            "script",
            "phases[load].retries.backoff: expected a duration",
        ),
        ("{on: [crash]}", "script", "phases[load].retries.on[0]: 'crash' is not a retry cause"),
        ("{count: 2, wait: 3}", "script", "phases[load].retries: unknown key 'wait'"),
        (
            "{count: 2}",
            "agent",
            "phases[load].retries: an agent phase retries only when the flow says so",
        ),
    ],
)
def test_retries_are_checked_naming_the_phase_and_key(
    tmp_path: Path, retries: str, kind: str, message: str
) -> None:
    spec = "script: s.py" if kind == "script" else "prompt: p.md"
    root = write_flow(
        tmp_path / "f",
        f"""
        phases:
          - {{id: load, kind: {kind}, {spec}, retries: {retries}}}
        """,
        {"s.py": "pass\n", "p.md": "hi\n"},
    )
    report = contract.check(root)
    lines = [line for line in report.lines() if "retries" in line]
    assert len(lines) == 1 and message in lines[0], report.lines()
    assert "\n" not in lines[0]


@pytest.mark.docker
def test_docker_out_of_memory_is_told_apart_and_retried(tmp_path: Path, docker_image: str) -> None:
    hog = "blocks = []\nwhile True:\n    blocks.append(b'x' * (16 << 20))\n"
    root = write_flow(
        tmp_path / "f",
        f"""
        {docker_sandbox(docker_image, timeout=120, memory="384m")}
        phases:
          - id: load
            kind: script
            script: s.py
            outputs: [out.txt]
            retries: {{count: 1, backoff: 1, on: [out_of_memory]}}
        """,
        {"s.py": hog},
    )
    sleeps = Sleeps()
    state = runner.run(root, options=runner.RunOptions(sleep=sleeps))
    assert state.status == "failed"
    run = root / "runs" / state.run
    retrying = [e for e in read_events(run / "events.jsonl") if e["kind"] == "phase_retrying"]
    assert [(e["cause"], e["number"], e["of"]) for e in retrying] == [("out_of_memory", 1, 1)]
    assert "out of memory" in str(state.phase("load").error)
    assert "retries spent: attempts 1 to 2 failed" in str(state.phase("load").error)


def test_a_timeout_is_retried_when_flow_yaml_says_so(tmp_path: Path, allow_local: None) -> None:
    root = write_flow(
        tmp_path / "f",
        """
        sandbox: {backend: local, timeout: 120}
        phases:
          - id: load
            kind: script
            script: s.py
            outputs: [out.txt]
            timeout: 1
            retries: {count: 1, on: [timeout]}
        """,
        {"s.py": "import time\ntime.sleep(30)\n"},
    )
    state = runner.run(root, options=runner.RunOptions(sleep=Sleeps()))
    assert state.status == "failed" and state.phase("load").attempt == 2
    error = str(state.phase("load").error)
    assert "timed out after 1 s" in error and "retries spent: attempts 1 to 2" in error


def test_a_cancel_while_a_retry_waits_cancels_the_run(tmp_path: Path, allow_local: None) -> None:
    root = _flow(tmp_path / "f", LOCAL, "True")

    def cancel() -> None:  # what `praxis cancel` leaves for the runner that holds the run
        run_id = next((root / "runs").iterdir()).name
        RunHandle.open(contract.require(root), run_id).paths.cancel_request.touch()

    sleeps = Sleeps(then=cancel)
    state = runner.run(root, options=runner.RunOptions(sleep=sleeps))
    assert state.status == "cancelled"
    assert state.phase("load").attempt == 1  # the retry never started
    assert sleeps.waits == [0.5]  # the wait ended at its first look


def test_a_notebook_phase_whose_kernel_dies_is_retried(tmp_path: Path, allow_local: None) -> None:
    marker = tmp_path / "host-marker"
    cell = (
        "import os, pathlib\n"
        f"m = pathlib.Path({str(marker)!r})\n"
        "if not m.exists():\n"
        "    m.write_text('x')\n"
        "    os.kill(os.getpid(), 9)\n"
        "pathlib.Path('out.txt').write_text('ok')\n"
    )
    root = write_flow(
        tmp_path / "f",
        """
        sandbox: {backend: local, timeout: 120}
        phases:
          - {id: load, kind: notebook, script: n.ipynb, outputs: [out.txt], retries: 1}
        """,
        {},
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    nbformat.write(nb, str(root / "n.ipynb"))
    state = runner.run(root, options=runner.RunOptions(sleep=Sleeps()))
    assert state.status == "done", state.error
    assert state.phase("load").attempt == 2
    events = read_events(root / "runs" / state.run / "events.jsonl")
    assert [e["cause"] for e in events if e["kind"] == "phase_retrying"] == ["kernel_died"]
