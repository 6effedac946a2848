"""The reviewer UI refuses strangers: start-up token, session cookie, CSRF, origin, host, paths."""

from __future__ import annotations

import os

from starlette.testclient import TestClient

from praxis.flows.engine.runner import load_flow
from praxis.flows.store.handle import RunHandle
from praxis.web.app import create_app
from praxis.web.security import Guard, host_names

from .conftest import GatedRun, Served


def revision(gated: GatedRun) -> int:
    return RunHandle.open(load_flow(gated.flow), gated.run_id).state.revision


def csrf_of(served: Served) -> str:
    page = served.client.get(served.run_url())
    assert page.status_code == 200
    return page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]


def test_a_request_without_the_token_is_refused(served: Served) -> None:
    for url in ("/", served.run_url(), "/static/app.css"):
        r = served.client.get(url)
        assert r.status_code == 403
        assert "?token=" in r.text
    assert served.client.get("/?token=wrong").status_code == 403


def test_the_token_opens_a_session_and_leaves_the_url(served: Served) -> None:
    r = served.client.get(f"/run?flow=x&token={served.guard.token}", follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == "/run?flow=x"
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    page = served.client.get("/")
    assert page.status_code == 200
    assert "sales-report" in page.text
    assert page.headers["x-content-type-options"] == "nosniff"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


def test_a_post_carrying_only_the_token_is_refused(served: Served) -> None:
    before = revision(served.gated)
    r = served.client.post(
        f"/approve?token={served.guard.token}",
        data={"flow": served.gated.ref, "run": served.gated.run_id},
    )
    assert r.status_code == 403
    assert revision(served.gated) == before


def test_a_post_without_the_sessions_csrf_token_is_refused(served: Served) -> None:
    served.login()
    before = revision(served.gated)
    form = {"flow": served.gated.ref, "run": served.gated.run_id, "revision": str(before)}
    for csrf in (None, "", "0" * 64, served.guard.csrf_for("another-session")):
        data = dict(form) if csrf is None else {**form, "csrf": csrf}
        r = served.client.post("/approve", data=data)
        assert r.status_code == 403, csrf
        assert "security token" in r.text
    assert revision(served.gated) == before
    assert RunHandle.open(load_flow(served.gated.flow), served.gated.run_id).state.waiting == "gate"


def test_cross_site_posts_are_refused_even_with_a_valid_csrf_token(served: Served) -> None:
    served.login()
    before = revision(served.gated)
    form = {
        "flow": served.gated.ref,
        "run": served.gated.run_id,
        "revision": str(before),
        "csrf": csrf_of(served),
    }
    for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
        r = served.client.post("/approve", data=form, headers=headers)
        assert r.status_code == 403
        assert "cross-site" in r.text
    assert revision(served.gated) == before


def test_an_unknown_host_is_refused(gated: GatedRun) -> None:
    guard = Guard()
    app = create_app(gated.root, guard=guard, allowed_hosts={"127.0.0.1:8765"})
    with TestClient(app, base_url="http://rebound.example:8765") as client:
        r = client.get(f"/?token={guard.token}")
        assert r.status_code == 400
        assert "Invalid host header" in r.text  # Starlette's TrustedHostMiddleware
        assert "set-cookie" not in r.headers  # refused before the guard saw the token
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        r = client.get(f"/?token={guard.token}", follow_redirects=False)
        assert r.status_code == 303 and "set-cookie" in r.headers


def test_allowed_hosts_are_compared_by_name_as_starlette_does() -> None:
    given = ["127.0.0.1:8765", "localhost:8765", "localhost", "[::1]:8765", "Host.Example"]
    assert host_names(given) == ["127.0.0.1", "::1", "host.example", "localhost"]


def test_paths_outside_the_run_folder_are_refused(served: Served) -> None:
    served.login()
    run_dir = served.gated.flow / "runs" / served.gated.run_id
    secret = served.gated.root / "secret.txt"
    secret.write_text("not for the browser\n")
    os.symlink(secret, run_dir / "output" / "link.txt")
    base = f"/file?flow={served.gated.ref}&run={served.gated.run_id}&path="
    for path in ("../../flow.yaml", "/etc/passwd", "output/../../../secret.txt", "output/link.txt"):
        r = served.client.get(base + path)
        assert r.status_code == 403, path
        assert "not for the browser" not in r.text
    ok = served.client.get(base + "output/review.csv")
    assert ok.status_code == 200
    assert ok.text.startswith("order_id,")
    # the flow and run named by the URL are checked too
    assert served.client.get("/run?flow=../etc&run=x").status_code == 404
    assert served.client.get(f"/run?flow={served.gated.ref}&run=../../x").status_code == 404


def test_html_from_a_run_is_served_as_text(served: Served) -> None:
    served.login()
    run_dir = served.gated.flow / "runs" / served.gated.run_id
    (run_dir / "scratch" / "page.html").write_text("<script>alert(1)</script>")
    r = served.client.get(
        f"/file?flow={served.gated.ref}&run={served.gated.run_id}&path=scratch/page.html"
    )
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    assert "sandbox" in r.headers["content-security-policy"]
