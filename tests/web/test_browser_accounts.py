"""The page in Chromium with accounts: a person signs in (name and password), the header says
who is signed in, "Waiting for me" lists the Gates this person may decide, and a decision by
a person without the Gate's role is refused naming the role. Screenshots go to
$PRAXIS_SHOTS (default /tmp/shots/accounts), named ident-*.png."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from praxis.flows.engine.runner import load_flow
from praxis.flows.store.handle import RunHandle
from praxis.service.accounts import Accounts

from ..test_authority import FINANCE, at_total
from .conftest import GatedRun
from .test_browser import ARGS, CHROMIUM, LiveServer

SHOTS = Path(os.environ.get("PRAXIS_SHOTS", "/tmp/shots/accounts"))

pytestmark = [
    pytest.mark.browser,
    pytest.mark.usefixtures("allow_local"),
    pytest.mark.skipif(
        not CHROMIUM.exists() and os.environ.get("CI") != "true",
        reason="needs /usr/bin/chromium (apt-get install chromium)",
    ),
]


@pytest.fixture
def finance(tmp_path: Path) -> GatedRun:
    """A run waiting at a Gate only finance decides; alice holds finance, bob no role."""
    flow, run = at_total(tmp_path / "root", FINANCE)
    accounts = Accounts()
    accounts.add("person", "alice", ["finance"])
    accounts.add("person", "bob")
    accounts.set_password("alice", "alice-secret-1")
    accounts.set_password("bob", "bob-secret-1")
    return GatedRun(root=tmp_path / "root", flow=flow, run_id=run.id)


@pytest.fixture
def browser(finance: GatedRun) -> Iterator[tuple[Any, LiveServer]]:
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with LiveServer(finance) as server, sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            tab = chromium.new_page(viewport={"width": 1280, "height": 900})
            tab.goto(server.url)  # the start-up token: whoever started the server
            yield tab, server
        finally:
            chromium.close()


def sign_in(page: Any, server: LiveServer, name: str, password: str) -> None:
    """The sign-in form the header links to, filled and sent."""
    assert page.locator("#who a").get_attribute("href") == "/login"
    page.goto(f"http://127.0.0.1:{server.port}/login")
    page.get_by_label("name").fill(name)
    page.get_by_label("password").fill(password)
    page.get_by_role("button", name="Sign in").click()


def test_sign_in_waiting_for_me_and_a_refusal_naming_the_role(
    finance: GatedRun, browser: tuple[Any, LiveServer]
) -> None:
    from playwright.sync_api import expect

    page, server = browser
    sign_in(page, server, "bob", "wrong password")
    expect(page.locator("#refusal")).to_contain_text("do not match")
    page.screenshot(path=str(SHOTS / "ident-login-refused.png"), full_page=True)
    sign_in(page, server, "bob", "bob-secret-1")
    expect(page.locator("#who")).to_contain_text("person:bob")
    expect(page.locator("#waiting-for-me")).to_contain_text("No Gate waits for person:bob")
    page.get_by_role("link", name=finance.run_id).click()
    page.locator("#approve").click()
    refusal = page.locator("#refusal")
    expect(refusal).to_contain_text("person:bob may not approve")
    expect(refusal).to_contain_text("the Gate after total needs role finance")
    page.screenshot(path=str(SHOTS / "ident-refused-needs-finance.png"), full_page=True)
    state = RunHandle.open(load_flow(finance.flow), finance.run_id).state
    assert (state.waiting, state.gate) == ("gate", "total")

    sign_in(page, server, "alice", "alice-secret-1")
    expect(page.locator("#who")).to_contain_text("person:alice")
    mine = page.locator("#waiting-for-me")
    expect(mine).to_contain_text(f"run {finance.run_id}")
    expect(mine).to_contain_text("the Gate after total")
    expect(mine).to_contain_text("a person with role finance")
    page.screenshot(path=str(SHOTS / "ident-waiting-for-me.png"), full_page=True)
    mine.get_by_role("link").first.click()
    page.locator("#approve").click()
    expect(page.get_by_role("status")).to_contain_text("Approved")
    approved = [e for e in RunHandle.open(load_flow(finance.flow), finance.run_id).log.read()
                if e.kind == "gate_approved"]  # fmt: skip
    assert [e.actor for e in approved] == ["person", "person:alice"]  # type: ignore[attr-defined]
    page.goto(f"http://127.0.0.1:{server.port}/audit?flow=gates")
    rows = page.locator("table.audit tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("person:bob")
    expect(rows.nth(0)).to_contain_text("refused")
    expect(rows.nth(1)).to_contain_text("person:alice")
    expect(rows.nth(1)).to_contain_text("done")
    page.screenshot(path=str(SHOTS / "ident-audit.png"), full_page=True)
