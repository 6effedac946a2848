"""Fixtures for the web UI tests: a copy of flows/sales-report run to its Gate on local kernels."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
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

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "flows" / "sales-report"


def local_sandbox(flow: Flow, run: RunHandle) -> Sandbox:
    return open_sandbox({"backend": "local"}, workspace=run.paths.workspace, name=run.id)


@dataclass
class GatedRun:
    root: Path  # the folder served: holds flows/sales-report
    flow: Path
    run_id: str

    @property
    def ref(self) -> str:
        return "flows/sales-report"


def copy_example(dest: Path) -> Path:
    flow = dest / "flows" / "sales-report"
    shutil.copytree(EXAMPLE, flow, ignore=shutil.ignore_patterns("runs", "run.lock", "__pycache__"))
    return flow


@pytest.fixture(scope="session")
def gated_template(tmp_path_factory: pytest.TempPathFactory) -> GatedRun:
    """sales-report run once (local kernels) to its Gate after `flag`; copied per test."""
    root = tmp_path_factory.mktemp("gated")
    flow = copy_example(root)
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=local_sandbox))
    assert state.waiting == "gate" and state.gate == "flag", state
    return GatedRun(root=root, flow=flow, run_id=run.id)


@pytest.fixture
def gated(gated_template: GatedRun, tmp_path: Path) -> GatedRun:
    root = tmp_path / "root"
    shutil.copytree(gated_template.root, root, symlinks=True)
    return GatedRun(root=root, flow=root / "flows" / "sales-report", run_id=gated_template.run_id)


@dataclass
class Served:
    client: TestClient
    guard: Guard
    advancer: Advancer
    gated: GatedRun

    def login(self) -> None:
        r = self.client.get(f"/?token={self.guard.token}", follow_redirects=False)
        assert r.status_code == 303

    def run_url(self) -> str:
        return f"/run?flow={self.gated.ref}&run={self.gated.run_id}"


@pytest.fixture
def served(gated: GatedRun) -> Iterator[Served]:
    guard = Guard()
    advancer = Advancer(make_sandbox=local_sandbox)
    app = create_app(gated.root, guard=guard, advancer=advancer)
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        yield Served(client, guard, advancer, gated)
    advancer.close()
