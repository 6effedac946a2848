"""The server's notifier: an approve from the page advances the run in the background, and
the run's end is told to the profile's target flow.yaml names, with the run page's URL (no
token in it)."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from starlette.testclient import TestClient

from praxis.flows.engine.notify import Notifier
from praxis.web.app import create_app
from praxis.web.background import Advancer
from praxis.web.security import Guard

from ..flows.test_notify import Hook
from .conftest import GatedRun, Served, local_sandbox
from .test_pages import form


@pytest.fixture
def told(gated: GatedRun, monkeypatch, tmp_path) -> Iterator[tuple[Served, Hook]]:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("PRAXIS_NOTIFY_COMMAND", raising=False)
    hook = Hook()
    hook.thread.start()
    profile = tmp_path / "profile.yaml"
    profile.write_text(f"notify: {{team: {{webhook: '{hook.url}'}}}}\n")
    monkeypatch.setenv("PRAXIS_PROFILE", str(profile))
    yaml = gated.flow / "flow.yaml"
    yaml.write_text(yaml.read_text() + "notify: {to: team}\n")
    guard = Guard()
    me = Notifier(base_url="http://127.0.0.1:8765", root=gated.root)
    advancer = Advancer(make_sandbox=local_sandbox, notifier=me)
    app = create_app(gated.root, guard=guard, advancer=advancer)
    try:
        with TestClient(app, base_url="http://127.0.0.1:8765") as client:
            yield Served(client, guard, advancer, gated), hook
    finally:
        advancer.close()
        hook.server.shutdown()
        hook.server.server_close()


def test_the_end_of_a_run_approved_on_the_page_is_told_with_its_page(told) -> None:  # type: ignore[no-untyped-def]
    served, hook = told
    served.login()
    r = served.client.post("/approve", data=form(served))
    assert r.status_code == 200
    served.advancer.wait(180)
    ((_, _, body),) = hook.seen
    assert body["event"] == "done" and body["run"] == served.gated.run_id
    assert set(body) == {"flow", "run", "event", "status", "phase", "url"}
    url = urlsplit(body["url"])
    assert (url.netloc, url.path) == ("127.0.0.1:8765", "/run")
    assert parse_qs(url.query) == {"flow": [served.gated.ref], "run": [served.gated.run_id]}
    assert served.guard.token not in body["url"]
    page = served.client.get(served.run_url()).text
    assert "notified" in page  # the event is on the run page
