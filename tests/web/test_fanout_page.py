"""The run page of a fan-out waiting at its Gate (DESIGN.md §17): a row and a timeline bar
per partition, its status, attempt, outputs and record."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from praxis.flows.engine import runner
from praxis.web.app import create_app
from praxis.web.background import Advancer
from praxis.web.security import Guard

from ..flows.test_fanout import _flow
from .conftest import local_sandbox


def test_the_gate_after_a_fan_out_shows_each_partition(tmp_path: Path, allow_local: None) -> None:
    root = tmp_path / "root"
    flow = _flow(root / "flows", review="required")
    state = runner.run(flow)
    assert state.waiting == "gate"
    guard = Guard()
    advancer = Advancer(make_sandbox=local_sandbox)
    app = create_app(root, guard=guard, advancer=advancer)
    try:
        with TestClient(app, base_url="http://127.0.0.1:8765") as client:
            assert client.get(f"/?token={guard.token}", follow_redirects=False).status_code == 303
            ref = "flows/regions"
            page = client.get(f"/run?flow={ref}&run={state.run}")
            assert page.status_code == 200, page.text
            text = page.text
            assert "they are reviewed here, not edited" in text
            for name in ("north", "south", "east", "west"):
                assert f"↳ {name}" in text
                assert f'data-partition="per_region/{name}"' in text
                assert f"output%2Fper_region%2F{name}%2Fsummary.csv" in text
            record = client.get(
                f"/record?flow={ref}&run={state.run}&phase=per_region&partition=east"
            )
            assert record.status_code == 200 and "summary.csv" in record.text
            assert "Record of phase per_region, partition east" in record.text
            assert "records/per_region/east.ipynb" in record.text
            missing = client.get(
                f"/record?flow={ref}&run={state.run}&phase=per_region&partition=nowhere"
            )
            assert missing.status_code == 404 and "no partition" in missing.text
    finally:
        advancer.close()
