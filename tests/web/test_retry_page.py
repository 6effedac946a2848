"""The run's page while a retry waits (flow.yaml retries:): the phase's row says "retrying in
10 s (1 of 3)". The page is asked from inside the runner's injected sleep, as a reviewer's
browser would ask while the runner waits."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from starlette.testclient import TestClient

from praxis.flows.engine import runner
from praxis.web.app import create_app
from praxis.web.background import Advancer
from praxis.web.security import Guard

from .conftest import local_sandbox

FLOW = """
    flow: flaky
    sandbox: {backend: local, timeout: 120}
    params: {marker: ""}
    phases:
      - id: load
        kind: script
        script: load.py
        outputs: [out.txt]
        retries: {count: 3, backoff: 10s}
"""
LOAD = """
    import os, pathlib
    marker = pathlib.Path(params["marker"])
    if not marker.exists():
        marker.write_text("attempt 1")
        os.kill(os.getpid(), 9)
    pathlib.Path("out.txt").write_text("ok")
"""


def test_the_run_page_says_when_a_retry_starts(tmp_path: Path) -> None:
    root = tmp_path / "root"
    flow = root / "flows" / "flaky"
    flow.mkdir(parents=True)
    (flow / "flow.yaml").write_text(textwrap.dedent(FLOW))
    (flow / "load.py").write_text(textwrap.dedent(LOAD))
    guard, advancer = Guard(), Advancer(make_sandbox=local_sandbox)
    app = create_app(root, guard=guard, advancer=advancer)
    pages: list[str] = []
    try:
        with TestClient(app, base_url="http://127.0.0.1:8765") as client:
            assert client.get(f"/?token={guard.token}", follow_redirects=False).status_code == 303

            def sleep(seconds: float) -> None:
                if not pages:
                    run_id = next((flow / "runs").iterdir()).name
                    pages.append(client.get(f"/run?flow=flows/flaky&run={run_id}").text)

            handle = runner.begin(flow, params={"marker": str(tmp_path / "marker")})
            state = runner.advance(
                flow, handle.id, options=runner.RunOptions(make_sandbox=local_sandbox, sleep=sleep)
            )
    finally:
        advancer.close()
    assert state.status == "done", state.error
    assert re.search(r'class="small retrying">retrying in (10|9) s \(1 of 3\)<', pages[0])
