"""`praxis mcp` (item 35), end to end with the official SDK's own stdio client: the route's
verbs as tools, the client always an agent under the same delegation rules, run files read
only when the route names them (bounded, escaped), nothing outside --root, a refusal a tool
error with its code, progress reported while phases run. On docker."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters  # a declared extra: missing fails, never skips
from mcp.client.stdio import stdio_client

from praxis.flows.store.event_log import EventLog

from .identity import agent_token, grant
from .reliability._flows import docker_sandbox, write_flow
from .reliability.test_route_converges import CONV, CONV_FILES
from .route_agent import agent_env, venv_program


class Client:
    """The SDK's stdio client on `praxis mcp --root ROOT`, with no `praxis` on PATH, the
    agent's token as PRAXIS_TOKEN and the server's environment saying PRAXIS_ACTOR=person
    (the client is an agent all the same)."""

    def __init__(self, root: Path, token: str) -> None:
        self.params = StdioServerParameters(
            command=venv_program()[0],
            args=[*venv_program()[1:], "mcp", "--root", str(root)],
            env=agent_env(PRAXIS_ACTOR="person", PRAXIS_TOKEN=token),
        )
        self.progress: list[tuple[float, float | None, str | None]] = []

    async def session(self, body: Any) -> Any:
        async with stdio_client(self.params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)

    async def progressed(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total, message))


def data(result: Any) -> Any:
    """A tool's structured result (a list comes as ``{"result": [...]}``)."""
    assert not result.is_error, result.content[0].text
    found = result.structured_content
    return found["result"] if set(found) == {"result"} else found


def error(result: Any) -> str:
    assert result.is_error
    return str(result.content[0].text)


