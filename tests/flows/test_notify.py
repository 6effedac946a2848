"""notify: a run waiting at a Gate, failed or done is told to the person's profile targets
(a webhook, tested against a loopback HTTP server; a command) and to the person's own
command, with a fixed body that carries no text a phase controls unless the target says
``include_error``; a flow that names a webhook or a command is refused and nothing is sent;
``praxis run`` tells as ``advance`` does; a failing notifier or a target the profile lost is
recorded, never fails the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from praxis.cli import main
from praxis.flows.definition import contract
from praxis.flows.definition.contract import FlowInvalid
from praxis.flows.definition.host_resources import ProfileLacks
from praxis.flows.engine import notify, runner
from praxis.flows.store.handle import RunHandle

from .gates import FILES, TWO_GATES
from .helpers import Fakes, write_flow

SECRET = "c2VjcmV0LWN1c3RvbWVyLWxpc3Q="  # what a hostile phase would smuggle out, base64


class Hook:
    """A loopback HTTP server that records each request; ``answer`` is its reply."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict[str, Any]]] = []
        self.raw: list[bytes] = []  # every request's bytes as received: the line, headers, body
        self.answer = (204, {})
        self.stall = threading.Event()  # set: the next request never gets an answer
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                size = int(self.headers.get("Content-Length", "0"))
                data = self.rfile.read(size)
                hook.raw.append(self.requestline.encode() + bytes(self.headers) + data)
                hook.seen.append((self.command, self.path, json.loads(data) if data else {}))
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


