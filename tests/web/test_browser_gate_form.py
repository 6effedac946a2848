"""A Gate's form in Chromium: the page renders its fields beside Approve, a value its field
refuses is refused naming the field (nothing changes), and the approved values reach the next
phase as ``params``. Screenshot: $PRAXIS_SHOTS (default /tmp/shots/forms)/retry-form.png."""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from praxis.flows.engine import runner
from praxis.flows.engine.runner import load_flow
from praxis.flows.store.handle import RunHandle

from .conftest import GatedRun, local_sandbox
from .test_browser import ARGS, CHROMIUM, LiveServer, wait_for_run

SHOTS = Path(os.environ.get("PRAXIS_SHOTS", "/tmp/shots/forms"))

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists() and os.environ.get("CI") != "true",
        reason="needs /usr/bin/chromium (apt-get install chromium)",
    ),
]

FLOW = """
    flow: weekly
    description: Loads the week's orders; the reviewer sets the threshold the report uses.
    sandbox: {backend: local, timeout: 300}
    phases:
      - id: load
        kind: script
        script: load.py
        outputs: [orders.csv]
        retries: {count: 3, backoff: 10s, on: [timeout, kernel_died, out_of_memory]}
        review:
          required: true
          form:
            threshold: {type: number, default: 5, label: Flag orders above (EUR thousand)}
            region: {choices: [north, south], required: true}
            comment: {type: text}
      - id: report
        kind: script
        script: report.py
        inputs: {working: [orders.csv]}
        outputs: [seen.json]
"""
LOAD = 'open("orders.csv", "w").write("id,region,amount\\n1,north,7\\n2,south,3\\n")\n'
REPORT = """
    import json
    json.dump({k: params[k] for k in ("threshold", "region", "comment")}, open("seen.json", "w"))
"""


@pytest.fixture
def weekly(tmp_path: Path) -> GatedRun:
    root = tmp_path / "root"
    flow = root / "flows" / "weekly"
    flow.mkdir(parents=True)
    (flow / "flow.yaml").write_text(textwrap.dedent(FLOW))
    (flow / "load.py").write_text(LOAD)
    (flow / "report.py").write_text(textwrap.dedent(REPORT))
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=local_sandbox))
    assert state.waiting == "gate", state
    return GatedRun(root=root, flow=flow, run_id=run.id)


@pytest.fixture
def page(weekly: GatedRun) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with LiveServer(weekly) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 1000})
            tab.goto(server.url)
            tab.get_by_role("link", name=weekly.run_id).click()
            yield tab
        finally:
            browser.close()


def test_the_gate_form_is_filled_checked_and_reaches_the_next_phase(
    weekly: GatedRun, page: Any
) -> None:
    from playwright.sync_api import expect

    form = page.locator("#gate-form")
    expect(form).to_be_visible()
    threshold = form.locator("input[name='value.threshold']")
    expect(threshold).to_have_value("5")  # the default
    expect(form).to_contain_text("Flag orders above (EUR thousand)")
    form.locator("select[name='value.region']").select_option("south")
    form.locator("textarea[name='value.comment']").fill("south is short this week")
    threshold.fill("seven")
    page.get_by_role("button", name="Approve and continue").click()
    expect(page.locator(".refusal").first).to_contain_text(
        "threshold='seven': expected a number (threshold, in the form of the Gate after load)"
    )
    run = RunHandle.open(load_flow(weekly.flow), weekly.run_id)
    assert (run.state.waiting, run.state.phase("load").answers) == ("gate", {})

    form = page.locator("#gate-form")
    form.locator("input[name='value.threshold']").fill("7")
    form.locator("select[name='value.region']").select_option("south")
    form.locator("textarea[name='value.comment']").fill("south is short this week")
    page.screenshot(path=str(SHOTS / "retry-form.png"), full_page=True)
    page.get_by_role("button", name="Approve and continue").click()
    wait_for_run(weekly, "done")
    run = RunHandle.open(load_flow(weekly.flow), weekly.run_id)
    seen = json.loads(run.paths.out("seen.json").read_text())
    assert seen == {"threshold": 7, "region": "south", "comment": "south is short this week"}