@pytest.mark.docker
def test_an_mcp_client_follows_the_route_as_an_agent_and_is_refused_as_one(
    tmp_path: Path, docker_image: str
) -> None:
    root = tmp_path / "root"
    write_flow(root / "conv", CONV % {"sandbox": docker_sandbox(docker_image)}, CONV_FILES)
    (tmp_path / "secret.txt").write_text("outside the root")
    started = subprocess.run(
        [*venv_program(), "run", "conv", "--quiet"],
        cwd=root, env=agent_env(), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    client = Client(root, agent_token("ci-bot"))
    grant(root / "conv", None, agent="ci-bot")  # the person's grant, on the newest run

    async def body(s: Any) -> dict[str, Any]:
        names = {t.name for t in (await s.list_tools()).tools}
        assert names == {"flows", "runs", "status", "advance", "approve", "reject", "rerun",
                         "cancel", "read_file", "log"}  # fmt: skip
        flows = data(await s.call_tool("flows", {}))
        assert [f["flow"] for f in flows] == ["conv"]
        run = flows[0]["runs"][0]["run"]
        st = data(await s.call_tool("status", {"flow": "conv"}))
        route = st["route"]
        assert (route["reason"], route["who"]) == ("gate_delegated", "agent")
        assert route["step"] == "read" and route["read"] == [{"path": route["read"][0]["path"]}]
        path = route["read"][0]["path"]
        assert st["calls"][0] == {
            "tool": "read_file", "arguments": {"flow": "conv", "path": path, "run": run}
        }  # fmt: skip
        # an approval before reading is refused, as a tool error with its code
        bound = {"flow": "conv", "run": run, "gate": "b", "attempt": 1,
                 "expect_revision": st["revision"]}  # fmt: skip
        text = error(await s.call_tool("approve", bound))
        assert "refused: NotAcknowledged" in text and "passed no receipt" in text
        # what the route names is read, bounded and escaped, with a receipt; nothing else is
        got = data(await s.call_tool("read_file", {"flow": "conv", "path": path}))
        assert got["text"] == "a1b" and got["receipt"].startswith("r") and "sha256" not in got
        st = data(await s.call_tool("status", {"flow": "conv"}))
        call = st["calls"][0]
        assert call["tool"] == "approve" and call["arguments"]["receipts"] == [got["receipt"]]
        for other in ("../secret.txt", str(tmp_path / "secret.txt"), "conv/flow.yaml",
                      f"conv/runs/{run}/run.json"):  # fmt: skip
            text = error(await s.call_tool("read_file", {"flow": "conv", "path": other}))
            assert "refused" in text and "outside the root" not in text
        assert "usage: NotFound" in error(await s.call_tool("status", {"flow": ".."}))
        # the route's call, taken as given: the agent's approval, then progress per phase
        st = data(await s.call_tool(call["tool"], call["arguments"],
                                    progress_callback=client.progressed))  # fmt: skip
        assert (st["route"]["reason"], st["route"]["who"]) == ("gate_needs_person", "person")
        assert st["calls"] == [] and st["route"]["caller"] == "agent:ci-bot"  # none refused
        person_gate = {"flow": "conv", "run": st["run"], "gate": st["gate"],
                       "attempt": 1, "expect_revision": st["revision"]}  # fmt: skip
        text = error(await s.call_tool("approve", {**person_gate, "receipts": [got["receipt"]]}))
        assert "refused: NotAuthorized" in text and "not delegatable" in text
        log = data(await s.call_tool("log", {"flow": "conv", "last": 5}))
        assert len(log) == 5
        return st

    st = anyio.run(client.session, body)
    run = st["run"]
    events = EventLog(root / "conv/runs" / run / "events.jsonl").read()
    approved = [(e.phase, e.actor) for e in events if e.kind == "gate_approved"]  # type: ignore[attr-defined]
    refused = [(e.decision, e.actor) for e in events if e.kind == "decision_refused"]  # type: ignore[attr-defined]
    assert approved == [("b", "agent:ci-bot")]
    assert refused == [("approve", "agent:ci-bot"), ("approve", "agent:ci-bot")]
    messages = [m for _, _, m in client.progress]
    assert "c: started" in messages and "d: done" in messages
    assert client.progress[-1][:2] == (4.0, 4.0)
    replay = subprocess.run(
        [*venv_program(), "replay", "conv", "--run", run],
        cwd=root, env=agent_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert replay.returncode == 0, replay.stdout
    assert "praxis mcp approve" in replay.stdout and "[route command 1]" in replay.stdout
    # each tool call is traced as it starts too, as the command line's commands are
    lines = EventLog(root / "conv/runs" / run / "trace.jsonl").read()
    started = [e.argv[-3:-1] for e in lines if e.kind == "trace_started"]  # type: ignore[attr-defined]
    assert ["mcp", "approve"] in started and ["mcp", "status"] in started


FORM_FLOW = """
    flow: form
    sandbox: {backend: fake}
    phases:
      - id: load
        kind: script
        script: load.py
        outputs: [rows.txt]
        review:
          required: true
          delegatable: true
          form: {threshold: {type: number, required: true}}
      - {id: report, kind: script, script: report.py, outputs: [seen.txt]}
"""
FORM_FILES = {
    "load.py": "open('rows.txt', 'w').write('1')\n",
    "report.py": "open('seen.txt', 'w').write(repr(params['threshold']))\n",
}


def test_mcp_approve_takes_the_gate_forms_values_and_refuses_a_wrong_type(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    write_flow(root / "form", FORM_FLOW, FORM_FILES)
    env = agent_env(PRAXIS_SANDBOX="fake")
    started = subprocess.run(
        [*venv_program(), "run", "form", "--quiet"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    token = agent_token("ci-bot")
    grant(root / "form", None, agent="ci-bot")  # the person's grant, on the newest run
    client = Client(root, token)
    client.params.env = {**env, "PRAXIS_TOKEN": token}

    async def body(s: Any) -> dict[str, Any]:
        st = data(await s.call_tool("status", {"flow": "form"}))
        assert st["route"]["gate"]["form"] == [
            {"name": "threshold", "value": "<number>", "needed": True}
        ]
        path = st["route"]["read"][0]["path"]
        got = data(await s.call_tool("read_file", {"flow": "form", "path": path}))
        st = data(await s.call_tool("status", {"flow": "form"}))
        call = st["calls"][0]
        assert call["tool"] == "approve"
        assert call["arguments"]["values"] == {"threshold": "<number>"}  # the agent fills it
        args = {**call["arguments"], "receipts": [got["receipt"]]}
        text = error(await s.call_tool("approve", {**args, "values": {"threshold": "seven"}}))
        assert "usage: BadValue" in text and "expected a number (threshold" in text
        return data(await s.call_tool("approve", {**args, "values": {"threshold": 7}}))  # type: ignore[no-any-return]

    st = anyio.run(client.session, body)
    assert st["status"] == "done", st
    assert (root / "form/runs" / st["run"] / "output/seen.txt").read_text() == "7"