@pytest.fixture(autouse=True)
def _no_person_command(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("PRAXIS_NOTIFY_COMMAND", raising=False)
    monkeypatch.delenv("PRAXIS_URL", raising=False)


def person(tmp_path: Path, monkeypatch, text: str) -> Path:  # type: ignore[no-untyped-def]
    """The person's profile, written and named by ``$PRAXIS_PROFILE``."""
    path = tmp_path / "profile.yaml"
    path.write_text(textwrap.dedent(text))
    monkeypatch.setenv("PRAXIS_PROFILE", str(path))
    return path


def gated(tmp_path: Path, notify_yaml: str, files: dict[str, str] = FILES) -> Path:
    text = TWO_GATES.replace("    phases:\n", f"    notify: {notify_yaml}\n    phases:\n", 1)
    return write_flow(tmp_path / "gates", text % {"backend": "fake"}, files)


def failing(tmp_path: Path, notify_yaml: str, message: str) -> Path:
    """A flow whose one phase fails with ``message`` in its error (and a host path)."""
    yaml_text = f"""
        sandbox: {{backend: fake}}
        notify: {notify_yaml}
        phases:
          - {{id: leak, kind: script, script: s.py, outputs: [x.txt]}}
    """
    source = f"import os\nraise ValueError({message!r} + ' in ' + os.getcwd())\n"
    return write_flow(tmp_path / "leaky", yaml_text, {"s.py": source})


def kinds(flow: Path, run_id: str) -> list[Any]:
    run = RunHandle.open(runner.load_flow(flow), run_id)
    return [e for e in run.log.read() if e.kind in ("notified", "notify_failed")]


def problems(flow: Path) -> str:
    _, report = contract.load(flow)
    return "\n".join(str(e) for e in report.errors)


# -- what flow.yaml may ask for ---------------------------------------------------------------


def test_a_flow_naming_a_webhook_is_refused_and_the_listener_receives_nothing(
    tmp_path, hook: Hook, monkeypatch, capsys
) -> None:
    person(tmp_path, monkeypatch, f"notify: {{team: {{webhook: '{hook.url}'}}}}\n")
    flow = failing(tmp_path, "{webhook: '" + hook.url + "', when: [failed]}", SECRET)
    text = problems(flow)
    assert "notify.webhook: a flow does not choose where this machine connects: add " in text
    assert '`notify: {team: {webhook: "https://…"}}` to your profile ' in text
    assert "and write `notify: {to: team}`" in text
    with pytest.raises(FlowInvalid):
        runner.run(flow, options=runner.RunOptions(make_sandbox=Fakes()))
    assert main(["check", str(flow)]) == 2
    assert main(["run", str(flow), "--allow-local"]) == 2
    assert "notify: {to: team}" in capsys.readouterr().err
    assert not (flow / "runs").exists() or not any((flow / "runs").iterdir())
    assert hook.seen == [] and hook.raw == []


def test_a_flow_naming_a_command_is_refused_with_the_profile_entry(tmp_path) -> None:
    flow = gated(tmp_path, "{command: [curl, x], when: [later]}")
    text = problems(flow)
    assert "notify.command: a command named by flow.yaml would run on this machine" in text
    assert "to your profile " in text and "and write `notify: {to: team}`" in text
    assert "notify.when: expected a list of gate, failed, done" in text


@pytest.mark.parametrize(
    ("yaml", "expected"),
    [
        ("{to: team}", {"to": ("team",), "when": ["gate", "failed", "done"]}),
        ("{to: [team, ops, team], when: [done]}", {"to": ("team", "ops"), "when": ["done"]}),
    ],
)
def test_to_names_targets_by_name(tmp_path, yaml: str, expected: dict[str, Any]) -> None:
    flow, report = contract.load(gated(tmp_path, yaml))
    assert report.ok and flow is not None
    assert flow.notify == expected


@pytest.mark.parametrize(
    ("yaml", "message"),
    [
        ("{when: [done]}", "notify: needs to: the name of a target in your profile"),
        ("{to: []}", "notify.to: expected a target's name or a list of them"),
        ("{to: 'https://x.example/hook'}", "notify.to: 'https://x.example/hook' is not a valid"),
        ("{to: [team, 3]}", "notify.to[1]: expected a string, got integer 3"),
        ("{to: team, url: x}", "notify: unknown key 'url'"),
    ],
)
def test_what_to_cannot_be(tmp_path, yaml: str, message: str) -> None:
    assert message in problems(gated(tmp_path, yaml))


def test_a_target_the_profile_lacks_is_refused_by_check_and_run(
    tmp_path, hook: Hook, monkeypatch, capsys
) -> None:
    person(tmp_path, monkeypatch, f"notify: {{ops: {{webhook: '{hook.url}'}}}}\n")
    flow = gated(tmp_path, "{to: team}")
    assert main(["check", str(flow)]) == 2
    out = capsys.readouterr().out
    assert "  notify target team (notify.to): MISSING from the profile" in out
    assert "flow.yaml: notify.to: 'team' is not in your profile " in out
    assert "(it has: ops): add `notify: {team: {webhook: " in out
    with pytest.raises(ProfileLacks) as caught:
        runner.run(flow, options=runner.RunOptions(make_sandbox=Fakes()))
    assert caught.value.next(str(flow)) == f"praxis check {flow}"
    with pytest.raises(ProfileLacks):
        runner.begin(flow)
    assert not (flow / "runs").exists() or not any((flow / "runs").iterdir())
    assert hook.seen == []


def test_a_flow_that_notifies_nobody_needs_no_profile(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("PRAXIS_PROFILE", str(tmp_path / "none.yaml"))
    flow = write_flow(tmp_path / "gates", TWO_GATES % {"backend": "fake"}, FILES)
    assert main(["check", str(flow)]) == 0
    assert (
        runner.advance(
            flow, runner.begin(flow).id, options=runner.RunOptions(make_sandbox=Fakes())
        ).waiting
        == "gate"
    )


# -- what a target receives -------------------------------------------------------------------


def test_a_gate_and_the_end_are_told_to_the_profiles_target(
    tmp_path, hook: Hook, monkeypatch
) -> None:
    person(tmp_path, monkeypatch, f"notify:\n  team: {{webhook: '{hook.url}'}}\n")
    flow = gated(tmp_path, "{to: team}")
    run = runner.begin(flow)
    me = notify.Notifier(base_url="http://127.0.0.1:8765", root=tmp_path)
    state = runner.advance(
        flow, run.id, options=runner.RunOptions(make_sandbox=Fakes(), notifier=me)
    )
    assert state.waiting == "gate"
    ((method, path, body),) = hook.seen
    assert (method, path) == ("POST", "/hook")
    assert body == {  # the fixed schema: no files, no host path, no error
        "flow": "gates",
        "run": run.id,
        "event": "gate",
        "status": "paused",
        "phase": "pick",
        "url": f"http://127.0.0.1:8765/run?flow=gates&run={run.id}",
    }
    assert str(tmp_path).encode() not in hook.raw[0]
    # advancing a run that waits changes nothing: nobody is told again
    runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes(), notifier=me))
    assert len(hook.seen) == 1
    for gate in ("pick", "total"):
        runner.approve(flow, run.id, gate=gate)
        state = runner.advance(
            flow, run.id, options=runner.RunOptions(make_sandbox=Fakes(), notifier=me)
        )
    assert state.status == "done"
    assert [(b["event"], b["phase"]) for _, _, b in hook.seen] == [
        ("gate", "pick"),
        ("gate", "total"),
        ("done", None),
    ]
    told = kinds(flow, run.id)
    assert [(e.kind, e.about) for e in told] == [("notified", "gate")] * 2 + [("notified", "done")]
    assert told[0].target == "team (webhook 127.0.0.1)"


