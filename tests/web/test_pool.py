"""`praxis serve` for a team: several runs of one flow advance at once in a bounded pool
(``--max-runs``), each in its own sandbox; a decision on one run is answered while others
advance; runs are started from the flows page; no request handler waits on a phase, a
file's hash or a table read (they run off the event loop); one warm sandbox, never passed
back and forth between pages shown at once.

Phases run in in-process fake sandboxes whose code is a ``Hold``: each phase says it started
and waits until the test lets its run go on, so "at once" and "waits for a place" are facts
the test observes, not timings. The phases say ``reuse: never``: each run's code runs, none
is restored from another run's.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from praxis.flows.engine import runner
from praxis.flows.model.flow import Flow
from praxis.flows.store.handle import RunHandle
from praxis.web import background
from praxis.web.app import create_app
from praxis.web.background import Advancer
from praxis.web.security import Guard
from sandbox import ExecResult, Sandbox
from sandbox.fake import FakeSandbox

from ..flows.helpers import write_flow

# every flow here asks for the fake or local backend: the person allows it
pytestmark = pytest.mark.usefixtures("local_env")

FLOW = """
    flow: pool
    sandbox: {backend: fake, timeout: 60}
    params: {region: north, rows: 2}
    phases:
      - {id: first, kind: script, script: first.py, outputs: [first.txt], review: required,
         reuse: never}
      - {id: second, kind: script, script: second.py, inputs: {working: [first.txt]},
         outputs: [second.txt], reuse: never}
"""
WAIT = 60.0  # seconds before a held phase, or a test waiting for one, gives up


class Hold:
    """The code of every phase: says it started, waits until its run is let go."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.started: list[tuple[str, str]] = []  # (run, phase) in the order they began
        self.running: set[str] = set()
        self.most = 0  # the most runs whose phases ran at the same moment
        self.free: set[str] = set()
        self.all_free = False
        self.made: list[FakeSandbox] = []

    def __call__(self, code: str, root: Path) -> ExecResult:
        found = re.search(r"# phase (\w+)", code)
        if found is None:  # the cell that sets params and note
            return ExecResult(status="ok")
        run, phase = root.parent.name, found.group(1)
        with self.cond:
            self.started.append((run, phase))
            self.running.add(run)
            self.most = max(self.most, len(self.running))
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.all_free or run in self.free, timeout=WAIT)
            self.running.discard(run)
        (root / f"{phase}.txt").write_text(f"{phase} of {run}")
        return ExecResult(status="ok")

    def factory(self, flow: Flow, run: RunHandle) -> Sandbox:
        box = FakeSandbox(workspace=run.paths.workspace, name=run.id, handler=self)
        self.made.append(box)
        return box

    def wait_started(self, count: int) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.started) >= count, timeout=WAIT), (
                self.started
            )

    def let_go(self, *runs: str) -> None:
        with self.cond:
            if runs:
                self.free.update(runs)
            else:
                self.all_free = True
            self.cond.notify_all()


@dataclass
class Server:
    client: TestClient
    advancer: Advancer
    hold: Hold
    flow: Path
    guard: Guard

    def csrf(self) -> str:
        found = re.search(r'name="csrf" value="([0-9a-f]+)"', self.client.get("/").text)
        assert found
        return found.group(1)

    def state(self, run_id: str) -> Any:
        return RunHandle.open(runner.load_flow(self.flow), run_id).state


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    root = tmp_path / "root"
    flow = write_flow(
        root / "flows" / "pool",
        FLOW,
        {"first.py": "# phase first\n", "second.py": "# phase second\n"},
    )
    hold = Hold()
    guard = Guard()
    advancer = Advancer(make_sandbox=hold.factory, max_runs=2)
    app = create_app(root, guard=guard, advancer=advancer)
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        client.get(f"/?token={guard.token}", follow_redirects=False)
        served = Server(client, advancer, hold, flow, guard)
        try:
            yield served
        finally:
            hold.let_go()
            advancer.close()


def to_gate(server: Server, region: str = "north") -> str:
    """A run of the flow advanced (outside the server) to its Gate."""
    run = runner.begin(server.flow, params={"region": region})
    server.hold.let_go(run.id)
    assert (
        runner.advance(
            server.flow, run.id, options=runner.RunOptions(make_sandbox=server.hold.factory)
        ).waiting
        == "gate"
    )
    return run.id


