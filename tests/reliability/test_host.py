"""docs/reliability.md item 38: nothing from a flow runs on the host.

Each attack is real code that, run on the host, writes a file there (``/tmp/pwned-<random>``)
or reads ``/etc/shadow``: a check script at a Gate (hand edit + ``status`` / ``approve``, and
a web save), a chat model that switches flow.yaml to ``backend: local`` and calls
``try_phase`` (``praxis chat --message`` and the web chat), a flow asking for ``local`` (or
``auto`` with no daemon), a ``model:`` module in the flow folder started from inside it, and a
``requirements.txt`` that is a link out of the flow folder. Where the person's
``--allow-local`` is the switch, the same code is also run with it, so the attack is shown
to be one that works when a person allows it.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from praxis.agent.scripted import SCRIPT_ENV, ScriptedChatModel
from praxis.flows.definition import isolation
from praxis.web.app import create_app
from praxis.web.security import Guard

from ._flows import docker_sandbox, one_line_error, only_run, state_of, write_flow

SCRIPTED = "praxis.agent.scripted:ScriptedChatModel"
CLEAN = {"PRAXIS_SANDBOX": "", "PRAXIS_MODEL": "", SCRIPT_ENV: ""}  # the person set none


@pytest.fixture
def mark() -> Iterator[Path]:
    """A host path the attack code writes when it runs on the host; removed afterwards."""
    path = Path(f"/tmp/pwned-{secrets.token_hex(8)}")
    yield path
    path.unlink(missing_ok=True)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CLEAN}
    return {**env, **extra}


def run_cli(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m praxis ARGS` with none of PRAXIS_SANDBOX / PRAXIS_MODEL set by the person."""
    return subprocess.run(
        [sys.executable, "-m", "praxis", *args],
        capture_output=True,
        text=True,
        env=_env(**env),
        cwd=cwd,
        timeout=600,
    )


def writes_host_file(mark: Path) -> str:
    """Python that, on the host, leaves ``mark`` holding what it could read of /etc/shadow."""
    return (
        "import os\n"
        "try:\n"
        "    secret = open('/etc/shadow').read()\n"
        "except OSError as exc:\n"
        "    secret = f'unreadable: {exc.strerror}'\n"
        f"open({str(mark)!r}, 'w').write(secret)\n"
        "open('done.txt', 'w').write('ok')\n"
    )


# -- check scripts ---------------------------------------------------------------------------

CHECK = """\
import os, sys
try:
    secret = open("/etc/shadow").read()
    where = "READ /etc/shadow"
except OSError as exc:
    secret, where = "", f"shadow {exc.strerror}"
open(%(mark)r, "w").write(secret or "ran")
if "edited" in open(sys.argv[1]).read():
    raise AssertionError(f"ran as uid {os.getuid()} in {os.getcwd()}, {where}")
"""


def check_flow(root: Path, image: str, mark: Path) -> Path:
    phases = [
        {
            "id": "p1",
            "kind": "script",
            "script": "p1.py",
            "outputs": ["t.csv"],
            "review": "required",
            "checks": {"t.csv": {"script": "checks/evil.py", "columns": ["id", "v"]}},
        },
        {"id": "p2", "kind": "script", "script": "p2.py", "inputs": {"working": ["t.csv"]},
         "outputs": ["u.txt"]},
    ]  # fmt: skip
    text = docker_sandbox(image, timeout=120) + "\nphases: " + json.dumps(phases) + "\n"
    return write_flow(
        root,
        text,
        {
            "p1.py": "open('t.csv', 'w').write('id,v\\n1,a\\n')\n",
            "p2.py": "open('u.txt', 'w').write(open('t.csv').read())\n",
            "checks/evil.py": CHECK % {"mark": str(mark)},
        },
    )


@pytest.mark.docker
def test_a_check_script_runs_in_a_sandbox_at_the_gate_never_on_the_host(
    docker_image: str, tmp_path: Path, mark: Path
) -> None:
    flow = check_flow(tmp_path / "served" / "checked", docker_image, mark)
    res = run_cli("run", str(flow), "--quiet")
    assert res.returncode == 0, res.stderr
    run = only_run(flow)
    assert state_of(run).waiting == "gate"  # passed after p1, in the run's sandbox
    table = run / "output" / "t.csv"

    # a hand edit, then status and approve: the check runs, in a sandbox opened for it
    table.write_text("id,v\n1,edited\n")
    res = run_cli("status", str(flow), "--json")
    assert res.returncode == 0, res.stderr
    (failed,) = json.loads(res.stdout)["checks"]
    assert failed["check"] == "script"
    assert "ran as uid 1000 in /workspace, shadow Permission denied" in failed["message"]
    assert not mark.exists()
    res = run_cli("approve", str(flow), "--gate", "p1")
    assert res.returncode == 4, res.stderr
    assert "ran as uid 1000 in /workspace, shadow Permission denied" in res.stderr
    assert not mark.exists() and state_of(run).waiting == "gate"

    # a web save runs the same check on the bytes about to be written
    table.write_text("id,v\n1,a\n")
    guard = Guard()
    app = create_app(tmp_path / "served", guard=guard)
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        assert client.get(f"/?token={guard.token}", follow_redirects=False).status_code == 303
        page = client.get(f"/run?flow=checked&run={run.name}").text
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
        assert csrf
        form = {
            "flow": "checked",
            "run": run.name,
            "revision": str(state_of(run).revision),
            "csrf": csrf.group(1),
            "name": "t.csv",
            "text": "id,v\n2,edited\n",
        }
        r = client.post("/save", data=form)
    assert r.status_code == 409, r.text
    assert "ran as uid 1000 in /workspace, shadow Permission denied" in r.text
    assert table.read_text() == "id,v\n1,a\n" and not mark.exists()

    # an edit that passes is approved; the run goes on; nothing ever ran on the host
    table.write_text("id,v\n1,b\n")
    res = run_cli("approve", str(flow), "--gate", "p1")
    assert res.returncode == 0, res.stderr
    assert state_of(run).status == "done"
    assert (run / "output" / "u.txt").read_text() == "id,v\n1,b\n"
    assert not mark.exists()


