"""notify: a run waiting at a Gate, failed or done is told to a webhook (tested against a
loopback HTTP server) and to the person's command; a failing notifier is logged and
recorded, never fails the run; flow.yaml may not name a command."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from praxis.flows.definition import contract
from praxis.flows.engine import notify, runner
from praxis.flows.store.handle import RunHandle

from .gates import FILES, TWO_GATES
from .helpers import Fakes, write_flow


class Hook:
    """A loopback HTTP server that records each request; ``answer`` is its reply."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict[str, Any]]] = []
        self.answer = (204, {})
        self.stall = threading.Event()  # set: the next request never gets an answer
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                size = int(self.headers.get("Content-Length", "0"))
                hook.seen.append(("POST", self.path, json.loads(self.rfile.read(size))))
                if hook.stall.is_set():
                    threading.Event().wait(5)  # longer than the test's timeout
                    return
                code, headers = hook.answer
                self.send_response(code)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST  # noqa: N815  (a followed redirect would show here)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"


@pytest.fixture
def hook() -> Iterator[Hook]:
    h = Hook()
    h.thread.start()
    try:
        yield h
    finally:
        h.server.shutdown()
        h.server.server_close()


def gated(tmp_path: Path, notify_yaml: str) -> Path:
    text = TWO_GATES.replace("    phases:\n", f"    notify: {notify_yaml}\n    phases:\n", 1)
    return write_flow(tmp_path / "gates", text % {"backend": "fake"}, FILES)


def kinds(flow: Path, run_id: str) -> list[Any]:
    run = RunHandle.open(runner.load_flow(flow), run_id)
    return [e for e in run.log.read() if e.kind in ("notified", "notify_failed")]


def test_a_gate_and_the_end_are_told_to_the_webhook(tmp_path, hook: Hook, monkeypatch) -> None:
    monkeypatch.delenv("PRAXIS_NOTIFY_COMMAND", raising=False)
    flow = gated(tmp_path, "{webhook: " + hook.url + "}")
    run = runner.begin(flow)
    me = notify.Notifier(base_url="http://127.0.0.1:8765", root=tmp_path)
    state = runner.advance(flow, run.id, make_sandbox=Fakes(), notifier=me)
    assert state.waiting == "gate"
    ((method, path, body),) = hook.seen
    assert (method, path) == ("POST", "/hook")
    assert body == {
        "flow": "gates",
        "run": run.id,
        "event": "gate",
        "status": "paused",
        "gate": "pick",
        "files": [str(run.paths.out("picks.csv"))],
        "error": None,
        "url": f"http://127.0.0.1:8765/run?flow=gates&run={run.id}",
    }
    assert "token" not in body["url"]
    # advancing a run that waits changes nothing: nobody is told again
    runner.advance(flow, run.id, make_sandbox=Fakes(), notifier=me)
    assert len(hook.seen) == 1
    for gate in ("pick", "total"):
        runner.approve(flow, run.id, gate=gate)
        state = runner.advance(flow, run.id, make_sandbox=Fakes(), notifier=me)
    assert state.status == "done"
    assert [b["event"] for _, _, b in hook.seen] == ["gate", "gate", "done"]
    assert hook.seen[-1][2]["files"][-1].endswith("report.txt")
    told = kinds(flow, run.id)
    assert [(e.kind, e.about) for e in told] == [("notified", "gate")] * 2 + [("notified", "done")]


def test_a_failing_webhook_is_logged_and_recorded_and_the_run_goes_on(
    tmp_path, hook: Hook, caplog, monkeypatch
) -> None:
    monkeypatch.delenv("PRAXIS_NOTIFY_COMMAND", raising=False)
    hook.answer = (500, {})
    flow = gated(tmp_path, "{webhook: " + hook.url + "}")
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, make_sandbox=Fakes())
    assert state.waiting == "gate" and state.status == "paused"
    (failed,) = kinds(flow, run.id)
    assert failed.kind == "notify_failed" and "500" in failed.error
    assert "notify webhook 127.0.0.1" in caplog.text
    runner.approve(flow, run.id, gate="pick")  # the run is decided as ever


def test_a_redirect_is_not_followed(tmp_path, hook: Hook, monkeypatch) -> None:
    monkeypatch.delenv("PRAXIS_NOTIFY_COMMAND", raising=False)
    hook.answer = (302, {"Location": "/elsewhere"})
    flow = gated(tmp_path, "{webhook: " + hook.url + "}")
    run = runner.begin(flow)
    runner.advance(flow, run.id, make_sandbox=Fakes())
    assert [p for _, p, _ in hook.seen] == ["/hook"]  # never /elsewhere
    (failed,) = kinds(flow, run.id)
    assert failed.kind == "notify_failed" and "302" in failed.error


def test_a_webhook_that_never_answers_is_given_up(tmp_path, hook: Hook, monkeypatch) -> None:
    monkeypatch.delenv("PRAXIS_NOTIFY_COMMAND", raising=False)
    monkeypatch.setattr(notify, "TIMEOUT", 0.5)
    hook.stall.set()
    flow = gated(tmp_path, "{webhook: " + hook.url + "}")
    run = runner.begin(flow)
    assert runner.advance(flow, run.id, make_sandbox=Fakes()).waiting == "gate"
    (failed,) = kinds(flow, run.id)
    assert failed.kind == "notify_failed" and "timed out" in failed.error


def test_the_persons_command_reads_the_json_and_a_failure_is_told(tmp_path, monkeypatch) -> None:
    got = tmp_path / "got.json"
    script = tmp_path / "tell.py"
    script.write_text(f"import sys\nopen({str(got)!r}, 'wb').write(sys.stdin.buffer.read())\n")
    monkeypatch.setenv("PRAXIS_NOTIFY_COMMAND", f"{sys.executable} {script}")
    files = dict(FILES, **{"data/orders.csv": "id,amount\n1,x\n"})  # amount not a number
    flow = write_flow(tmp_path / "gates", TWO_GATES % {"backend": "fake"}, files)
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, make_sandbox=Fakes())
    assert state.status == "failed"
    body = json.loads(got.read_text())
    assert (
        body["event"] == "failed" and body["gate"] is None and "could not convert" in body["error"]
    )
    assert body["url"] is None  # no page address known: none is made up
    monkeypatch.setenv("PRAXIS_NOTIFY_COMMAND", f"{sys.executable} -c 'raise SystemExit(3)'")
    runner.rerun(flow, "pick", run.id)
    runner.advance(flow, run.id, make_sandbox=Fakes())
    told = kinds(flow, run.id)
    assert [e.kind for e in told] == ["notified", "notify_failed"]
    assert "exited 3" in told[-1].error


def test_flow_yaml_may_name_a_webhook_but_never_a_command(tmp_path) -> None:
    flow = gated(tmp_path, "{webhook: 'file:///etc/passwd', command: 'curl x', when: [later]}")
    _, report = contract.load(flow)
    text = "\n".join(str(e) for e in report.errors)
    assert "notify.command: a command named by flow.yaml would run on this machine" in text
    assert "notify.webhook: expected an http:// or https:// URL" in text
    assert "notify.when: expected a list of gate, failed, done" in text


def test_when_limits_what_is_told(tmp_path, hook: Hook, monkeypatch) -> None:
    monkeypatch.delenv("PRAXIS_NOTIFY_COMMAND", raising=False)
    flow = gated(tmp_path, "{webhook: " + hook.url + ", when: [done]}")
    run = runner.begin(flow)
    assert runner.advance(flow, run.id, make_sandbox=Fakes()).waiting == "gate"
    assert hook.seen == []
