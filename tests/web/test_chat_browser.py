"""A real browser sends a chat message on the flow's chat page and sees the write's diff."""

from __future__ import annotations

import threading
import time

import uvicorn

from praxis.agent.scripted import ScriptedChatModel
from praxis.web.app import create_app
from praxis.web.security import Guard

from ..ports import free_port
from .conftest import GatedRun
from .test_browser import ARGS, CHROMIUM, SHOTS, pytestmark  # noqa: F401  (same markers)

NEW_PROMPT = "Summarise revenue by region in three sentences.\n"


def test_send_a_message_and_see_the_diff_of_the_write(gated: GatedRun) -> None:
    from playwright.sync_api import expect, sync_playwright

    port, guard = free_port(), Guard()
    app = create_app(gated.root, guard=guard, allowed_hosts={f"127.0.0.1:{port}"})
    write = {"name": "write_file", "args": {"path": "prompts/summary.md", "text": NEW_PROMPT}}
    replies = [{"text": "Adding a prompt file.", "tool_calls": [write]}, {"text": "Done."}]
    app.state.chat.model_factory = lambda folder: ScriptedChatModel(replies=list(replies))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(f"http://127.0.0.1:{port}/chat?flow={gated.ref}&token={guard.token}")
                expect(page.locator("h1")).to_contain_text("Chat about sales-report")
                page.get_by_label("Message").fill("Add a prompt for a summary.")
                page.get_by_role("button", name="Send").click()
                diff = page.locator("pre.diff")
                expect(diff).to_contain_text("+++ b/prompts/summary.md")
                expect(diff.locator("span.add")).to_contain_text(["+Summarise revenue by region"])
                expect(page.locator(".msg.model .text").last).to_have_text("Done.")
                page.screenshot(path=str(SHOTS / "chat.png"), full_page=True)
            finally:
                browser.close()
    finally:
        server.should_exit = True
        thread.join(30)
    assert (gated.flow / "prompts" / "summary.md").read_text() == NEW_PROMPT
