"""The person's accounts: people (roles, a password for the page), agents, their tokens,
the grants a person gives an agent and the audit of every decision, grant and refusal.

One SQLite file in the person's praxis data folder (``$PRAXIS_DATA``, else
``$XDG_DATA_HOME/praxis``, else ``~/.local/share/praxis``), made 0600. Passwords and tokens
are kept only as argon2id hashes (argon2-cffi). A token is ``pxp_`` (a person's) or ``pxa_``
(an agent's), then the id of its row and a random secret: the id finds the row, argon2
verifies the secret. A token is 256 random bits, so its hash needs no slow parameters: the
hash keeps a leaked file from handing out tokens, not a guessable secret from guessing.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from ..command_line import typed
from ..errors import Refused, UsageError

if TYPE_CHECKING:
    from argon2 import PasswordHasher

# AccountError (UsageError)      a name, role, token or duration that cannot be used
# BadToken (Refused)             PRAXIS_TOKEN or a bearer token that is no live account's

NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
TOKEN = re.compile(r"(pxp|pxa)_([0-9a-f]{12})_([A-Za-z0-9_-]{20,80})")
MAX_ROLES = 16
MAX_TOKEN = 200
MAX_PASSWORD = 1024
KINDS = ("person", "agent")
PREFIX = {"person": "pxp", "agent": "pxa"}


@cache
def _hasher(secret: str) -> PasswordHasher:
    """argon2id for a ``"password"`` (the library's defaults: a password may be weak) or a
    ``"token"`` (256 random bits: one pass is enough). argon2 is imported on the first secret
    hashed or checked: a command that names no one by a secret (``praxis status``) never
    loads it."""
    from argon2 import PasswordHasher

    if secret == "password":
        return PasswordHasher()
    return PasswordHasher(time_cost=1, memory_cost=8192, parallelism=1)


def _matches(secret: str, stored: str, given: str) -> bool:
    """Whether ``given`` is the ``secret`` (``"password"`` or ``"token"``) ``stored`` hashes."""
    from argon2.exceptions import InvalidHashError, VerificationError

    try:
        _hasher(secret).verify(stored, given)
    except (VerificationError, InvalidHashError):
        return False
    return True


SCHEMA = """
create table if not exists accounts (
  kind text not null, name text not null, roles text not null default '[]',
  password text, created real not null, primary key (kind, name));
create table if not exists tokens (
  id text primary key, kind text not null, name text not null, hash text not null,
  created real not null, revoked real);
create table if not exists grants (
  id integer primary key, agent text not null, flow text not null, run text,
  by text not null, at real not null, until real not null, revoked real);
create table if not exists audit (
  id integer primary key, at real not null, flow text not null, run text, revision integer,
  gate text, verb text not null, principal text not null, outcome text not null,
  reason text not null default '');
"""


class AccountError(UsageError, ValueError):
    """Raised for a name, role, password, token or duration that cannot be used."""

    def next(self, flow: str) -> str:
        return "praxis users list"


class BadToken(Refused):
    """Raised for a token that is malformed, unknown, revoked, or of a removed account."""

    def next(self, flow: str) -> str:
        return "praxis agents list"


@dataclass(frozen=True)
class Account:
    kind: str  # person | agent
    name: str
    roles: tuple[str, ...] = ()


@dataclass(frozen=True)
class Grant:
    id: int
    agent: str
    flow: str
    run: str | None
    by: str
    at: float
    until: float
    revoked: float | None


@dataclass(frozen=True)
class Entry:
    at: float
    flow: str
    run: str | None
    revision: int | None
    gate: str | None
    verb: str
    principal: str
    outcome: str  # done | refused | granted | revoked
    reason: str


def data_folder(env: Mapping[str, str] | None = None) -> Path:
    """The person's praxis data folder."""
    env = os.environ if env is None else env
    if env.get("PRAXIS_DATA"):
        return Path(env["PRAXIS_DATA"])
    base = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local/share")
    return Path(base) / "praxis"


def checked_name(name: str, what: str = "name") -> str:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        shown = repr(name)[:40]
        raise AccountError(
            f"{what} {shown} is not a-z, 0-9, _ or - (at most 32, starting with a letter)"
        )
    return name


def parse_duration(text: str) -> float:
    """Seconds of ``30m``, ``2h``, ``1d`` (at most 30 days)."""
    m = re.fullmatch(r"(\d{1,6})([smhd])", text.strip())
    if not m:
        raise AccountError(f"duration {text[:20]!r} is not like 30m, 2h or 1d")
    seconds = int(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    if not 0 < seconds <= 30 * 86400:
        raise AccountError(f"duration {text[:20]!r} must be more than 0 and at most 30d")
    return float(seconds)


class Accounts:
    """The accounts file of one data folder; every method opens, acts and closes it."""

    def __init__(self, folder: Path | None = None, clock: object = time.time) -> None:
        self.folder = data_folder() if folder is None else folder
        self.path = self.folder / "accounts.sqlite"
        self.clock = clock

    def now(self) -> float:
        return float(self.clock())  # type: ignore[operator]

    @contextmanager
    def _db(self, write: bool = False) -> Iterator[sqlite3.Connection]:
        if not write and not self.path.exists():
            db = sqlite3.connect(":memory:")
        else:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            if self.path.is_symlink():  # the file is the person's own, never a link's target
                raise AccountError(f"{self.path} is a symbolic link: remove it")
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            os.fchmod(fd, 0o600)
            os.close(fd)
            db = sqlite3.connect(self.path, timeout=10)
        try:
            db.executescript(SCHEMA)
            with db:
                yield db
        finally:
            db.close()

    # accounts

    def configured(self) -> bool:
        """Whether any person account exists (else: zero configuration)."""
        with self._db() as db:
            return db.execute("select 1 from accounts where kind='person'").fetchone() is not None

    def add(self, kind: str, name: str, roles: list[str] | None = None) -> Account:
        checked_name(name, f"{kind} name")
        kept = sorted({checked_name(r, "role") for r in roles or []})
        if len(kept) > MAX_ROLES:
            raise AccountError(f"{len(kept)} roles: at most {MAX_ROLES}")
        with self._db(write=True) as db:
            known = "select 1 from accounts where kind=? and name=?"
            if db.execute(known, (kind, name)).fetchone():
                raise AccountError(f"{kind} {name} exists already")
            db.execute(
                "insert into accounts(kind, name, roles, created) values (?, ?, ?, ?)",
                (kind, name, json.dumps(kept), self.now()),
            )
        return Account(kind, name, tuple(kept))

    def get(self, kind: str, name: str) -> Account | None:
        with self._db() as db:
            row = db.execute(
                "select roles from accounts where kind=? and name=?", (kind, name)
            ).fetchone()
        return None if row is None else Account(kind, name, tuple(json.loads(row[0])))

    def of_kind(self, kind: str) -> list[Account]:
        with self._db() as db:
            rows = db.execute(
                "select name, roles from accounts where kind=? order by name", (kind,)
            ).fetchall()
        return [Account(kind, n, tuple(json.loads(r))) for n, r in rows]

    def remove(self, kind: str, name: str) -> None:
        """Removes the account and revokes its tokens (and an agent's grants)."""
        with self._db(write=True) as db:
            gone = db.execute("delete from accounts where kind=? and name=?", (kind, name))
            if not gone.rowcount:
                raise AccountError(f"no {kind} named {checked_name(name)}")
            now = self.now()
            db.execute(
                "update tokens set revoked=? where kind=? and name=? and revoked is null",
                (now, kind, name),
            )
            if kind == "agent":
                db.execute(
                    "update grants set revoked=? where agent=? and revoked is null", (now, name)
                )

    # tokens and passwords

    def issue(self, kind: str, name: str) -> str:
        """A new token for the account: returned once, kept only as its hash."""
        if self.get(kind, name) is None:
            raise AccountError(f"no {kind} named {checked_name(name)}")
        tid, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
        with self._db(write=True) as db:
            db.execute(
                "insert into tokens(id, kind, name, hash, created) values (?, ?, ?, ?, ?)",
                (tid, kind, name, _hasher("token").hash(secret), self.now()),
            )
        return f"{PREFIX[kind]}_{tid}_{secret}"

    def authenticate(self, token: str) -> Account:
        """The live account a token is of; BadToken otherwise (never says which part failed
        beyond malformed, unknown or revoked)."""
        m = TOKEN.fullmatch(token.strip()[:MAX_TOKEN])
        if m is None or len(token) > MAX_TOKEN:
            raise BadToken("the token is not a praxis token (pxp_… or pxa_…)")
        kind = "person" if m.group(1) == "pxp" else "agent"
        with self._db() as db:
            row = db.execute(
                "select name, hash, revoked from tokens where id=? and kind=?", (m.group(2), kind)
            ).fetchone()
        if row is None or row[2] is not None:
            raise BadToken(f"the token {m.group(1)}_{m.group(2)} is unknown or revoked")
        if not _matches("token", row[1], m.group(3)):
            raise BadToken(f"the token {m.group(1)}_{m.group(2)} is unknown or revoked")
        account = self.get(kind, row[0])
        if account is None:
            raise BadToken(f"the token {m.group(1)}_{m.group(2)} is of a removed account")
        return account

    def revoke_tokens(self, kind: str, name: str) -> int:
        with self._db(write=True) as db:
            return db.execute(
                "update tokens set revoked=? where kind=? and name=? and revoked is null",
                (self.now(), kind, name),
            ).rowcount

    def set_password(self, name: str, password: str) -> None:
        if not 8 <= len(password) <= MAX_PASSWORD:
            raise AccountError(f"a password has 8 to {MAX_PASSWORD} characters")
        with self._db(write=True) as db:
            done = db.execute(
                "update accounts set password=? where kind='person' and name=?",
                (_hasher("password").hash(password), name),
            )
            if not done.rowcount:
                raise AccountError(f"no person named {checked_name(name)}")

    def login(self, name: str, password: str) -> Account | None:
        """The person, when ``password`` is theirs; None otherwise."""
        if not NAME.fullmatch(name or "") or len(password) > MAX_PASSWORD:
            return None
        with self._db() as db:
            row = db.execute(
                "select password from accounts where kind='person' and name=?", (name,)
            ).fetchone()
        if row is None or row[0] is None:
            _hasher("password").hash(password)  # the same time for an unknown name
            return None
        if not _matches("password", row[0], password):
            return None
        return self.get("person", name)

    # grants

    def grant(self, agent: str, flow: str, run: str | None, by: str, seconds: float) -> Grant:
        if self.get("agent", agent) is None:
            raise AccountError(
                f"no agent named {checked_name(agent)}: add it with "
                + typed("agents add")
                + f" {agent}"
            )
        now = self.now()
        with self._db(write=True) as db:
            cur = db.execute(
                "insert into grants(agent, flow, run, by, at, until) values (?, ?, ?, ?, ?, ?)",
                (agent, flow, run, by, now, now + seconds),
            )
        return Grant(int(cur.lastrowid or 0), agent, flow, run, by, now, now + seconds, None)

    def revoke_grants(self, agent: str, flow: str, run: str | None) -> int:
        with self._db(write=True) as db:
            return db.execute(
                "update grants set revoked=? where agent=? and flow=? and revoked is null "
                "and until>? and (? is null or run is null or run=?)",
                (self.now(), agent, flow, self.now(), run, run),
            ).rowcount

    def grants(self, flow: str) -> list[Grant]:
        with self._db() as db:
            rows = db.execute("select * from grants where flow=? order by id", (flow,)).fetchall()
        return [Grant(*row) for row in rows]

    def live_grant(self, agent: str, flow: str, run: str | None) -> Grant | None:
        """The agent's grant on this run (or its whole flow) that neither expired nor was
        revoked; None when there is none."""
        now = self.now()
        for g in reversed(self.grants(flow)):
            if g.agent == agent and g.revoked is None and g.until > now:
                if g.run is None or g.run == run:
                    return g
        return None

    # audit

    def record(self, entry: Entry) -> None:
        with self._db(write=True) as db:
            db.execute(
                "insert into audit(at, flow, run, revision, gate, verb, principal, outcome, "
                "reason) values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    entry.at, entry.flow, entry.run, entry.revision, entry.gate, entry.verb,
                    entry.principal, entry.outcome, entry.reason[:2000],
                ),
            )  # fmt: skip

    def audit(self, flow: str) -> list[Entry]:
        with self._db() as db:
            rows = db.execute(
                "select at, flow, run, revision, gate, verb, principal, outcome, reason "
                "from audit where flow=? order by id",
                (flow,),
            ).fetchall()
        return [Entry(*row) for row in rows]