def test_at_most_max_runs_advance_at_once_and_the_others_wait_for_a_place(
    server: Server,
) -> None:
    runs = [runner.begin(server.flow).id for _ in range(3)]
    for run_id in runs:
        assert server.advancer.start(server.flow, run_id)
    server.hold.wait_started(2)
    first_two = {run for run, _ in server.hold.started}
    (third,) = set(runs) - first_two
    assert server.advancer.counts() == (2, 1)
    job = server.advancer.job(server.flow, third)
    assert job is not None and job.queued
    page = server.client.get(f"/run?flow=flows/pool&run={third}").text
    assert "Queued: the run advances as soon as the server" in page
    polled = server.client.get(f"/run/state?flow=flows/pool&run={third}").json()
    assert polled["queued"] and not polled["advancing"]
    index = server.client.get("/").text
    assert index.count("queued here") == 1 and index.count("advancing here") == 2
    server.hold.let_go(*first_two)
    server.hold.wait_started(3)
    assert server.hold.started[2] == (third, "first")
    server.hold.let_go()
    server.advancer.wait(WAIT)
    assert [server.state(r).waiting for r in runs] == ["gate"] * 3
    assert server.hold.most == 2  # two at once, never more
    assert {box.name for box in server.hold.made} == set(runs)  # a sandbox of its own each


def _approve(server: Server, run_id: str, revision: int | None = None) -> Any:
    if revision is None:
        revision = server.state(run_id).revision
    return server.client.post(
        "/approve",
        data={"flow": "flows/pool", "run": run_id, "revision": str(revision),
              "csrf": server.csrf()},
        follow_redirects=False,
    )  # fmt: skip


def test_a_decision_on_one_run_is_answered_while_others_of_the_flow_advance(
    server: Server,
) -> None:
    gated = to_gate(server)
    busy = [runner.begin(server.flow).id for _ in range(2)]
    for run_id in busy:
        server.advancer.start(server.flow, run_id)
    server.hold.wait_started(3)  # the Gate's run's first phase, then both others
    shown = server.state(gated).revision
    answer = _approve(server, gated, shown)
    assert answer.status_code == 303, answer.text
    assert server.state(gated).waiting is None  # approved; it waits for a place to go on
    assert server.advancer.job(server.flow, gated).queued  # type: ignore[union-attr]
    again = _approve(server, gated, shown)  # a second click on the same page: refused
    assert again.status_code == 409 and "changed since this page was shown" in again.text
    server.hold.let_go()
    server.advancer.wait(WAIT)
    assert server.state(gated).status == "done"
    events = RunHandle.open(runner.load_flow(server.flow), gated).log.read()
    assert [e.kind for e in events].count("gate_approved") == 1


