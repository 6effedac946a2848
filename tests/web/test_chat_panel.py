"""The chat panel of the reviewer UI: a message runs one chat turn; its writes show as diffs."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from praxis.agent.scripted import ScriptedChatModel
from praxis.chat.authoring import WEB_NOBODY
from praxis.web.app import create_app
from praxis.web.security import Guard

from .conftest import GatedRun

NEW_FLOW = "flow: sales-report\ndescription: changed by the chat\n"


@pytest.fixture
def chat_client(gated: GatedRun) -> Iterator[tuple[TestClient, Guard, list]]:
    guard = Guard()
    app = create_app(gated.root, guard=guard)
    scripts: list = []
    app.state.chat.model_factory = lambda folder: ScriptedChatModel(replies=scripts.pop(0))
    app.state.chat.sandbox = {"backend": "local"}
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        r = client.get(f"/?token={guard.token}", follow_redirects=False)
        assert r.status_code == 303
        yield client, guard, scripts


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert match
    return match.group(1)


def test_a_message_runs_a_turn_and_the_page_shows_the_diff(
    chat_client: tuple[TestClient, Guard, list], gated: GatedRun
) -> None:
    client, _, scripts = chat_client
    before = (gated.flow / "flow.yaml").read_bytes()
    page = client.get(f"/chat?flow={gated.ref}")
    assert page.status_code == 200 and "No messages yet." in page.text
    scripts.append(
        [
            {
                "tool_calls": [
                    {"name": "write_file", "args": {"path": "flow.yaml", "text": NEW_FLOW}}
                ]
            },
            {"tool_calls": [{"name": "run_python", "args": {"code": "print(1)"}}]},
            {"text": "Rewrote the description."},
        ]
    )
    form = {"csrf": csrf_of(page.text), "flow": gated.ref, "session": "", "message": "shorter"}
    r = client.post("/chat/send", data=form, follow_redirects=True)
    assert r.status_code == 200
    assert "+description: changed by the chat" in r.text
    assert "Rewrote the description." in r.text
    assert WEB_NOBODY.split(";")[0] in r.text.replace("&#39;", "'")
    assert (gated.flow / "flow.yaml").read_text() == NEW_FLOW

    session = re.search(r'name="session" value="([0-9-]+)"', r.text)
    assert session
    form = {"csrf": csrf_of(r.text), "flow": gated.ref, "session": session.group(1)}
    r = client.post("/chat/undo", data=form, follow_redirects=True)
    assert r.status_code == 200 and "The person undid your last write of flow.yaml" in r.text
    assert (gated.flow / "flow.yaml").read_bytes() == before


def test_a_post_without_the_csrf_token_changes_nothing(
    chat_client: tuple[TestClient, Guard, list], gated: GatedRun
) -> None:
    client, _, scripts = chat_client
    scripts.append([{"text": "never"}])
    form = {"flow": gated.ref, "session": "", "message": "hi", "csrf": "0" * 64}
    r = client.post("/chat/send", data=form)
    assert r.status_code == 403
    assert scripts == [[{"text": "never"}]]
    assert not (gated.flow / ".chat").exists()


def test_an_unknown_flow_is_not_found(chat_client: tuple[TestClient, Guard, list]) -> None:
    client, _, _ = chat_client
    assert client.get("/chat?flow=../etc").status_code == 404


def test_the_flows_page_links_each_flow_to_its_chat(
    chat_client: tuple[TestClient, Guard, list], gated: GatedRun
) -> None:
    client, _, _ = chat_client
    page = client.get("/")
    assert 'href="/chat?flow=flows%2Fsales-report">chat about this flow</a>' in page.text
