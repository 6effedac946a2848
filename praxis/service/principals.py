"""Who acts: a ``Principal`` (a person or an agent, its name and roles), established once per
command from what the caller cannot choose at will (DESIGN.md §14).

- ``PRAXIS_TOKEN`` (a person's or an agent's token) is that account;
- else an interactive terminal (stdin and stdout are ttys) is the OS user, as a person: the
  person account of that name, with its roles; with no person account configured at all
  (zero configuration), the one person, holding every role;
- else (no token, no terminal) an agent, of no account, which may decide no Gate.

``--as agent`` (or ``PRAXIS_ACTOR=agent``) only narrows: a person acting as an agent. It
never raises an agent to a person.
"""

from __future__ import annotations

import getpass
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import TextIO

from ..errors import Refused
from .accounts import Account, Accounts

EVERY = "*"  # the roles of the one person of a zero-configuration install
UNNAMED = "unnamed"


class NotPerson(Refused):
    """Raised for ``--as person`` by a caller praxis knows as an agent."""

    def next(self, flow: str) -> str:
        return "run it from a terminal, or with a person's PRAXIS_TOKEN"


@dataclass(frozen=True)
class Principal:
    kind: str  # person | agent
    name: str
    roles: tuple[str, ...] = ()
    how: str = ""  # token | terminal | none | login | mcp

    @property
    def label(self) -> str:
        """As events, receipts and the audit name it: ``person:alice``, ``agent:ci-bot``."""
        return f"{self.kind}:{self.name}"

    @property
    def is_person(self) -> bool:
        return self.kind == "person"

    def holds(self, roles: tuple[str, ...]) -> bool:
        """Whether a person holds one of ``roles`` (any person when none is listed)."""
        if not self.is_person:
            return False
        return not roles or EVERY in self.roles or bool(set(roles) & set(self.roles))

    def as_agent(self) -> Principal:
        """The same caller, acting as an agent (narrowed; never the other way)."""
        return self if self.kind == "agent" else replace(self, kind="agent", roles=())


# The caller a front door established for what runs in this context (the page's signed-in
# person, an MCP request's agent): the service's verbs act as it when given no principal.
CURRENT: ContextVar[Principal | None] = ContextVar("praxis_principal", default=None)


@contextmanager
def acting_as(principal: Principal | None) -> Iterator[None]:
    """Run the block as ``principal`` (None: as this process, ``resolve``)."""
    reset = CURRENT.set(principal)
    try:
        yield
    finally:
        CURRENT.reset(reset)


def of_account(account: Account, how: str) -> Principal:
    return Principal(account.kind, account.name, account.roles, how)


def interactive(stdin: TextIO | None = None, stdout: TextIO | None = None) -> bool:
    ins, outs = stdin or sys.stdin, stdout or sys.stdout
    try:
        return bool(ins and outs and ins.isatty() and outs.isatty())
    except ValueError:  # a closed stream
        return False


def os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid{os.getuid()}"


def resolve(
    env: Mapping[str, str] | None = None,
    *,
    accounts: Accounts | None = None,
    terminal: bool | None = None,
    narrow: str | None = None,
) -> Principal:
    """The caller of this command (see the module's text). ``narrow``: ``--as`` (or
    ``PRAXIS_ACTOR``): "agent" makes a person act as an agent; "person" by an agent is
    refused (NotPerson)."""
    env = os.environ if env is None else env
    accounts = Accounts() if accounts is None else accounts
    token = env.get("PRAXIS_TOKEN", "").strip()
    if token:
        who = of_account(accounts.authenticate(token), "token")
    elif interactive() if terminal is None else terminal:
        who = _at_terminal(accounts)
    else:
        who = Principal("agent", UNNAMED, (), "none")
    wanted = (narrow or env.get("PRAXIS_ACTOR") or "").strip().lower()
    if wanted == "agent":
        return who.as_agent()
    if wanted == "person" and not who.is_person:
        raise NotPerson(
            f"--as person: this caller is {who.label} (no terminal, no person's token); "
            "--as may narrow who acts, never raise it"
        )
    return who


def _at_terminal(accounts: Accounts) -> Principal:
    name = os_user()
    if not accounts.configured():
        return Principal("person", name, (EVERY,), "terminal")
    found = accounts.get("person", name)
    return Principal("person", name, found.roles if found else (), "terminal")