def test_an_approval_landing_as_the_runs_advance_ends_is_not_lost(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The click comes after the advance wrote "waiting at the Gate" and before its job
    ended (the run's lock released, its notifiers told): the run is approved, and this
    server advances it on, instead of leaving it approved and paused for good."""
    advance = background.acting.advance
    clicked: list[int] = []

    def then_click(flow: Any, run_id: str, **kwargs: Any) -> Any:
        state = advance(flow, run_id, **kwargs)
        if not clicked and state.waiting == "gate":
            clicked.append(_approve(server, run_id, state.revision).status_code)
        return state

    monkeypatch.setattr(background.acting, "advance", then_click)
    run_id = runner.begin(server.flow).id
    server.hold.let_go(run_id)
    server.advancer.start(server.flow, run_id)
    server.advancer.wait(WAIT)
    assert clicked == [303]
    assert server.state(run_id).status == "done"


def test_a_run_started_from_the_flows_page_is_queued_with_its_params(server: Server) -> None:
    server.hold.let_go()
    answer = server.client.post(
        "/begin",
        data={"flow": "flows/pool", "csrf": server.csrf(), "param.region": "south",
              "param.rows": "2"},
        follow_redirects=False,
    )  # fmt: skip
    assert answer.status_code == 303, answer.text
    run_id = re.search(r"run=([\w-]+)", answer.headers["location"]).group(1)  # type: ignore[union-attr]
    server.advancer.wait(WAIT)
    state = server.state(run_id)
    assert state.params == {"region": "south", "rows": 2} and state.waiting == "gate"
    refused = server.client.post(
        "/begin", data={"flow": "flows/pool", "csrf": server.csrf(), "param.rows": "many"}
    )
    assert refused.status_code == 400 and "expected int" in refused.text
    unknown = server.client.post(
        "/begin", data={"flow": "flows/pool", "csrf": server.csrf(), "param.nope": "x"}
    )
    assert unknown.status_code == 400 and "not a parameter of this flow" in unknown.text
    forged = server.client.post("/begin", data={"flow": "flows/pool", "csrf": "0" * 32})
    assert forged.status_code == 403
    states = server.client.get("/runs/state").json()
    (row,) = states["flows"]["flows/pool"]
    assert (row["id"], row["waiting"], row["done"], row["total"]) == (run_id, "gate", 1, 2)
    assert (states["advancing"], states["queued"], states["max_runs"]) == (0, 0, 2)


BLOCKERS: dict[str, tuple[str, str, Callable[[Server, str], Any]]] = {
    # what the request waits on: (module, function to block in, the request)
    "a file's hash (the run page)": (
        "praxis.flows.engine.reconcile",
        "sha256_of",
        lambda s, run: s.client.get(f"/run?flow=flows/pool&run={run}"),
    ),
    "a table read": (
        "praxis.web.csvedit",
        "build_index",
        lambda s, run: s.client.get(f"/rows?flow=flows/pool&run={run}&name=table.csv"),
    ),
    "a decision (approve)": ("praxis.flows.engine.runner", "approve", _approve),
}


@pytest.mark.parametrize("blocker", list(BLOCKERS))
def test_a_request_blocked_in_slow_work_leaves_the_server_answering(
    server: Server, monkeypatch: pytest.MonkeyPatch, blocker: str
) -> None:
    """The blocked handler runs on a worker thread: the event loop answers other requests
    meanwhile. (Were it on the loop, the second request would never be answered.)"""
    module, name, request = BLOCKERS[blocker]
    run_id = to_gate(server)
    table = server.flow / "runs" / run_id / "output" / "table.csv"
    table.write_text("a,b\n1,2\n")
    (server.flow / "runs" / run_id / "output" / "first.txt").write_text("edited by hand")
    entered, release = threading.Event(), threading.Event()
    target = __import__(module, fromlist=[name])
    real = getattr(target, name)

    def blocked(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        release.wait(WAIT)
        return real(*args, **kwargs)

    monkeypatch.setattr(target, name, blocked)
    slow = threading.Thread(target=request, args=(server, run_id))
    slow.start()
    try:
        assert entered.wait(WAIT), "the request never reached the slow work"
        answered: list[int] = []
        other = threading.Thread(
            target=lambda: answered.append(server.client.get("/runs/state").status_code)
        )
        other.start()
        other.join(WAIT)
        assert answered == [200]
    finally:
        release.set()
        slow.join(WAIT)


def test_one_warm_sandbox_stays_with_the_page_a_reviewer_is_on(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs at their Gates, both pages shown in turn: the sandbox opened for the first
    is not closed for the second while the first page is still followed."""
    server.advancer.warm.keep = 1
    a, b = to_gate(server, "north"), to_gate(server, "south")
    made = len(server.hold.made)
    server.client.get(f"/run?flow=flows/pool&run={a}")
    until(lambda: server.advancer.warm.ready(server.flow, a))
    for _ in range(3):
        for run_id in (b, a):
            assert server.client.get(f"/run?flow=flows/pool&run={run_id}").status_code == 200
    assert [box.name for box in server.hold.made[made:]] == [a]  # a's, once; none for b
    monkeypatch.setattr(background, "WARM_IDLE", 0.0)  # nobody follows a's page any more
    server.client.get(f"/run?flow=flows/pool&run={b}")
    until(lambda: server.advancer.warm.ready(server.flow, b))
    assert [box.name for box in server.hold.made[made:]] == [a, b]
    until(lambda: server.hold.made[made].closed)  # a's was closed for it


def until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, "it never happened"
        time.sleep(0.02)
