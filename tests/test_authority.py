"""Who decides (DESIGN.md §14, RELIABILITY.md 54): principals from what the caller cannot
choose (a token, a terminal), a Gate's approvers by role, an agent only under a person's
grant, which expires; one authorization for every front door; every decision, grant and
refusal in `praxis audit`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from praxis import cli
from praxis.flows.engine import runner
from praxis.flows.store.event_log import EventLog
from praxis.flows.store.handle import RunHandle
from praxis.service import acting, authority
from praxis.service.accounts import AccountError, Accounts, BadToken
from praxis.service.principals import EVERY, NotPerson, Principal, resolve
from praxis.service.reading import status

from .flows.gates import FILES, TWO_GATES
from .flows.helpers import Fakes, write_flow
from .identity import PERSON, agent_token

FINANCE = TWO_GATES.replace(
    "        outputs: [total.csv]\n        review: required",
    "        outputs: [total.csv]\n        review: {required: true, approvers: [finance]}",
)


def at_total(tmp_path: Path, text: str = TWO_GATES) -> tuple[Path, RunHandle]:
    """A run of the two-Gate flow waiting at its second Gate (after total), a person's."""
    flow = write_flow(tmp_path / "gates", text % {"backend": "fake"}, FILES)
    run = runner.begin(flow)
    runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    runner.approve(flow, run.id, gate="pick")
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=Fakes()))
    assert (state.waiting, state.gate) == ("gate", "total")
    return flow, run