def test_a_failed_phase_s_text_never_reaches_a_target_by_default(
    tmp_path, hook: Hook, monkeypatch
) -> None:
    person(tmp_path, monkeypatch, f"notify: {{team: {{webhook: '{hook.url}'}}}}\n")
    flow = failing(tmp_path, "{to: team}", SECRET)
    state = runner.run(
        flow, options=runner.RunOptions(make_sandbox=Fakes())
    )  # run tells, as advance does
    assert state.status == "failed" and SECRET in str(state.error)
    ((_, _, body),) = hook.seen
    assert body == {
        "flow": "leaky",
        "run": state.run,
        "event": "failed",
        "status": "failed",
        "phase": "leak",
        "url": None,  # no page address known: none is made up
    }
    (raw,) = hook.raw
    assert SECRET.encode() not in raw and str(tmp_path).encode() not in raw
    assert [e.kind for e in kinds(flow, state.run)] == ["notified"]


def test_include_error_gets_the_error_bounded_and_escaped(
    tmp_path, hook: Hook, monkeypatch
) -> None:
    person(
        tmp_path,
        monkeypatch,
        f"notify: {{team: {{webhook: '{hook.url}', include_error: true}}}}\n",
    )
    flow = failing(tmp_path, "{to: team, when: [failed]}", "\x1b]0;owned\x07" + "A" * 5000)
    state = runner.run(flow, options=runner.RunOptions(make_sandbox=Fakes()))
    assert state.status == "failed" and len(str(state.error)) > 4000
    ((_, _, body),) = hook.seen
    error = body["error"]
    assert len(error) == notify.ERROR_CHARS and error.endswith("…")
    assert "\\x1b]0;owned\\x07" in error
    assert not any(ord(c) < 0x20 and c not in "\n\t" for c in error)
    assert set(body) == {"flow", "run", "event", "status", "phase", "url", "error"}


def test_a_target_s_command_runs_without_a_shell_and_reads_the_json(tmp_path, monkeypatch) -> None:
    got = tmp_path / "got $(touch pwned).json"  # a shell would run this
    script = tmp_path / "tell.py"
    script.write_text("import sys\nopen(sys.argv[1], 'wb').write(sys.stdin.buffer.read())\n")
    person(
        tmp_path,
        monkeypatch,
        f"notify:\n  me: {{command: [{sys.executable!r}, {str(script)!r}, {str(got)!r}]}}\n",
    )
    flow = failing(tmp_path, "{to: me}", SECRET)
    state = runner.run(flow, options=runner.RunOptions(make_sandbox=Fakes()))
    body = json.loads(got.read_bytes())
    assert (body["event"], body["phase"], "error" in body) == ("failed", "leak", False)
    assert SECRET not in got.read_text()
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()
    assert [(e.kind, e.target) for e in kinds(flow, state.run)] == [("notified", "me (command)")]