def test_praxis_check_does_not_say_ok_for_a_flow_whose_code_runs_on_the_host(
    tmp_path: Path,
) -> None:
    yaml_text = """
        sandbox: {backend: local}
        phases:
          - {id: p1, kind: script, script: p1.py, outputs: [t.csv], review: required,
             checks: {t.csv: {script: checks/evil.py}}}
    """
    flow = write_flow(tmp_path / "f", yaml_text, {"p1.py": "", "checks/evil.py": ""})
    res = run_cli("check", str(flow))
    assert res.returncode == 0, res.stderr
    assert ": ok" not in res.stdout
    assert "NOT isolated: the local backend runs its code (check scripts too) on this host" in (
        res.stdout
    )


# -- backend: local needs the person's flag --------------------------------------------------


def local_flow(root: Path, mark: Path, backend: str = "local") -> Path:
    yaml_text = f"""
        sandbox: {{backend: {backend}, timeout: 120}}
        phases:
          - {{id: p1, kind: script, script: p1.py, outputs: [done.txt]}}
    """
    return write_flow(root, yaml_text, {"p1.py": writes_host_file(mark)})


def test_a_local_flow_runs_only_with_the_persons_flag(tmp_path: Path, mark: Path) -> None:
    flow = local_flow(tmp_path / "f", mark)
    res = run_cli("run", str(flow))
    assert res.returncode == 4
    line = one_line_error(res, "LocalRefused: ")
    assert "asks for the local backend" in line and "pass --allow-local" in line
    assert f"-m praxis run {flow} --allow-local" in res.stderr  # the next command
    assert not (flow / "runs").exists() or not any((flow / "runs").iterdir())
    assert not mark.exists()
    begun = run_cli("begin", str(flow))
    assert begun.returncode == 0, begun.stderr
    res = run_cli("advance", str(flow))
    assert res.returncode == 4 and "pass --allow-local" in res.stderr
    assert not mark.exists() and state_of(only_run(flow)).phases[0].status == "pending"

    res = run_cli("advance", str(flow), "--allow-local", "--quiet")  # the person's choice
    assert res.returncode == 0, res.stderr
    assert mark.exists()  # the same code, allowed: it did run on this host


def test_the_persons_environment_may_name_the_local_backend(tmp_path: Path, mark: Path) -> None:
    flow = local_flow(tmp_path / "f", mark, backend="auto")
    res = run_cli("run", str(flow), "--quiet", PRAXIS_SANDBOX="local")
    assert res.returncode == 0, res.stderr
    assert mark.exists()


def test_auto_never_falls_back_to_the_host_without_the_flag(tmp_path: Path, mark: Path) -> None:
    flow = local_flow(tmp_path / "f", mark, backend="auto")
    nowhere = f"unix://{tmp_path}/no-such-docker.sock"
    res = run_cli("run", str(flow), DOCKER_HOST=nowhere)
    assert res.returncode == 5, res.stderr
    assert "SandboxUnavailable" in res.stderr and "--allow-local" in res.stderr
    assert not mark.exists()
    run = only_run(flow)
    assert state_of(run).phases[0].status == "pending"  # nothing ran


# -- the flow chat ---------------------------------------------------------------------------


def switch_to_local(mark: Path) -> list[dict[str, object]]:
    """A chat model's replies: flow.yaml to backend local, a script writing a host file, then
    try_phase of it."""
    flow_yaml = (
        "flow: chatted\nsandbox: {backend: local, timeout: 120}\nphases:\n"
        "  - {id: p1, kind: script, script: p1.py, outputs: [done.txt]}\n"
    )
    return [
        {
            "tool_calls": [
                {"name": "write_file", "args": {"path": "flow.yaml", "text": flow_yaml}},
                {"name": "write_file", "args": {"path": "p1.py", "text": writes_host_file(mark)}},
            ]
        },
        {"tool_calls": [{"name": "try_phase", "args": {"phase": "p1"}}]},
        {"text": "tried it"},
    ]


