"""docs/reliability.md item 31: a lock per run. Two runs of one flow advance at the same time;
a decision on one run succeeds while another advances; a second advance of the same run
exits 3 naming the holder; killing a holder frees its run at once; creating, deleting and
listing runs stay consistent while runs advance. Also: run folders made before runs had
their own lock keep working.

Each run's first phase can wait for a file (``wait_for``) in a meeting folder, where every
run's phase also says that it started: so "at the same time" is a fact the phases observe,
not a timing. Processes are real `praxis` commands on the fake backend.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from praxis.flows.definition import contract
from praxis.flows.engine import runner
from praxis.flows.store.handle import NoRun, RunHandle
from praxis.flows.store.layout import list_run_ids
from praxis.flows.store.lock import Lock, is_held
from praxis.flows.store.state_file import StateCorrupt

from ._flows import event_kinds, one_line_error, popen_praxis, praxis, state_of, write_flow

# every flow here asks for the fake or local backend: the person allows it
pytestmark = pytest.mark.usefixtures("local_env")

FLOW = """
    flow: meet
    sandbox: {backend: fake, timeout: 90}
    params: {me: a, wait_for: ""}
    phases:
      - id: first
        kind: script
        script: first.py
        outputs: [first.txt]
        review: required
      - id: second
        kind: script
        script: second.py
        inputs: {working: [first.txt]}
        outputs: [second.txt]
"""
FIRST = """
    import pathlib, time
    meet = pathlib.Path({meet!r})
    (meet / ("started-" + params["me"])).write_text("x")
    if params["wait_for"]:
        deadline = time.monotonic() + 60
        while not (meet / params["wait_for"]).exists():
            if time.monotonic() > deadline:
                raise RuntimeError("never saw " + params["wait_for"])
            time.sleep(0.02)
    open("first.txt", "w").write(params["me"])
"""
SECOND = "open('second.txt', 'w').write(open('first.txt').read().upper())\n"


@pytest.fixture
def meet(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(flow folder, meeting folder)."""
    folder = tmp_path / "meet"
    folder.mkdir()
    flow = write_flow(
        tmp_path / "flow", FLOW, {"first.py": FIRST.format(meet=str(folder)), "second.py": SECOND}
    )
    yield flow, folder


def begin(flow: Path, me: str, wait_for: str = "") -> str:
    res = praxis("begin", str(flow), "-p", f"me={me}", "-p", f"wait_for={wait_for}")
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def wait_for(path: Path, child: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 90
    while not path.exists():
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)