def test_the_persons_own_command_gets_the_fixed_body_and_a_failure_is_told(
    tmp_path, monkeypatch
) -> None:
    got = tmp_path / "got.json"
    script = tmp_path / "tell.py"
    script.write_text(f"import sys\nopen({str(got)!r}, 'wb').write(sys.stdin.buffer.read())\n")
    monkeypatch.setenv("PRAXIS_NOTIFY_COMMAND", f"{sys.executable} {script}")
    monkeypatch.setenv("PRAXIS_PROFILE", str(tmp_path / "none.yaml"))
    files = dict(FILES, **{"data/orders.csv": "id,amount\n1,x\n"})  # amount not a number
    flow = write_flow(tmp_path / "gates", TWO_GATES % {"backend": "fake"}, files)
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert state.status == "failed" and "could not convert" in str(state.error)
    body = json.loads(got.read_text())
    assert body == {
        "flow": "gates",
        "run": run.id,
        "event": "failed",
        "status": "failed",
        "phase": "pick",
        "url": None,
    }
    monkeypatch.setenv("PRAXIS_NOTIFY_COMMAND", f"{sys.executable} -c 'raise SystemExit(3)'")
    runner.rerun(flow, "pick", run.id)
    runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    told = kinds(flow, run.id)
    assert [e.kind for e in told] == ["notified", "notify_failed"]
    assert "exited 3" in told[-1].error


def test_a_webhook_s_variable_is_read_from_the_environment_when_used(
    tmp_path, hook: Hook, monkeypatch
) -> None:
    port = hook.server.server_address[1]
    person(tmp_path, monkeypatch, "notify: {team: {webhook: 'http://127.0.0.1:${HOOK_PORT}/h'}}\n")
    monkeypatch.delenv("HOOK_PORT", raising=False)
    flow = gated(tmp_path, "{to: team}")
    run = runner.begin(flow)
    runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    (failed,) = kinds(flow, run.id)
    assert failed.kind == "notify_failed" and "${HOOK_PORT}" in failed.error
    assert hook.seen == []
    monkeypatch.setenv("HOOK_PORT", str(port))
    runner.approve(flow, run.id, gate="pick")
    runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert [(p, b["phase"]) for _, p, b in hook.seen] == [("/h", "total")]


# -- a notifier never fails the run -----------------------------------------------------------


def test_a_target_the_profile_lost_is_recorded_with_the_fix_and_the_run_goes_on(
    tmp_path, hook: Hook, monkeypatch
) -> None:
    path = person(tmp_path, monkeypatch, f"notify: {{team: {{webhook: '{hook.url}'}}}}\n")
    flow = gated(tmp_path, "{to: team}")
    run = runner.begin(flow)
    path.write_text("notify: {ops: {command: [/bin/true]}}\n")  # the person renamed it
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert state.waiting == "gate" and state.status == "paused"
    (failed,) = kinds(flow, run.id)
    assert failed.kind == "notify_failed" and failed.target == "team"
    assert "'team' is not in your profile" in failed.error
    assert "add `notify: {team: {webhook: " in failed.error
    path.write_text("notify: [broken\n")
    runner.approve(flow, run.id, gate="pick")
    assert (
        runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes())).waiting
        == "gate"
    )
    assert kinds(flow, run.id)[-1].kind == "notify_failed"
    assert hook.seen == []


def test_a_failing_webhook_is_logged_and_recorded_and_the_run_goes_on(
    tmp_path, hook: Hook, caplog, monkeypatch
) -> None:
    person(tmp_path, monkeypatch, f"notify: {{team: {{webhook: '{hook.url}'}}}}\n")
    hook.answer = (500, {})
    flow = gated(tmp_path, "{to: team}")
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert state.waiting == "gate" and state.status == "paused"
    (failed,) = kinds(flow, run.id)
    assert failed.kind == "notify_failed" and "500" in failed.error
    assert "notify team (webhook 127.0.0.1)" in caplog.text
    runner.approve(flow, run.id, gate="pick")  # the run is decided as ever


def test_a_redirect_is_not_followed(tmp_path, hook: Hook, monkeypatch) -> None:
    person(tmp_path, monkeypatch, f"notify: {{team: {{webhook: '{hook.url}'}}}}\n")
    hook.answer = (302, {"Location": "/elsewhere"})
    flow = gated(tmp_path, "{to: team}")
    run = runner.begin(flow)
    runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert [p for _, p, _ in hook.seen] == ["/hook"]  # never /elsewhere
    (failed,) = kinds(flow, run.id)
    assert failed.kind == "notify_failed" and "302" in failed.error


