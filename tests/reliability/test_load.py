"""docs/reliability.md item 32: load held, nothing lost. Eight runs of one 3-phase flow with a
Gate, started at once through `praxis serve` (a pool of 4), twenty clients that poll their
pages and approve their Gates: every run ends done with the right outputs, each decision is
recorded once, no lock is held, no container is left, and every request is answered (the
slowest answer is recorded, never asserted). On docker, and on a two-node Ray cluster on
loopback.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.serve_load import Load, Serve, begin_runs, expected, follow, load_flow
from praxis.flows.store.lock import is_held

from ._flows import SESSION, SESSION_LABEL, event_kinds, state_of

RUNS = 8
POOL = 4
CLIENTS = 20
# What a page may say when a click came too late (another client's click, or the run is
# already going on): never a refusal because some other run is busy.
LATE = ("changed since this page was shown", "not waiting at a Gate")


def labels() -> dict[str, str]:
    return {"praxis.test": "1", SESSION_LABEL: SESSION, "praxis.load": uuid.uuid4().hex[:12]}


def containers(label: str) -> list[str]:
    found = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=praxis.load={label}"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return found.stdout.split()


def gone(label: str, timeout: float = 60.0) -> list[str]:
    """The containers still there once none is, or after ``timeout`` seconds (the daemon,
    or Ray's watchdog, removes an ended sandbox's container by itself)."""
    import time

    deadline = time.monotonic() + timeout
    while (left := containers(label)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def held_up(root: Path, flow: Path, sandbox: dict[str, Any], env: dict[str, str]) -> None:
    """Drive the load through `praxis serve`, then check everything the item asks."""
    load_flow(flow, sandbox)
    regions = [f"r{n}" for n in range(RUNS)]
    load = Load()
    serve = Serve(root, max_runs=POOL, env=env)
    stuck: dict[str, list[tuple[str, str]]] = {}
    try:
        runs = begin_runs(serve, "load", regions, load)
        unfinished = follow(serve, "load", runs, load, clients=CLIENTS, deadline=600)
        for r in unfinished:  # not ended by the deadline: where each stood, before serve stops
            state = state_of(flow / "runs" / r)
            stuck[r] = [("run", state.status), *((p.id, p.status) for p in state.phases)]
    finally:
        code = serve.stop()
    assert code == 0, serve.stderr[-3000:]
    assert stuck == {}, (stuck, serve.stderr[-3000:])

    unanswered = [a for a in load.answers if a.status == 0]
    assert unanswered == [], unanswered[:5]
    statuses = {a.status for a in load.answers}
    assert statuses <= {200, 303, 409}, [a for a in load.answers if a.status not in (200, 303)]
    for a in load.answers:
        if a.status == 409:  # a click that came too late, on its own run only
            assert a.what == "approve" and (
                any(words in a.refusal for words in LATE) or f"run {a.run}:" in a.refusal
            ), a
    approved = [a for a in load.answers if a.what == "approve" and a.status == 303]
    assert sorted(a.run for a in approved) == sorted(runs)  # one click took effect per run

    busiest = 0
    spans = []
    for run_id, region in zip(runs, regions, strict=True):
        run = flow / "runs" / run_id
        state = state_of(run)
        assert state.status == "done", (run_id, state.error)
        assert state.params["region"] == region
        for name, text in expected(region).items():
            assert (run / "output" / name).read_bytes() == text.encode(), (run_id, name)
        kinds = event_kinds(run)
        assert kinds.count("gate_approved") == 1 and kinds.count("gate_waiting") == 1
        assert is_held(run / "run.lock") is None
        events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
        opened = [e["at"] for e in events if e["kind"] == "sandbox_opened"]
        ended = [
            e["at"]
            for e in events
            if e["kind"] == "gate_waiting"
            or (e["kind"] == "run_state" and e["status"] in ("done", "failed"))
        ]
        for start in opened:  # each advance: from its sandbox's opening to where it stopped
            spans.append((start, min(t for t in ended if t >= start)))
    assert is_held(flow / "run.lock") is None
    for start, _ in spans:  # advances going on at each start: the pool's bound holds
        busiest = max(busiest, sum(1 for s, e in spans if s <= start <= e))
    assert busiest <= POOL, busiest
    assert gone(sandbox["labels"]["praxis.load"]) == []
    slowest = load.slowest()
    print(
        f"\n{len(load.answers)} requests answered; the slowest: {slowest.what} "
        f"{slowest.seconds:.2f} s ({slowest.status}); at most {busiest} runs advancing at once"
    )


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_item32_load_through_serve_on_docker(tmp_path: Path, docker_image: str) -> None:
    sandbox = {"backend": "docker", "image": docker_image, "labels": labels(), "timeout": 120}
    held_up(tmp_path, tmp_path / "load", sandbox, {})


@pytest.fixture(scope="module")
def cluster(docker_image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from ..ray_nodes import two_nodes

    with two_nodes(tmp_path_factory.mktemp("ray-nodes")) as nodes:
        yield nodes


@pytest.mark.docker
@pytest.mark.ray
@pytest.mark.timeout(1200)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_item32_load_through_serve_on_a_two_node_ray_cluster(
    tmp_path: Path, docker_image: str, cluster: Any
) -> None:
    sandbox = {
        "backend": "ray",
        "cluster": "here",  # the person's profile names the cluster's address
        "image": docker_image,
        "labels": labels(),
        "memory": "512m",
        "cpus": 0.5,
        "timeout": 120,
    }
    profile = tmp_path / "profile.yaml"
    profile.write_text(f"clusters:\n  here: {{address: '{cluster.address}'}}\n")
    held_up(tmp_path, tmp_path / "load", sandbox, {"PRAXIS_PROFILE": str(profile)})
