"""A real browser on the flows page: start a run from it, and see the page follow the run
(its badge changes from advancing to the Gate) without a reload; the runs' history, and two
runs compared."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from ..test_history import two_runs
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


@pytest.fixture
def two_runs_served(tmp_path: Path) -> Iterator[tuple[LiveServer, str, str]]:
    root = tmp_path / "root"
    flow, a, b = two_runs(root / "flows")
    with LiveServer(GatedRun(root=root, flow=flow, run_id=b)) as server:
        yield server, a, b


def test_the_flows_page_lists_run_history_and_compares_two_runs(
    two_runs_served: tuple[LiveServer, str, str],
) -> None:
    """Each run's start, time, parameters and Gate decisions; Compare opens the page of what
    changed between the two chosen runs."""
    live, a, b = two_runs_served
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(live.url)
            newest = page.locator(f'tr[data-run="{b}"]')
            expect(newest.locator(".params")).to_have_text("place=north scale=1")
            expect(newest.locator(".decided")).to_have_text(
                "clean rejected by person; clean approved by person"
            )
            expect(newest.locator(".took")).to_contain_text(" ")
            expect(newest.locator(".began")).to_contain_text("UTC")
            page.screenshot(path=str(SHOTS / "flows-history.png"), full_page=True)
            form = page.locator("form.compare")
            expect(form.locator('select[name="before"]')).to_have_value(a)
            expect(form.locator('select[name="after"]')).to_have_value(b)
            form.get_by_role("button", name="Compare").click()
            expect(page.locator("h1")).to_have_text("weather: what changed")
            phases = page.locator("#phases tbody tr")
            expect(phases.nth(1)).to_contain_text("report")
            expect(phases.nth(1).locator("td").nth(2)).to_contain_text("reused")
            keyed = page.locator('section[data-output="clean.csv"]')
            expect(keyed.locator(".counts")).to_contain_text(
                "1 row added · 1 removed · 1 changed · rows matched by key day"
            )
            expect(keyed.locator("table.rows")).to_contain_text("day=3")
            cells = keyed.locator("table.cells tbody tr")
            expect(cells).to_have_count(1)
            expect(cells.first).to_contain_text("day=2")
            expect(cells.first.locator("td.old")).to_have_text("7")
            expect(cells.first.locator("td.new")).to_have_text("8")
            expect(page.locator('section[data-output="report.txt"] h3')).to_contain_text("same")
            page.screenshot(path=str(SHOTS / "compare.png"), full_page=True)
            page.goto(live.url.split("?", 1)[0] + f"compare?flow=flows/weather&before={a}&after=x")
            expect(page.locator("body")).to_contain_text("weather has no run 'x'")
        finally:
            browser.close()
