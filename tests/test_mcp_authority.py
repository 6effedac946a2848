"""The MCP bypass of issue 42, closed over both transports: an agent refused at a person's
Gate can neither approve it, nor rerun from the phase after it, nor cancel it; over stdio
(the SDK's stdio client, the agent's token as PRAXIS_TOKEN) and over streamable HTTP at
`praxis serve`'s /mcp (the SDK's own streamable HTTP client, ``Authorization: Bearer``)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from praxis.flows.store.event_log import EventLog
from praxis.flows.store.handle import RunHandle
from praxis.service import acting

from .identity import agent_token
from .test_authority import at_total
from .test_mcp import data, error


async def bypass(s: ClientSession, run: str) -> list[str]:
    """Try every way past the person's Gate after total; the refusals' texts."""
    st = data(await s.call_tool("status", {"flow": "gates"}))
    assert (st["route"]["who"], st["gate"]) == ("person", "total")
    rev = st["revision"]
    bound = {"flow": "gates", "run": run, "expect_revision": rev}
    texts = [
        error(await s.call_tool("approve", {**bound, "gate": "total"})),
        error(await s.call_tool("rerun", {**bound, "from_phase": "report"})),
        error(await s.call_tool("cancel", bound)),
    ]
    st = data(await s.call_tool("status", {"flow": "gates"}))
    assert (st["status"], st["gate"], st["revision"]) == ("paused", "total", rev)
    return texts


def check(texts: list[str], run: RunHandle, agent: str) -> None:
    verbs = ("approve", "rerun", "cancel")
    for verb, text in zip(verbs, texts, strict=True):
        assert f"refused: NotAuthorized: run {run.id}: agent:{agent} may not {verb}" in text
        assert "the Gate after total is not delegatable" in text
    refused = [e for e in EventLog(run.paths.events).read() if e.kind == "decision_refused"]
    assert [(e.decision, e.actor) for e in refused] == [(v, f"agent:{agent}") for v in verbs]
    state = RunHandle.open(run.flow, run.id).state
    assert (state.status, state.gate) == ("paused", "total")


def environment(token: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PRAXIS_ACTOR"}
    env.update(PRAXIS_TOKEN=token, PRAXIS_SANDBOX="local")
    return env


def test_the_rerun_past_a_persons_gate_is_refused_over_stdio(tmp_path: Path) -> None:
    flow, run = at_total(tmp_path)
    token = agent_token("ci-bot")
    acting.manage(flow, run.id, agent="ci-bot")  # a grant does not reach a person's Gate
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "praxis", "mcp", "--root", str(tmp_path)],
        env=environment(token),
    )

    async def go() -> list[str]:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                return await bypass(s, run.id)

    check(anyio.run(go), run, "ci-bot")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_rerun_past_a_persons_gate_is_refused_over_http_with_a_bearer_token(
    tmp_path: Path,
) -> None:
    flow, run = at_total(tmp_path)
    token = agent_token("ci-bot")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "praxis", "serve", "--root", str(tmp_path), "--port", str(port)],
        env=environment(""), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_listening(port, server)
        no_token = httpx2.post(url, json={}, headers={"Accept": "application/json"})
        assert no_token.status_code == 401 and "Bearer" in no_token.text
        forged = {"Authorization": "Bearer pxa_000000000000_" + "a" * 43}
        assert httpx2.post(url, json={}, headers=forged).status_code == 401

        async def go() -> list[str]:
            headers = {"Authorization": f"Bearer {token}"}
            async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
                async with streamable_http_client(url, http_client=http) as streams:
                    read, write = streams[0], streams[1]
                    async with ClientSession(read, write) as s:
                        await s.initialize()
                        return await bypass(s, run.id)

        check(anyio.run(go), run, "ci-bot")
    finally:
        server.terminate()
        server.wait(timeout=30)
        assert server.stderr is not None
        server.stderr.close()


def wait_listening(port: int, server: subprocess.Popen[Any]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert server.poll() is None, server.stderr.read() if server.stderr else ""
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError("praxis serve did not listen within 60 s")
