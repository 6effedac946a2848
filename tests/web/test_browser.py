"""A real browser over a real server: edit a cell at the Gate, save, approve, see the effect.

Chromium from Debian (/usr/bin/chromium) driven by Playwright; the server is uvicorn on a
free 127.0.0.1 port in a thread, over a copy of flows/sales-report waiting at its Gate.
Screenshots of the Gate and the finished run go to artifacts/screenshots/.
"""

from __future__ import annotations

import csv
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from praxis.flows.engine.runner import load_flow
from praxis.flows.store.handle import RunHandle
from praxis.web.app import create_app
from praxis.web.background import Advancer
from praxis.web.security import Guard

from ..ports import free_port
from .conftest import REPO, GatedRun, local_sandbox

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = REPO / "artifacts" / "screenshots"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists() and os.environ.get("CI") != "true",
        reason="needs /usr/bin/chromium (apt-get install chromium)",
    ),
]


class LiveServer:
    def __init__(self, gated: GatedRun) -> None:
        self.port = free_port()
        self.guard = Guard()
        self.advancer = Advancer(make_sandbox=local_sandbox)
        hosts = {f"127.0.0.1:{self.port}"}
        app = create_app(gated.root, guard=self.guard, advancer=self.advancer, allowed_hosts=hosts)
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.guard.token}"

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.advancer.close()


@pytest.fixture
def live(gated: GatedRun) -> Iterator[LiveServer]:
    with LiveServer(gated) as server:
        yield server


def wait_for_run(gated: GatedRun, status: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        state = RunHandle.open(load_flow(gated.flow), gated.run_id).state
        if state.status == status and state.waiting is None:
            return
        assert state.status != "failed", state.error
        assert time.monotonic() < deadline, f"run still {state.status}"
        time.sleep(0.2)


def test_edit_a_cell_at_the_gate_save_approve_and_the_next_phase_reads_it(
    gated: GatedRun, live: LiveServer
) -> None:
    from playwright.sync_api import expect, sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    output = gated.flow / "runs" / gated.run_id / "output"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(live.url)
            expect(page.locator("h1")).to_have_text("Flows")
            page.get_by_role("link", name=gated.run_id).click()
            expect(
                page.get_by_role("heading", name="Review at the Gate after flag")
            ).to_be_visible()

            row = page.locator("table.grid tr", has=page.locator('input[value="O0151"]'))
            cell = row.get_by_label("action row", exact=False)
            expect(cell).to_have_value("drop")
            cell.fill("keep")
            expect(cell).to_have_class("changed")
            page.get_by_role("button", name="Save review.csv").first.click()
            expect(page.get_by_role("status")).to_contain_text("Saved.")
            expect(row.get_by_label("action row", exact=False)).to_have_value("keep")
            page.screenshot(path=str(SHOTS / "gate.png"), full_page=True)
            assert (
                "O0151,North,doohickey,32,-1760.0,negative amount,keep"
                in (output / "review.csv").read_text()
            )

            page.get_by_role("button", name="Approve and continue").click()
            expect(page.get_by_role("status")).to_contain_text("Approved.")
            wait_for_run(gated, "done")
            # the page follows the run by itself: it polls; the badge and a banner say what changed
            expect(page.locator("#run-status")).to_have_text("done", timeout=30_000)
            page.screenshot(path=str(SHOTS / "run.png"), full_page=True)
        finally:
            browser.close()

    report = (output / "report.md").read_text()
    assert "Orders left out after review: 2." in report
    # O0151 was the only flagged North order: kept, every clean North order is counted
    with (output / "clean.csv").open() as fh:
        north_orders = sum(1 for row in csv.DictReader(fh) if row["region"] == "North")
    with (output / "by_region.csv").open() as fh:
        regions = {row["region"]: row for row in csv.DictReader(fh)}
    assert int(regions["North"]["orders"]) == north_orders
