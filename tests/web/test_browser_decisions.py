"""The reviewer's page in Chromium after a decision: a reopen or re-run that would replace an
edit asks keep or discard (and keeps the fix when told to), and after Approve the page shows
the run as it is (running, with its live output), never a Continue that would be refused.
Screenshots go to $PRAXIS_SHOTS (default /tmp/shots/decisions)."""

from __future__ import annotations

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
from .test_browser import ARGS, CHROMIUM, LiveServer

SHOTS = Path(os.environ.get("PRAXIS_SHOTS", "/tmp/shots/decisions"))

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists() and os.environ.get("CI") != "true",
        reason="needs /usr/bin/chromium (apt-get install chromium)",
    ),
]

FLOW = """
    flow: waits
    description: Picks rows for a reviewer, then applies them once released.
    sandbox: {backend: local, timeout: 300}
    params: {release: ""}
    phases:
      - id: pick
        kind: script
        script: pick.py
        outputs: [picks.csv]
        review: required
        checks:
          picks.csv: {key: [id], values: {action: [keep, drop]}}
      - id: apply
        kind: script
        script: apply.py
        inputs: {working: [picks.csv]}
        outputs: [applied.txt]
"""
PICK = 'open("picks.csv", "w").write("id,city,action\\n1,Olso,keep\\n2,Bergen,drop\\n")\n'
# the phase prints, then waits until the test releases it (a file appears): no timing
APPLY = """
    import pathlib, time
    print("apply started: waiting to be released", flush=True)
    while not pathlib.Path(params["release"]).exists():
        time.sleep(0.05)
    open("applied.txt", "w").write(open("picks.csv").read())
"""


@pytest.fixture
def waits(tmp_path: Path) -> GatedRun:
    root = tmp_path / "root"
    flow = root / "flows" / "waits"
    flow.mkdir(parents=True)
    (flow / "flow.yaml").write_text(textwrap.dedent(FLOW))
    (flow / "pick.py").write_text(PICK)
    (flow / "apply.py").write_text(textwrap.dedent(APPLY))
    run = runner.begin(flow, params={"release": str(tmp_path / "release")})
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=local_sandbox))
    assert state.waiting == "gate", state
    return GatedRun(root=root, flow=flow, run_id=run.id)


@pytest.fixture
def page(waits: GatedRun) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with LiveServer(waits) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 1000})
            tab.goto(server.url)
            tab.get_by_role("link", name=waits.run_id).click()
            yield tab
        finally:
            browser.close()


def state_of(waits: GatedRun) -> Any:
    return RunHandle.open(load_flow(waits.flow), waits.run_id)


def fix_city(page: Any) -> None:
    from playwright.sync_api import expect

    page.locator('table.grid input[value="Olso"]').fill("Oslo")
    page.get_by_role("button", name="Save picks.csv").click()
    expect(page.get_by_role("status")).to_contain_text("Saved")


def test_a_reopen_that_would_replace_an_edit_asks_and_keeps_the_fix(
    waits: GatedRun, page: Any
) -> None:
    from playwright.sync_api import expect

    fix_city(page)
    reject = page.locator("form.reject")
    choice = reject.locator(".edits-choice")
    expect(choice).to_be_visible()
    expect(choice.locator(".edits-names")).to_have_text("picks.csv")
    reject.locator("textarea[name=note]").fill("pick again")
    reject.get_by_role("button", name="Reject and reopen").click()  # no choice: not sent
    assert choice.locator("input[value=keep]").evaluate("i => !i.validity.valid")
    assert state_of(waits).state.waiting == "gate"
    page.screenshot(path=str(SHOTS / "reopen-asks-keep-or-discard.png"), full_page=True)
    choice.get_by_label("Keep them", exact=False).check()
    reject.get_by_role("button", name="Reject and reopen").click()
    # pick runs again and the run waits at its Gate again: the page shows it anew
    expect(page.locator("#run-status")).to_have_text(
        "waiting at the Gate after pick", timeout=120_000
    )
    expect(page.locator("#moved")).to_contain_text("it waits at the Gate after pick")
    page.locator("#moved-reload").click()
    run = state_of(waits)
    assert run.state.phase("pick").attempt == 2
    assert b"1,Oslo,keep" in run.paths.out("picks.csv").read_bytes()  # the fix was kept
    kinds = [e.kind for e in run.log.read()]
    assert "edits_carried" in kinds
    expect(page.locator("table.events")).to_contain_text("edits_carried")
    expect(page.locator(".carried")).to_contain_text(
        "Your earlier edits of picks.csv were kept: 1 re-applied to the new output."
    )
    expect(page.locator('table.grid input[value="Olso"]')).to_have_count(0)
    page.screenshot(path=str(SHOTS / "reopen-kept-the-fix.png"), full_page=True)

    # a re-run from pick, discarding: the page asks the same, and the phase's own rows return
    rerun = page.locator("form.rerun")
    expect(rerun.locator(".edits-choice")).to_be_visible()
    rerun.locator(".edits-choice").get_by_label("Discard them", exact=False).check()
    rerun.get_by_role("button", name="Re-run").click()
    expect(page.locator("#moved")).to_contain_text("waits at the Gate after pick", timeout=120_000)
    page.locator("#moved-reload").click()
    expect(page.locator('table.grid input[value="Olso"]')).to_have_count(1)
    run = state_of(waits)
    assert run.state.phase("pick").attempt == 3 and run.state.waiting == "gate"
    assert b"1,Olso,keep" in run.paths.out("picks.csv").read_bytes()


def test_after_approve_the_page_shows_the_run_running_with_its_output_then_done(
    waits: GatedRun, page: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    page.get_by_role("button", name="Approve and continue").click()
    expect(page.get_by_role("status")).to_contain_text("Approved")
    badge = page.locator("#run-status")
    # apply waits to be released: the run is running, its output shows as it is printed
    expect(badge).to_contain_text("running")
    expect(page.locator("#live-log")).to_contain_text("apply started", timeout=60_000)
    expect(page.locator("#live-phase")).to_have_text("apply")
    expect(page.get_by_role("button", name="Continue the run")).to_have_count(0)
    assert "paused" not in (badge.text_content() or "")
    page.screenshot(path=str(SHOTS / "after-approve-running.png"), full_page=True)
    (tmp_path / "release").write_text("go")
    expect(badge).to_have_text("done", timeout=120_000)
    expect(page.locator("#moved")).to_contain_text("the run is done")
    page.locator("#moved-reload").click()
    expect(badge).to_have_text("done")  # shown anew, as run.json says
    expect(page.get_by_role("button", name="Continue the run")).to_have_count(0)
    assert state_of(waits).state.status == "done"
    page.screenshot(path=str(SHOTS / "after-approve-done.png"), full_page=True)
