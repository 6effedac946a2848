"""`praxis serve` keeps the sandbox of the run on a reviewer's page (waiting at a Gate) open,
so the click that continues the run starts the next phase at once: used once, by that run
only, and never left behind."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from praxis.flows.engine import runner
from praxis.flows.model.flow import Flow
from praxis.flows.store.handle import RunHandle
from praxis.web.app import create_app
from praxis.web.background import Advancer
from praxis.web.security import Guard
from sandbox import Sandbox, open_sandbox

from ..labels import TEST_LABELS, left_after

pytestmark = pytest.mark.docker

FLOW = """\
flow: warm
sandbox: {backend: docker}
phases:
  - id: first
    kind: script
    script: first.py
    outputs: [a.txt]
    review: required
  - id: second
    kind: script
    script: second.py
    inputs: {working: [a.txt]}
    outputs: [b.txt]
"""


class Counting:
    """The docker sandbox factory, counting the sandboxes it makes."""

    def __init__(self, image: str) -> None:
        self.image = image
        self.made: list[Sandbox] = []

    def __call__(self, flow: Flow, run: RunHandle) -> Sandbox:
        box = open_sandbox(
            {"backend": "docker", "image": self.image, "labels": dict(TEST_LABELS)},
            workspace=run.paths.workspace,
            name=run.id,
        )
        self.made.append(box)
        return box


@pytest.fixture
def gated(tmp_path: Path, docker_image: str) -> Iterator[tuple[Path, str, Counting]]:
    flow = tmp_path / "flows" / "warm"
    flow.mkdir(parents=True)
    (flow / "flow.yaml").write_text(FLOW, encoding="utf-8")
    (flow / "first.py").write_text("open('a.txt', 'w').write('a')\n", encoding="utf-8")
    (flow / "second.py").write_text(
        "open('b.txt', 'w').write(open('a.txt').read() + 'b')\n", encoding="utf-8"
    )
    make = Counting(docker_image)
    run = runner.begin(flow)
    assert (
        runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=make)).waiting == "gate"
    )
    yield flow, run.id, make


def _serve(root: Path, make: Counting) -> tuple[TestClient, Advancer, Guard]:
    guard = Guard()
    advancer = Advancer(make_sandbox=make, keep=1)
    client = TestClient(
        create_app(root, guard=guard, advancer=advancer), base_url="http://127.0.0.1:8765"
    )
    client.get(f"/?token={guard.token}", follow_redirects=False)
    return client, advancer, guard


def _show(client: TestClient, advancer: Advancer, flow: Path, run_id: str) -> None:
    """The reviewer opens the run's page; its sandbox opens meanwhile."""
    assert client.get(f"/run?flow=flows/warm&run={run_id}").status_code == 200
    _wait_ready(advancer, flow, run_id)


def _wait_ready(advancer: Advancer, flow: Path, run_id: str) -> None:
    deadline = time.monotonic() + 60
    while not advancer.warm.ready(flow, run_id):
        assert time.monotonic() < deadline, "the run's sandbox never opened"
        time.sleep(0.05)


def _approve(client: TestClient, run_id: str) -> None:
    page = client.get(f"/run?flow=flows/warm&run={run_id}").text
    form = page.split('action="/approve"', 1)[1].split("</form>", 1)[0]
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form))
    answer = client.post(
        "/approve", data={k: html.unescape(v) for k, v in fields.items()}, follow_redirects=False
    )
    assert answer.status_code == 303, answer.text


def test_the_sandbox_opened_while_the_page_is_shown_runs_the_next_phase(
    gated: tuple[Path, str, Counting],
) -> None:
    flow, run_id, make = gated
    client, advancer, _ = _serve(flow.parent.parent, make)
    try:
        with client:
            _show(client, advancer, flow, run_id)
            assert len(make.made) == 2  # the first advance's, and the warm one
            _approve(client, run_id)
            advancer.wait(120)
    finally:
        advancer.close()
    state = RunHandle.open(runner.load_flow(flow), run_id).state
    assert state.status == "done", state.error
    assert (flow / "runs" / run_id / "output" / "b.txt").read_text() == "ab"
    assert len(make.made) == 2  # the advance after the click opened no other sandbox
    assert left_after(run_id) == []


def test_a_warm_sandbox_another_process_removed_is_opened_again(
    gated: tuple[Path, str, Counting],
) -> None:
    """A `praxis advance` elsewhere removes the run's containers before it runs; the page's
    next view finds the warm one unusable and opens another, and the click still works."""
    flow, run_id, make = gated
    client, advancer, _ = _serve(flow.parent.parent, make)
    try:
        with client:
            _show(client, advancer, flow, run_id)
            warm = make.made[-1]
            runner.reject(flow, "first", "again", run_id, gate="first")
            assert (
                runner.advance(flow, run_id, options=runner.RunOptions(make_sandbox=make)).waiting
                == "gate"
            )
            assert not warm.usable()  # that advance removed it
            _show(client, advancer, flow, run_id)
            assert make.made[-1] is not warm and make.made[-1].usable()
            _approve(client, run_id)
            advancer.wait(120)
    finally:
        advancer.close()
    assert RunHandle.open(runner.load_flow(flow), run_id).state.status == "done"
    assert left_after(run_id) == []


def test_closing_the_server_closes_its_warm_sandboxes(gated: tuple[Path, str, Counting]) -> None:
    flow, run_id, make = gated
    client, advancer, _ = _serve(flow.parent.parent, make)
    with client:
        _show(client, advancer, flow, run_id)
    advancer.close()
    assert left_after(run_id) == []
    assert RunHandle.open(runner.load_flow(flow), run_id).state.waiting == "gate"


def test_warming_also_builds_the_records_validator(monkeypatch: pytest.MonkeyPatch) -> None:
    """Built beside the click's phase instead, it took the CPU that phase's start needed."""
    from praxis.flows.store import record
    from praxis.web import warm

    monkeypatch.setattr(record, "_validator", None)
    warm._load_executors(["script"])
    built = record._validator
    assert built is not None
    built.join(30)
    assert not built.is_alive()
