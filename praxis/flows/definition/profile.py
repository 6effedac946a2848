"""The person's profile: what lives on the host and reaches past it (DESIGN.md §13).

A flow is portable and may come from anyone; it says *what* to compute. Connections,
clusters and notification targets are the person's, kept apart from every flow (as dbt keeps
``profiles.yml`` apart from a project), in ``$PRAXIS_PROFILE`` or
``$XDG_CONFIG_HOME/praxis/profile.yaml`` (``~/.config/praxis/profile.yaml``):

```yaml
connections:
  warehouse:                          # read-only use by query phases and extracts
    url: postgresql+psycopg://analyst@db.internal/shop
    password: ${WAREHOUSE_PASSWORD}   # ${VAR} is expanded here and nowhere else
  sales_write: {url: "postgresql+psycopg://loader@db.internal/shop", write: true}
clusters:
  prod: {address: "ray://head.internal:10001"}
notify:
  team: {webhook: "https://hooks.example/T123", include_error: false}
```

flow.yaml names an entry by its name (``database: warehouse``, ``sandbox: {cluster: prod}``,
``notify: {to: team}``); it never holds a host, an address, a URL or a ``${VAR}`` itself.
``${VAR}`` in a profile value is read from praxis's environment when the value is used
(``expand``), so ``praxis check`` needs no secret, and only the names the profile wrote are
ever read. A missing profile is an empty one: a flow that names nothing runs without one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import UsageError
from . import safe_yaml
from .yaml_values import ValueReader, describe

MAX_PROFILE_BYTES = 256 << 10
ENTRY = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")  # the name of an entry, as a flow writes it
REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
SECTIONS = ("connections", "clusters", "notify")
CONNECTION_KEYS = ("url", "password", "write", "allow_superuser")
CLUSTER_KEYS = ("address",)
TARGET_KEYS = ("webhook", "command", "include_error")


class ProfileInvalid(UsageError):
    """The person's profile cannot be read, or an entry in it is malformed."""

    def __init__(self, path: Path, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        first = problems[0] if problems else "cannot be read"
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"{path}: {first}{more}")

    def next(self, flow: str) -> str:
        return f"fix {self.path} (see the README's 'Your profile'), then: praxis check {flow}"


class ProfileUnset(UsageError):
    """A profile value reads an environment variable that is not set."""

    def __init__(self, names: list[str], where: str) -> None:
        self.names = names
        listed = ", ".join(f"${{{n}}}" for n in names)
        at = f"the profile's {where} " if where else "the profile "
        super().__init__(f"{at}needs {listed}, which praxis's environment does not set")

    def next(self, flow: str) -> str:
        return f"export {self.names[0]}=..., then: praxis check {flow}"


@dataclass(frozen=True)
class Connection:
    """A database the person named. ``url`` and ``password`` as written (``${VAR}`` kept)."""

    name: str
    url: str
    password: str | None = None
    write: bool = False  # may publish to it (never used for reading)
    allow_superuser: bool = False  # a role with server-file or program rights is allowed

    @property
    def references(self) -> tuple[str, ...]:
        """The environment variables this connection reads, in order, once each."""
        text = self.url + (self.password or "")
        return tuple(dict.fromkeys(REFERENCE.findall(text)))


@dataclass(frozen=True)
class Cluster:
    """A Ray cluster the person named: its address as written (``${VAR}`` kept)."""

    name: str
    address: str


@dataclass(frozen=True)
class Target:
    """Someone to tell about a run: a webhook, a command the person wrote, or both."""

    name: str
    webhook: str | None = None
    command: tuple[str, ...] = ()
    include_error: bool = False  # the body may carry a phase's error text (bounded, escaped)


@dataclass(frozen=True)
class Profile:
    path: Path  # where it is read from (it may not exist)
    exists: bool = False
    connections: Mapping[str, Connection] = field(default_factory=dict)
    clusters: Mapping[str, Cluster] = field(default_factory=dict)
    notify: Mapping[str, Target] = field(default_factory=dict)

    def shown(self) -> str:
        """The profile's path as a person would type it (``~`` for the home folder)."""
        return shown_path(self.path)


