"""The route is the caller's (DESIGN.md §14, issue 42): with real accounts, grants and an
injected clock, it proposes a Gate decision only to a caller the one authorization lets take
it, says who may take each step, and tells a caller who may not who must act; over MCP (the
SDK's stdio client) an agent's route proposes no call it would be refused."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from praxis.flows.store.event_log import EventLog
from praxis.flows.store.handle import RunHandle
from praxis.service import acting
from praxis.service.accounts import Accounts
from praxis.service.principals import Principal, resolve
from praxis.service.reading import status

from .flows.gates import TWO_GATES
from .identity import agent_token
from .test_authority import FINANCE, at_total, main
from .test_mcp import data, error
from .test_mcp_authority import environment

DELEGATABLE = TWO_GATES.replace("review: required", "review: {required: true, delegatable: true}")
DECISIONS = {"approve", "reject", "edit", "rerun", "cancel", "accept", "manage", "delete"}
BOT = Principal("agent", "ci-bot", (), "token")


def verbs(route: dict[str, Any]) -> set[str]:
    return {argv[1] for argv in route["commands"]}


def test_an_agent_whose_grant_expired_gets_no_approve_step_and_sees_who_must_act(
    tmp_path: Path,
) -> None:
    flow, run = at_total(tmp_path, DELEGATABLE)
    now = [1_000_000.0]
    accounts = Accounts(clock=lambda: now[0])
    accounts.add("agent", "ci-bot")
    acting.manage(flow, run.id, agent="ci-bot", duration="1h", accounts=accounts)
    live = status(flow, run.id, BOT, accounts=accounts).route
    until = time.strftime("%Y-%m-%d %H:%M", time.localtime(now[0] + 3600))
    assert (live["step"], live["reason"], live["caller"]) == (
        "read",
        "gate_delegated",
        "agent:ci-bot",
    )
    assert live["who_may"] == f"agent:ci-bot under a grant until {until}"
    now[0] += 3601  # an hour and a second later: the run is still managed, the grant is not live
    st = status(flow, run.id, BOT, accounts=accounts)
    assert st.managed
    gone = st.route
    assert (gone["step"], gone["reason"], gone["who"]) == ("wait", "waiting_for_person", "person")
    assert verbs(gone) == {"status"} and not DECISIONS & verbs(gone)
    assert gone["who_may"] == "person" and gone["why"].startswith("a person decides the Gate")
    assert any("or a person grants agent:ci-bot the decision: " in p for p in gone["problems"])
    assert [line.split(" log ", 1)[1] for line in st.next] == [f"{flow} --run {run.id}"]


def test_an_agent_under_a_flow_wide_grant_gets_the_approve_step_and_it_is_taken(
    tmp_path: Path,
) -> None:
    flow, run = at_total(tmp_path, DELEGATABLE)
    accounts = Accounts()
    accounts.add("agent", "ci-bot")
    acting.manage(flow, None, agent="ci-bot", duration="2h", accounts=accounts)  # every run
    st = status(flow, run.id, BOT, accounts=accounts)
    assert not st.managed  # no grant of this run: the flow's reaches it
    assert (st.route["step"], st.route["reason"]) == ("read", "gate_delegated")
    assert st.route["who_may"].startswith("agent:ci-bot under a grant until ")
    for step in st.steps:  # the route's reads, as the agent
        assert step.verb == "read" and step.path is not None
        acting.read(flow, os.path.relpath(step.path, run.root), run.id, principal=BOT)
    decide = status(flow, run.id, BOT, accounts=accounts)
    approve = decide.steps[0]
    assert (decide.route["step"], approve.verb, approve.gate) == ("decide", "approve", "total")
    acting.approve(
        flow, run.id, gate="total", attempt=approve.attempt, receipts=list(approve.receipts),
        expect_revision=approve.expect_revision, principal=BOT,
    )  # fmt: skip
    approved = [e for e in EventLog(run.paths.events).read() if e.kind == "gate_approved"]
    assert (approved[-1].phase, approved[-1].actor) == ("total", "agent:ci-bot")
    assert RunHandle.open(run.flow, run.id).state.waiting != "gate"


def test_bob_without_the_role_gets_no_approve_step_alice_of_finance_does(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    flow, run = at_total(tmp_path, FINANCE)
    accounts = Accounts()
    accounts.add("person", "alice", ["finance"])
    accounts.add("person", "bob")
    alice, bob = accounts.issue("person", "alice"), accounts.issue("person", "bob")
    as_bob = status(flow, run.id, resolve({"PRAXIS_TOKEN": bob})).route
    assert (as_bob["reason"], as_bob["caller"], as_bob["who_may"]) == (
        "waiting_for_person", "person:bob", "person with role finance"
    )  # fmt: skip
    assert verbs(as_bob) == {"status"}
    as_alice = status(flow, run.id, resolve({"PRAXIS_TOKEN": alice})).route
    assert (as_alice["step"], as_alice["reason"]) == ("decide", "gate_needs_person")
    assert {"approve", "reject"} <= verbs(as_alice) and as_alice["caller"] == "person:alice"
    monkeypatch.setenv("PRAXIS_TOKEN", bob)  # praxis status: the route of whoever asks
    code, out, _ = main(capsys, "status", str(flow), "--run", run.id)
    assert code == 0 and "route: wait (waiting_for_person): a person with role finance" in out
    assert "  who may: person with role finance (you: person:bob)" in out
    assert not any(line.startswith("next:") and " approve " in line for line in out.splitlines())
    monkeypatch.setenv("PRAXIS_TOKEN", alice)
    code, out, _ = main(capsys, "status", str(flow), "--run", run.id)
    assert any(line.startswith("next:") and " approve " in line for line in out.splitlines())


def test_over_mcp_the_agents_route_proposes_no_call_it_would_be_refused(tmp_path: Path) -> None:
    """At a delegatable Gate without a grant the agent's route offers no decision; every call
    it does offer is taken without a refusal, and under a flow-wide grant they decide it."""
    flow, run = at_total(tmp_path, DELEGATABLE)
    token = agent_token("ci-bot")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "praxis", "mcp", "--root", str(tmp_path)],
        env=environment(token),
    )

    async def go() -> tuple[dict[str, Any], list[str], dict[str, Any]]:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                before = data(await s.call_tool("status", {"flow": "gates"}))
                refused = [
                    error(await s.call_tool(c["tool"], c["arguments"]))
                    for c in before["calls"]
                    if c is not None and c["tool"] in ("approve", "reject", "rerun", "cancel")
                ]
                await anyio.to_thread.run_sync(
                    lambda: acting.manage(flow, None, agent="ci-bot", duration="2h")
                )
                st = data(await s.call_tool("status", {"flow": "gates"}))
                while st["status"] == "paused" and st["calls"]:
                    call = st["calls"][0]
                    assert call["tool"] in ("read_file", "approve"), call
                    result = data(await s.call_tool(call["tool"], call["arguments"]))
                    st = data(await s.call_tool("status", {"flow": "gates"})) if (
                        call["tool"] == "read_file") else result  # fmt: skip
                return before, refused, st

    before, refused, after = anyio.run(go)
    assert (before["route"]["reason"], before["route"]["caller"]) == (
        "gate_not_managed", "agent:ci-bot"
    )  # fmt: skip
    assert refused == [] and before["calls"] == []  # nothing it would be refused
    grant = "or a person grants agent:ci-bot the decision: praxis manage gates --run "
    assert any(p.startswith(grant) for p in before["route"]["problems"])
    assert after["status"] == "done" and after["route"]["reason"] == "done"