def finish(child: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = child.communicate(timeout=120)
    return child.returncode, out, err


def test_item31_two_runs_of_one_flow_advance_at_the_same_time(meet: tuple[Path, Path]) -> None:
    """Each run's phase waits until the other's has started: under one lock per flow, the
    second advance is refused (or waits) and neither phase ever sees the other."""
    flow, folder = meet
    a = begin(flow, "a", wait_for="started-b")
    b = begin(flow, "b", wait_for="started-a")
    children = [popen_praxis("advance", str(flow), "--run", run) for run in (a, b)]
    for child in children:
        code, out, err = finish(child)
        assert code == 0, (out, err)
    for run, me in ((a, "a"), (b, "b")):
        state = state_of(flow / "runs" / run)
        assert (state.waiting, state.gate) == ("gate", "first"), state.error
        assert (flow / "runs" / run / "output" / "first.txt").read_text() == me


def test_item31_a_decision_on_one_run_succeeds_while_another_advances(
    meet: tuple[Path, Path],
) -> None:
    flow, folder = meet
    a = begin(flow, "a")
    assert praxis("advance", str(flow), "--run", a).returncode == 0  # A waits at its Gate
    b = begin(flow, "b", wait_for="release")
    advancing = popen_praxis("advance", str(flow), "--run", b)
    try:
        wait_for(folder / "started-b", advancing)  # B's phase runs, under B's lock
        assert is_held(flow / "runs" / b / "run.lock") == advancing.pid
        assert is_held(flow / "run.lock") is None  # nothing holds the flow's lock meanwhile

        again = praxis("advance", str(flow), "--run", b)  # the same run: refused at once
        assert again.returncode == 3, again.stderr
        line = one_line_error(again, "Busy: ")
        assert f"run {b}: process {advancing.pid} is advancing it" in line
        assert f"praxis status {flow} --run {b}" in again.stderr.splitlines()[-1]

        ok = praxis("approve", str(flow), "--run", a, "--gate", "first")
        assert ok.returncode == 0, ok.stderr
        assert state_of(flow / "runs" / a).status == "done"
        assert (flow / "runs" / a / "output" / "second.txt").read_text() == "A"
        c = begin(flow, "c")  # creating a run while B advances
        listed = praxis("runs", str(flow))
        assert listed.returncode == 0 and b in listed.stdout and c in listed.stdout
        gone = praxis("runs", str(flow), "--delete", c, "--delete", b)  # B advances: neither
        assert gone.returncode == 3, gone.stderr
        assert f"process {advancing.pid} is advancing it" in one_line_error(gone, "Busy: ")
        assert {a, b, c} <= set(list_run_ids(flow))
        assert praxis("runs", str(flow), "--delete", c).returncode == 0
        assert c not in list_run_ids(flow) and not (flow / "runs" / c).exists()
    finally:
        (folder / "release").write_text("x")
        code, out, err = finish(advancing)
    assert code == 0, (out, err)
    assert state_of(flow / "runs" / b).waiting == "gate"
    assert event_kinds(flow / "runs" / a).count("gate_approved") == 1


def test_item31_killing_a_holder_frees_its_run_at_once(meet: tuple[Path, Path]) -> None:
    flow, folder = meet
    b = begin(flow, "b", wait_for="never")
    advancing = popen_praxis("advance", str(flow), "--run", b)
    try:
        wait_for(folder / "started-b", advancing)
    finally:
        advancing.send_signal(signal.SIGKILL)
        advancing.communicate()
    with Lock(flow / "runs" / b / "run.lock"):  # free at once: no retry, no wait
        pass
    status = praxis("status", str(flow), "--run", b)
    assert "stopped before it finished" in status.stdout, status.stdout
    after = praxis("advance", str(flow), "--run", b)  # recorded as failed, by this process
    assert after.returncode == 1, after.stderr
    assert state_of(flow / "runs" / b).phase("first").status == "failed"


def test_item31_runs_begun_at_once_are_each_whole_and_in_order(meet: tuple[Path, Path]) -> None:
    """Eight processes begin runs at once while this one lists and opens runs, and deletes
    some: every run listed opens (or is gone), never half made; creation numbers are
    distinct and follow the ids."""
    flow, _ = meet
    keep = begin(flow, "keep")
    children = [popen_praxis("begin", str(flow), "-p", f"me=m{n}") for n in range(8)]
    seen_broken: list[str] = []
    done = threading.Event()

    def look() -> None:
        loaded = contract.require(flow)
        while not done.is_set():
            for run_id in list_run_ids(flow):
                try:
                    RunHandle.open(loaded, run_id)
                except NoRun:
                    pass  # deleted since it was listed
                except StateCorrupt as exc:
                    seen_broken.append(f"{run_id}: {exc}")

    looker = threading.Thread(target=look)
    looker.start()
    try:
        ids = []
        for child in children:
            code, out, err = finish(child)
            assert code == 0, err
            ids.append(out.strip())
        runner.delete_runs(contract.require(flow), ids[:3])
    finally:
        done.set()
        looker.join(60)
    assert seen_broken == []
    listed = list_run_ids(flow)
    assert listed == sorted([keep, *ids[3:]])
    seqs = [state_of(flow / "runs" / run).seq for run in listed]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert not [p for p in (flow / "runs").iterdir() if p.name.startswith(".")]


def test_item31_a_run_made_before_runs_had_their_own_lock_keeps_working(
    meet: tuple[Path, Path],
) -> None:
    """The old layout: no run.lock in the run folder, and the flow's run.lock left naming a
    process that is gone (the way a killed runner of the old layout left it)."""
    flow, _ = meet
    old = begin(flow, "old")
    (flow / "runs" / old / "run.lock").unlink(missing_ok=True)
    (flow / "run.lock").write_text("999999999\n")
    res = praxis("advance", str(flow), "--run", old)
    assert res.returncode == 0, res.stderr
    assert praxis("approve", str(flow), "--run", old, "--gate", "first").returncode == 0
    assert state_of(flow / "runs" / old).status == "done"
    new = begin(flow, "new")
    assert praxis("runs", str(flow), "--delete", old).returncode == 0
    assert list_run_ids(flow) == [new]