def path_of(environ: Mapping[str, str] | None = None) -> Path:
    """Where the person's profile is: ``$PRAXIS_PROFILE``, else the XDG config folder."""
    env = os.environ if environ is None else environ
    if env.get("PRAXIS_PROFILE"):
        return Path(env["PRAXIS_PROFILE"]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "praxis" / "profile.yaml"


def shown_path(path: Path) -> str:
    home = str(Path.home())
    text = str(path)
    return "~" + text[len(home) :] if home != "/" and text.startswith(home + "/") else text


def load(environ: Mapping[str, str] | None = None) -> Profile:
    """The person's profile (empty when there is none); ProfileInvalid when it is malformed."""
    path = path_of(environ)
    try:
        doc = safe_yaml.read(path, max_bytes=MAX_PROFILE_BYTES)
    except FileNotFoundError:
        return Profile(path)
    except OSError as exc:
        raise ProfileInvalid(path, [f"cannot be read ({exc.strerror or exc})"]) from None
    problems = [(f"line {p.line}: " if p.line else "") + p.message for p in doc.problems]
    if not doc.readable or problems:
        raise ProfileInvalid(path, problems or ["cannot be read"])
    return read(path, doc.data)


def read(path: Path, data: Any) -> Profile:
    """A profile from its parsed YAML; ProfileInvalid naming every problem."""
    problems: list[str] = []
    reader = ValueReader(path.parent, lambda loc, msg, _sev: problems.append(f"{loc}: {msg}"))
    top = {} if data is None else reader.mapping(data, "profile", SECTIONS) or {}
    connections = {
        n: Connection(n, **v) for n, v in _entries(reader, top, "connections", _connection)
    }
    clusters = {n: Cluster(n, **v) for n, v in _entries(reader, top, "clusters", _cluster)}
    targets = {n: Target(n, **v) for n, v in _entries(reader, top, "notify", _target)}
    if problems:
        raise ProfileInvalid(path, problems)
    return Profile(path, True, connections, clusters, targets)


def _entries(reader: ValueReader, top: dict[str, Any], section: str, fit: Any) -> list[Any]:
    raw = top.get(section)
    if raw is None:
        return []
    entries = reader.mapping(raw, section, None) or {}
    found = []
    for name, value in entries.items():
        loc = f"{section}.{name}"
        if not ENTRY.fullmatch(name):
            reader.error(loc, f"is not an entry name ({ENTRY.pattern})")
            continue
        fields = fit(reader, value, loc)
        if fields is not None:
            found.append((name, fields))
    return found


def _connection(reader: ValueReader, value: Any, loc: str) -> dict[str, Any] | None:
    raw = reader.mapping(value, loc, CONNECTION_KEYS)
    if raw is None:
        return None
    if "url" not in raw:
        reader.error(loc, "needs a url (postgresql+psycopg://user@host/db, duckdb:////path, ...)")
        return None
    fields: dict[str, Any] = {"url": reader.string(raw["url"], f"{loc}.url") or ""}
    if "password" in raw:
        fields["password"] = reader.string(raw["password"], f"{loc}.password")
    for key in ("write", "allow_superuser"):
        if key in raw:
            fields[key] = _flag(reader, raw[key], f"{loc}.{key}")
    return fields


def _cluster(reader: ValueReader, value: Any, loc: str) -> dict[str, Any] | None:
    raw = reader.mapping(value, loc, CLUSTER_KEYS)
    if raw is None:
        return None
    address = reader.string(raw.get("address"), f"{loc}.address") if "address" in raw else None
    if not address:
        reader.error(loc, "needs an address (ray://head:10001 or head:6379)")
        return None
    return {"address": address}


def _target(reader: ValueReader, value: Any, loc: str) -> dict[str, Any] | None:
    raw = reader.mapping(value, loc, TARGET_KEYS)
    if raw is None:
        return None
    fields: dict[str, Any] = {}
    if "webhook" in raw:
        fields["webhook"] = reader.string(raw["webhook"], f"{loc}.webhook")
    if "command" in raw:
        command = raw["command"]
        if (
            not isinstance(command, list)
            or not command
            or not all(isinstance(a, str) for a in command)
        ):
            reader.error(f"{loc}.command", f"expected a list of strings, got {describe(command)}")
        else:
            fields["command"] = tuple(command)
    if "include_error" in raw:
        fields["include_error"] = _flag(reader, raw["include_error"], f"{loc}.include_error")
    if not fields.get("webhook") and not fields.get("command"):
        reader.error(loc, "needs a webhook (an https:// URL) or a command (a list of strings)")
        return None
    return fields


def _flag(reader: ValueReader, value: Any, loc: str) -> bool:
    if not isinstance(value, bool):
        reader.error(loc, f"expected true or false, got {describe(value)}")
        return False
    return value


def expand(text: str, environ: Mapping[str, str] | None = None, *, where: str = "") -> str:
    """``text`` (a profile value) with each ``${VAR}`` replaced from the environment.

    Raises ProfileUnset naming the variables that are not set; never shows a value."""
    env = os.environ if environ is None else environ
    missing = [n for n in dict.fromkeys(REFERENCE.findall(text)) if n not in env]
    if missing:
        raise ProfileUnset(missing, where)
    return REFERENCE.sub(lambda m: env[m.group(1)], text)


def missing_entry(section: str, name: str, profile: Profile, example: str) -> str:
    """The one-line fix for a flow that names an entry the profile lacks."""
    have = sorted(getattr(profile, section))
    known = f" (it has: {', '.join(have)})" if have else ""
    return (
        f"{name!r} is not in your profile {profile.shown()}{known}: add "
        f"`{section}: {{{name}: {example}}}` there"
    )
