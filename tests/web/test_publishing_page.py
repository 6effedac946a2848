"""The run page of a flow that publishes: at its last Gate, what approving will have written
where; once done and published, what was written (rows, digest)."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
from starlette.testclient import TestClient

from praxis.flows.engine import runner
from praxis.web.app import create_app
from praxis.web.background import Advancer
from praxis.web.security import Guard

from .conftest import REPO, local_sandbox

REF = "flows/warehouse-report"


def test_the_page_shows_what_will_be_and_what_was_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "reporting.duckdb"
    with duckdb.connect(str(target)) as conn:
        conn.execute(
            "CREATE TABLE weekly_summary (region VARCHAR, week VARCHAR, orders INTEGER, "
            "revenue DECIMAL(12, 2))"
        )
    profile = tmp_path / "profile.yaml"
    profile.write_text(
        f'connections:\n  warehouse_write: {{url: "duckdb:///{target}", write: true}}\n'
    )
    monkeypatch.setenv("PRAXIS_PROFILE", str(profile))
    root = tmp_path / "root"
    flow = root / REF
    shutil.copytree(REPO / REF, flow, ignore=shutil.ignore_patterns("runs", "__pycache__"))
    run = runner.begin(flow)
    assert (
        runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=local_sandbox)).gate
        == "clean"
    )
    guard, advancer = Guard(), Advancer(make_sandbox=local_sandbox)
    app = create_app(root, guard=guard, advancer=advancer)
    try:
        with TestClient(app, base_url="http://127.0.0.1:8765") as client:
            client.get(f"/?token={guard.token}", follow_redirects=False)
            page = client.get(f"/run?flow={REF}&run={run.id}").text
            assert "Published on approval" in page
            assert "<td>warehouse_write: weekly_summary</td><td>upsert by region, week</td>" in page
            assert "to publish" in page

            runner.approve(flow, run.id, gate="clean", actor="person")
            assert (
                runner.advance(
                    flow, run.id, options=runner.RunOptions(make_sandbox=local_sandbox)
                ).status
                == "done"
            )
            page = client.get(f"/run?flow={REF}&run={run.id}").text
            assert "To publish what is pending: <code>praxis publish" in page
            [out] = runner.publish(runner.load_flow(flow), run.id)
            page = client.get(f"/run?flow={REF}&run={run.id}").text
            assert f"{out.rows:,} rows, sha256 {out.sha256[:12]}" in page
            assert "publish-published" in page and "To publish what is pending" not in page
    finally:
        advancer.close()
