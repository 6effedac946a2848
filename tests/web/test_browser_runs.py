"""A real browser on the flows page: start a run from it, and see the page follow the run
(its badge changes from advancing to the Gate) without a reload."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect, sync_playwright

from .conftest import GatedRun
from .test_browser import ARGS, CHROMIUM, SHOTS, LiveServer
from .test_browser import pytestmark as pytestmark


@pytest.fixture
def live_server(gated: GatedRun) -> Iterator[LiveServer]:
    with LiveServer(gated) as server:
        yield server


def test_a_run_started_on_the_flows_page_is_followed_there(live_server: LiveServer) -> None:
    live = live_server
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(live.url)
            page.get_by_role("button", name="Start a run").click()
            expect(page.get_by_role("status")).to_contain_text("Started.")
            run_id = page.url.split("run=", 1)[1].split("&", 1)[0]
            page.goto(live.url.split("?", 1)[0])
            page.evaluate("window.notReloaded = true")
            badge = page.locator(f'tr[data-run="{run_id}"] .badge')
            expect(badge).to_have_text("at Gate after flag", timeout=120_000)
            assert page.evaluate("window.notReloaded === true")
            expect(page.locator("#pool-advancing")).to_have_text("0", timeout=30_000)
            page.screenshot(path=str(SHOTS / "flows.png"), full_page=True)
        finally:
            browser.close()