def test_a_webhook_that_never_answers_is_given_up(tmp_path, hook: Hook, monkeypatch) -> None:
    person(tmp_path, monkeypatch, f"notify: {{team: {{webhook: '{hook.url}'}}}}\n")
    monkeypatch.setattr(notify, "TIMEOUT", 0.5)
    hook.stall.set()
    flow = gated(tmp_path, "{to: team}")
    run = runner.begin(flow)
    assert (
        runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes())).waiting
        == "gate"
    )
    (failed,) = kinds(flow, run.id)
    assert failed.kind == "notify_failed" and "timed out" in failed.error


def test_when_limits_what_is_told(tmp_path, hook: Hook, monkeypatch) -> None:
    person(tmp_path, monkeypatch, f"notify: {{team: {{webhook: '{hook.url}'}}}}\n")
    flow = gated(tmp_path, "{to: team, when: [done]}")
    run = runner.begin(flow)
    assert (
        runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes())).waiting
        == "gate"
    )
    assert hook.seen == []


# -- praxis run on the command line -----------------------------------------------------------


def test_praxis_run_tells_the_profiles_target_like_advance(tmp_path, hook: Hook) -> None:
    profile = tmp_path / "profile.yaml"
    profile.write_text(f"notify: {{team: {{webhook: '{hook.url}'}}}}\n")
    flow = failing(tmp_path, "{to: team}", SECRET)
    env = {
        **os.environ,
        "PRAXIS_PROFILE": str(profile),
        "PRAXIS_URL": "http://127.0.0.1:8765",
        "PRAXIS_SANDBOX": "fake",
    }
    env.pop("PRAXIS_NOTIFY_COMMAND", None)
    done = subprocess.run(
        [sys.executable, "-m", "praxis", "run", str(flow)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    ((method, _, body),) = hook.seen
    run_id = next((flow / "runs").iterdir()).name
    assert method == "POST" and body == {
        "flow": "leaky",
        "run": run_id,
        "event": "failed",
        "status": "failed",
        "phase": "leak",
        "url": f"http://127.0.0.1:8765/run?flow=leaky&run={run_id}",
    }
    assert SECRET.encode() not in hook.raw[0]
    assert [e.kind for e in kinds(flow, run_id)] == ["notified"]


def test_a_profile_webhook_that_is_not_http_is_recorded_never_opened(tmp_path, monkeypatch) -> None:
    person(tmp_path, monkeypatch, "notify: {team: {webhook: 'file:///etc/passwd'}}\n")
    flow = gated(tmp_path, "{to: team}")
    run = runner.begin(flow)
    assert (
        runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes())).waiting
        == "gate"
    )
    (failed,) = kinds(flow, run.id)
    assert failed.kind == "notify_failed" and failed.target == "team"
    assert "the profile's notify.team.webhook is not an http:// or https:// URL" in failed.error


def test_a_webhook_s_failure_is_recorded_without_its_url(tmp_path, hook: Hook, monkeypatch) -> None:
    person(
        tmp_path, monkeypatch, f"notify: {{team: {{webhook: '{hook.url}?key=${{HOOK_KEY}}'}}}}\n"
    )
    monkeypatch.setenv("HOOK_KEY", "s3cr3t-key")
    hook.answer = (403, {})
    flow = gated(tmp_path, "{to: team}")
    run = runner.begin(flow)
    runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert [p for _, p, _ in hook.seen] == ["/hook?key=s3cr3t-key"]
    monkeypatch.setenv("HOOK_KEY", "s3cr3t key")  # a URL http.client refuses, quoting it
    runner.approve(flow, run.id, gate="pick")
    runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert len(hook.seen) == 1
    told = kinds(flow, run.id)
    assert [e.kind for e in told] == ["notify_failed"] * 2
    assert "answered 403" in told[0].error and "URL is not valid" in told[1].error
    assert "s3cr3t" not in (run.paths.root / "events.jsonl").read_text()


def test_an_unreadable_profile_stops_only_a_flow_that_names_a_target(
    tmp_path, monkeypatch, capsys
) -> None:
    person(tmp_path, monkeypatch, "notify: [not, a, mapping\n")
    quiet = write_flow(tmp_path / "quiet", TWO_GATES % {"backend": "fake"}, FILES)
    assert main(["check", str(quiet)]) == 0
    assert main(["check", str(gated(tmp_path, "{to: team}"))]) == 2
    assert "ProfileInvalid: " + str(tmp_path / "profile.yaml") in capsys.readouterr().err