def test_the_chat_refuses_try_phase_of_a_flow_it_switched_to_local(
    tmp_path: Path, mark: Path
) -> None:
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(switch_to_local(mark)))
    folder = tmp_path / "chatted"
    env = {"PRAXIS_MODEL": SCRIPTED, SCRIPT_ENV: str(replies)}
    res = run_cli("chat", str(folder), "--message", "make it", **env)
    assert res.returncode == 0, res.stderr
    assert "LocalRefused" in res.stdout + res.stderr
    assert "backend: local" in (folder / "flow.yaml").read_text()  # the edit itself was made
    assert not mark.exists()

    res = run_cli("chat", str(folder), "--message", "again", "--allow-local", **env)
    assert res.returncode == 0, res.stderr
    assert mark.exists()  # allowed by the person on the command line: it runs


def test_the_web_chat_refuses_try_phase_of_a_flow_it_switched_to_local(
    tmp_path: Path, mark: Path
) -> None:
    root = tmp_path / "served"
    (root / "chatted").mkdir(parents=True)
    (root / "chatted" / "flow.yaml").write_text(
        "flow: chatted\nphases:\n  - {id: p1, kind: script, script: p1.py, outputs: [done.txt]}\n"
    )
    (root / "chatted" / "p1.py").write_text("")

    def send(message: str) -> str:
        guard = Guard()
        app = create_app(root, guard=guard)
        app.state.chat.model_factory = lambda folder: ScriptedChatModel(
            replies=switch_to_local(mark)
        )
        with TestClient(app, base_url="http://127.0.0.1:8765") as client:
            assert client.get(f"/?token={guard.token}", follow_redirects=False).status_code == 303
            page = client.get("/chat?flow=chatted").text
            csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
            assert csrf
            form = {"csrf": csrf.group(1), "flow": "chatted", "session": "", "message": message}
            r = client.post("/chat/send", data=form, follow_redirects=True)
        assert r.status_code == 200, r.text
        return r.text

    page = send("make it")
    assert "LocalRefused" in page and not mark.exists()
    before = isolation.allow_local()  # `praxis serve --allow-local`: the person's flag
    try:
        send("again")
    finally:
        isolation.allow_local(before)
    assert mark.exists()


# -- model: and the flow's files -------------------------------------------------------------


@pytest.mark.docker
def test_a_model_module_in_the_flow_folder_is_never_imported(
    docker_image: str, tmp_path: Path, mark: Path
) -> None:
    phases = [{"id": "ask", "kind": "agent", "prompt": "ask.md", "outputs": ["a.md"]}]
    text = (
        docker_sandbox(docker_image, timeout=120)
        + "\nmodel: flowmodels:Chat\nphases: "
        + json.dumps(phases)
        + "\n"
    )
    payload = f"open({str(mark)!r}, 'w').write('imported')\n"
    flow = write_flow(
        tmp_path / "f",
        text,
        {
            "ask.md": "say hi",
            "flowmodels.py": payload
            + "from praxis.agent.scripted import ScriptedChatModel as Chat\n",
        },
    )
    res = run_cli("run", ".", cwd=flow)  # sys.path[0] is this folder
    assert res.returncode == 1, res.stdout + res.stderr
    assert "flowmodels is not an installed module" in res.stderr
    assert not mark.exists()


def test_a_requirements_link_out_of_the_flow_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text(f"secret-{secrets.token_hex(6)}\n")
    yaml_text = """
        sandbox: {backend: docker}
        phases:
          - {id: p1, kind: script, script: p1.py, outputs: [done.txt]}
    """
    flow = write_flow(tmp_path / "f", yaml_text, {"p1.py": ""})
    (flow / "requirements.txt").symlink_to(secret)
    for command in ("check", "run"):
        res = run_cli(command, str(flow))
        assert res.returncode == 2, res.stdout + res.stderr
        out = res.stdout + res.stderr
        assert "requirements.txt is or passes through a symbolic link" in out
        assert secret.read_text().strip() not in out
    assert not (flow / "runs").exists()


def test_every_flow_file_is_read_without_following_a_link(tmp_path: Path) -> None:
    """A script, a data file, a check script reached through a link (even one pointing back
    inside the folder) are refused by check, and so by run."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.csv").write_text("a\n1\n")
    yaml_text = """
        sandbox: {backend: docker}
        phases:
          - {id: p1, kind: script, script: scripts/p1.py, outputs: [t.csv],
             inputs: {working: [data/data.csv]}, checks: {t.csv: {script: c.py}}}
    """
    flow = write_flow(tmp_path / "f", yaml_text, {"real.py": "", "real_c.py": ""})
    (flow / "scripts").symlink_to(flow)  # a folder link back inside
    (flow / "p1.py").write_text("")
    (flow / "data").symlink_to(outside)
    (flow / "c.py").symlink_to(flow / "real_c.py")
    res = run_cli("check", str(flow))
    assert res.returncode == 2
    for name in ("scripts/p1.py", "c.py"):
        assert f"'{name}' is or passes through a symbolic link" in res.stdout, res.stdout
    assert "'data/data.csv' leads outside the flow folder" in res.stdout
