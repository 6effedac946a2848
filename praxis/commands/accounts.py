"""The accounts commands: `praxis users` (people and their roles, a password for the page, a
person's token), `praxis agents` (agents and their tokens) and `praxis audit` (who decided,
granted or was refused what, on a flow's runs)."""

from __future__ import annotations

import argparse
import sys
import time

from ..argv import flow_text
from ..command_line import typed
from ..errors import EXIT
from ..service.accounts import MAX_PASSWORD, AccountError, Accounts
from ..service.authority import flow_key
from ..service.principals import NotPerson, Principal, resolve
from ..service.reading import load
from ..terminal import escape


def _person() -> Principal:
    """Accounts are changed by a person only (at a terminal, or with a person's token)."""
    who = resolve()
    if not who.is_person:
        raise NotPerson(
            f"{who.label} may not change accounts: run it at a terminal or with a person's "
            "PRAXIS_TOKEN"
        )
    return who


def _named(args: argparse.Namespace) -> str:
    if not args.name:
        raise AccountError(f"praxis {args.command} {args.action} needs a NAME")
    return str(args.name)


def cmd_users(args: argparse.Namespace) -> int:
    accounts = Accounts()
    if args.action == "list":
        for a in accounts.of_kind("person"):
            print(f"person:{a.name}\troles: {', '.join(a.roles) or '-'}")
        return EXIT["ok"]
    _person()
    name = _named(args)
    if args.action == "add":
        made = accounts.add("person", name, args.role)
        print(f"person:{made.name} added (roles: {', '.join(made.roles) or 'none'})")
        print(f"next: {typed('users password')} {name}   (a password for the page, on stdin)")
    elif args.action == "remove":
        accounts.remove("person", name)
        print(f"person:{name} removed; its tokens are revoked")
    elif args.action == "password":
        line = sys.stdin.readline(MAX_PASSWORD + 2).rstrip("\n")
        accounts.set_password(name, line)
        print(f"person:{name}: password set")
    else:  # token
        print(accounts.issue("person", name))
        print(f"a token of person:{name}, shown once: PRAXIS_TOKEN acts as them", file=sys.stderr)
    return EXIT["ok"]


def cmd_agents(args: argparse.Namespace) -> int:
    accounts = Accounts()
    if args.action == "list":
        for a in accounts.of_kind("agent"):
            print(f"agent:{a.name}")
        return EXIT["ok"]
    _person()
    name = _named(args)
    if args.action == "add":
        accounts.add("agent", name)
        print(accounts.issue("agent", name))
        print(
            f"the token of agent:{name}, shown once: give it to the agent as PRAXIS_TOKEN "
            "(or Authorization: Bearer on praxis serve's /mcp)",
            file=sys.stderr,
        )
    else:  # revoke
        accounts.remove("agent", name)
        print(f"agent:{name} revoked: its tokens and grants no longer count")
    return EXIT["ok"]


def cmd_audit(args: argparse.Namespace) -> int:
    flow = load(args.flow)
    entries = Accounts().audit(flow_key(flow))
    if not entries:
        print(f"{flow_text(flow)}: nothing recorded yet")
    for e in entries:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.at))
        where = f"run {e.run or '-'} rev {e.revision if e.revision is not None else '-'}"
        gate = f" gate {e.gate}" if e.gate else ""
        why = f": {escape(e.reason)}" if e.reason else ""
        print(f"{when}  {e.principal}  {e.outcome} {e.verb}  {where}{gate}{why}")
    return EXIT["ok"]