def main(capsys, *argv: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def events(run: RunHandle, kind: str) -> list:  # type: ignore[type-arg]
    return [e for e in EventLog(run.paths.events).read() if e.kind == kind]


def test_zero_config_a_terminal_is_the_one_person_and_no_terminal_an_agent(tmp_path) -> None:
    empty = Accounts(tmp_path / "none")
    me = resolve({}, accounts=empty, terminal=True)
    assert me.is_person and me.roles == (EVERY,) and me.holds(("finance",))
    assert resolve({}, accounts=empty, terminal=False).label == "agent:unnamed"
    with pytest.raises(NotPerson, match="never raise it"):
        resolve({"PRAXIS_ACTOR": "person"}, accounts=empty, terminal=False)
    assert resolve({"PRAXIS_ACTOR": "agent"}, accounts=empty, terminal=True).kind == "agent"


def test_a_non_interactive_cli_approve_in_zero_config_is_refused(tmp_path) -> None:
    flow, run = at_total(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PRAXIS_TOKEN", "PRAXIS_ACTOR")}
    env["PRAXIS_DATA"] = str(tmp_path / "zero")  # no accounts at all
    done = subprocess.run(
        [sys.executable, "-m", "praxis", "approve", str(flow), "--gate", "total"],
        env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 4, done.stderr
    assert "agent:unnamed may not approve: the Gate after total is not delegatable" in (done.stderr)
    assert RunHandle.open(run.flow, run.id).state.gate == "total"  # nothing decided
    refused = events(run, "decision_refused")
    assert [(e.decision, e.actor) for e in refused] == [("approve", "agent:unnamed")]


def test_roles_alice_of_finance_approves_bob_and_an_agent_are_refused(
    tmp_path, capsys, monkeypatch
) -> None:
    flow, run = at_total(tmp_path, FINANCE)
    accounts = Accounts()
    accounts.add("person", "alice", ["finance"])
    accounts.add("person", "bob")
    alice, bob = accounts.issue("person", "alice"), accounts.issue("person", "bob")
    bot = agent_token("ci-bot")
    route = status(flow, run.id).route  # who may: a person of finance
    assert (route["who"], route["gate"]["approvers"]) == ("person", ["finance"])
    approve = ("approve", str(flow), "--run", run.id, "--gate", "total")
    monkeypatch.setenv("PRAXIS_TOKEN", bob)
    code, _, err = main(capsys, *approve)
    assert code == 4 and "person:bob may not approve: the Gate after total needs role" in err
    assert "finance; person:bob holds no role" in err
    monkeypatch.setenv("PRAXIS_TOKEN", bot)
    code, _, err = main(capsys, *approve)
    assert code == 4 and "agent:ci-bot may not approve" in err and "not delegatable" in err
    monkeypatch.setenv("PRAXIS_TOKEN", alice)  # the service, as the CLI calls it
    acting.approve(flow, run.id, gate="total")
    approved = events(run, "gate_approved")
    assert [(e.phase, e.actor) for e in approved] == [("pick", "person"), ("total", "person:alice")]
    code, out, _ = main(capsys, "audit", str(flow))
    lines = out.splitlines()
    assert any("person:bob  refused approve" in x and "rev " in x for x in lines)
    assert any("agent:ci-bot  refused approve" in x for x in lines)
    assert any("person:alice  done approve" in x and "gate total" in x for x in lines)


def test_a_grant_expires_and_can_be_revoked(tmp_path, monkeypatch) -> None:
    flow, run = at_total(
        tmp_path,
        TWO_GATES.replace("review: required", "review: {required: true, delegatable: true}"),
    )
    now = [1_000_000.0]
    accounts = Accounts(clock=lambda: now[0])
    accounts.add("agent", "ci-bot")
    bot = Principal("agent", "ci-bot", (), "token")
    loaded = runner.load_flow(flow)
    made = acting.manage(flow, run.id, agent="ci-bot", duration="1h", accounts=accounts)
    assert made.by == PERSON and made.until == now[0] + 3600
    assert authority.authorize(bot, "approve", loaded, run.id, accounts=accounts).granted
    now[0] += 3601  # an hour and a second later
    with pytest.raises(authority.NotAuthorized, match="agent:ci-bot holds no live grant"):
        authority.authorize(bot, "approve", loaded, run.id, accounts=accounts)
    acting.manage(flow, run.id, agent="ci-bot", duration="1h", accounts=accounts)
    assert acting.manage(flow, run.id, agent="ci-bot", grant=False, accounts=accounts) == 1
    with pytest.raises(authority.NotAuthorized, match="holds no live grant"):
        authority.authorize(bot, "rerun", loaded, run.id, accounts=accounts)
    outcomes = [
        (e.principal, e.outcome, e.verb) for e in accounts.audit(authority.flow_key(loaded))
    ]
    assert outcomes == [
        (PERSON, "granted", "manage"),
        ("agent:ci-bot", "refused", "approve"),
        (PERSON, "granted", "manage"),
        (PERSON, "revoked", "manage"),
        ("agent:ci-bot", "refused", "rerun"),
    ]
    with pytest.raises(authority.NotAuthorized, match="only a person"):
        acting.manage(flow, run.id, agent="ci-bot", principal=bot, accounts=accounts)


def test_an_agent_refused_at_a_persons_gate_cannot_rerun_past_it_nor_cancel(
    tmp_path, monkeypatch
) -> None:
    flow, run = at_total(tmp_path)
    agent_token("ci-bot")
    acting.manage(flow, run.id, agent="ci-bot")  # a grant: still no person's Gate
    bot = Principal("agent", "ci-bot", (), "token")
    for verb, act in (
        ("approve", lambda: acting.approve(flow, run.id, gate="total", principal=bot)),
        ("rerun", lambda: acting.rerun(flow, "report", run.id, principal=bot)),
        ("cancel", lambda: acting.cancel(flow, run.id, principal=bot)),
        ("reject", lambda: acting.reject(flow, "total", "no", run.id, gate="total", principal=bot)),
    ):
        with pytest.raises(authority.NotAuthorized, match=f"agent:ci-bot may not {verb}"):
            act()
    state = RunHandle.open(run.flow, run.id).state
    assert (state.waiting, state.gate, state.status) == ("gate", "total", "paused")


def test_accounts_are_bounded_and_tokens_are_hashes(tmp_path) -> None:
    accounts = Accounts(tmp_path / "acc")
    for bad in ("Alice", "a" * 40, "a b", "", "../x"):
        with pytest.raises(AccountError):
            accounts.add("person", bad)
    with pytest.raises(AccountError, match="at most 16"):
        accounts.add("person", "carol", [f"r{i}" for i in range(17)])
    accounts.add("agent", "ci-bot")
    token = accounts.issue("agent", "ci-bot")
    assert token.startswith("pxa_") and token.split("_", 2)[2] not in (
        (tmp_path / "acc/accounts.sqlite").read_bytes().decode("latin-1")
    )
    assert accounts.authenticate(token).name == "ci-bot"
    for bad in (token[:-2] + "xx", "pxa_" + "0" * 12 + "_" + "a" * 40, "x" * 5000, "hello"):
        with pytest.raises(BadToken):
            accounts.authenticate(bad)
    accounts.remove("agent", "ci-bot")
    with pytest.raises(BadToken, match="unknown or revoked"):
        accounts.authenticate(token)
    assert oct((tmp_path / "acc/accounts.sqlite").stat().st_mode & 0o777) == "0o600"


def test_users_and_agents_commands(tmp_path, capsys, monkeypatch) -> None:
    code, out, err = main(capsys, "users", "add", "alice", "--role", "finance")
    assert code == 0 and "person:alice added (roles: finance)" in out, err
    code, out, err = main(capsys, "agents", "add", "ci-bot")
    token = out.strip()
    assert code == 0 and token.startswith("pxa_") and "shown once" in err
    code, out, _ = main(capsys, "users", "list")
    assert "person:alice\troles: finance" in out and "person:tester" in out
    monkeypatch.setenv("PRAXIS_TOKEN", token)  # an agent may not change accounts
    code, _, err = main(capsys, "users", "add", "mallory", "--role", "finance")
    assert code == 4 and "agent:ci-bot may not change accounts" in err
    code, _, err = main(capsys, "users", "add", "Bad Name")
    assert code == 4
    monkeypatch.setenv("PRAXIS_TOKEN", "pxa_000000000000_" + "a" * 43)
    code, _, err = main(capsys, "users", "list")
    assert code == 0  # listing needs no one
    code, _, err = main(capsys, "users", "add", "x")
    assert code == 4 and "BadToken" in err and len(err.splitlines()) == 2
