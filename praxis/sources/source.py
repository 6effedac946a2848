"""flow.yaml's ``database:``: a connection of the person's profile, or a file of the flow.

A flow names nothing on the host (DESIGN.md §13). It writes one of:

    warehouse                          a connection of the person's profile, by name
    data/shop.sqlite                   a file inside the flow folder (``.duckdb``: DuckDB)
    sqlite:///data/shop.sqlite         the same, as a URL that names no host
    duckdb:///data/x.duckdb            (or duckdb:///:memory:, for the phase's files alone)

Anything that would reach past the flow folder is refused with the profile entry to write
instead: a host, a user or password, a ``${VAR}``, a query (``?hostaddr=``, any libpq
parameter), an absolute or ``..`` path. Where a connection leads (host, role, password) is
the person's, in their profile; ``target`` turns one into what a connection is opened with.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Protocol

from sandbox.paths import name_problem

NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")  # a connection of the profile, by name
REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
MEMORY = ":memory:"
FILE_SCHEMES = {"sqlite": "sqlite", "sqlite+pysqlite": "sqlite", "duckdb": "duckdb"}
EXAMPLE_URL = "postgresql+psycopg://USER@HOST/DB"


@dataclass(frozen=True)
class Engine:
    name: str
    modules: tuple[str, ...]  # what must be importable to reach it
    extra: str | None  # praxis's pip extra that installs them


ENGINES = {
    "sqlite": Engine("sqlite", ("sqlite3",), None),
    "duckdb": Engine("duckdb", ("duckdb",), "duckdb"),
    "postgresql": Engine("postgresql", ("psycopg",), "postgres"),
}
DRIVERS = {"sqlite": ("", "pysqlite"), "duckdb": ("",), "postgresql": ("", "psycopg")}


class BadSource(ValueError):
    """The ``database:`` text (or a profile connection) cannot be used; one line, no secret."""


@dataclass(frozen=True)
class Source:
    """flow.yaml's ``database:`` as written: a connection's name or a file of the flow."""

    text: str
    engine: str | None  # sqlite | duckdb, or None for a connection (the profile decides)
    path: str | None = None  # a file of the flow, relative to its folder, or MEMORY
    connection: str | None = None  # the profile connection's name

    @property
    def shown(self) -> str:
        return self.text


@dataclass(frozen=True)
class Target:
    """What one connection is opened with; only what the person (or the flow folder) named.

    ``file`` is a host path the person named in the profile; a file of the flow is ``flow_file``
    (relative to the flow folder, opened by descriptor and copied before use)."""

    engine: str
    flow_file: str | None = None
    file: str | None = None
    params: dict[str, str] = field(default_factory=dict)  # libpq's keywords (PostgreSQL)
    connection: str | None = None
    allow_superuser: bool = False
    secrets: tuple[str, ...] = ()  # values never shown (the password, the expanded ${VAR}s)
    where: str = ""  # the profile's path, as the person types it


class Connection(Protocol):
    """A connection of the person's profile (praxis.flows.definition.profile.Connection)."""

    @property
    def name(self) -> str: ...
    @property
    def url(self) -> str: ...
    @property
    def password(self) -> str | None: ...
    @property
    def allow_superuser(self) -> bool: ...


def profile_fix(profile: str, url: str = EXAMPLE_URL) -> str:
    """The profile entry to write instead of what a flow named."""
    return f"a flow names a connection of your profile instead: {entry(profile, url)}"


def entry(profile: str, url: str) -> str:
    return f'add `connections: {{NAME: {{url: "{url}"}}}}` to {profile} and write `database: NAME`'


def parse(text: str, profile: str = "~/.config/praxis/profile.yaml") -> Source:
    """The source flow.yaml's ``text`` names; BadSource with the one-line fix otherwise.

    ``profile`` is where the person's profile is, for the fix."""
    written = text.strip()
    if not written:
        raise BadSource("is empty: name a connection of your profile or a database file")
    if NAME.fullmatch(written):
        return Source(written, None, connection=written)
    if "$" in written:
        refs = ", ".join(dict.fromkeys(f"${{{n}}}" for n in REFERENCE.findall(written)))
        what = f"reads {refs} from praxis's environment" if refs else "holds a $"
        raise BadSource(f"{what}: {profile_fix(profile)}")
    scheme, sep, rest = written.partition("://")
    if not sep:
        return _flow_file(written, written, _engine_of(written), profile)
    engine = FILE_SCHEMES.get(scheme.lower())
    host, _, path = rest.partition("/")
    if engine is None or host:
        what = f"names a host ({_host(rest)})" if host else f"names a {scheme} server"
        raise BadSource(f"{what}: {profile_fix(profile)}")
    if "?" in path or "#" in path:
        keys = [p.partition("=")[0][:40] for p in re.split(r"[?&#]", path)[1:5]]
        raise BadSource(f"holds connection parameters ({', '.join(keys)}): "
                        f"{profile_fix(profile)}")  # fmt: skip
    if engine == "duckdb" and path == MEMORY:
        return Source(written, "duckdb", path=MEMORY)
    if not path:
        raise BadSource(f"{written!r} names no file: write the database file's path in the flow")
    return _flow_file(written, path, engine, profile)


def _engine_of(path: str) -> str:
    return "duckdb" if path.lower().endswith(".duckdb") else "sqlite"


def _flow_file(text: str, path: str, engine: str, profile: str) -> Source:
    problem = name_problem(path)
    if problem is None:
        return Source(text, engine, path=path)
    outside = PurePosixPath(path).is_absolute() or ".." in path.split("/")
    if outside:
        scheme = "duckdb" if engine == "duckdb" else "sqlite"
        url = f"{scheme}:///{path}" if path.startswith("/") else f"{scheme}:////ABSOLUTE/PATH"
        raise BadSource(
            f"names a file outside the flow folder ({path}): copy it into the flow folder and "
            f"write `database: data/FILE`, or {entry(profile, url)}"
        )
    raise BadSource(f"{path!r} {problem}")


def _host(rest: str) -> str:
    """The host of a URL's ``rest`` (after ``://``), never its user or password (which may
    hold a ``/``)."""
    head = re.split(r"[?#]", rest)[0]
    after = head.rpartition("@")[2] if "@" in head else head
    return after.partition("/")[0][:200] or "?"


def target(conn: Connection, expand: Callable[[str, str], str], profile: str) -> Target:
    """What a profile connection is opened with: its URL's parts and password, each ``${VAR}``
    expanded (by ``expand(text, where)``) after parsing, so a value needs no quoting.

    PostgreSQL receives libpq keywords built here and nothing else: the password (empty when
    the profile names none) and ``passfile`` set to nothing, so neither ``PGPASSWORD`` nor a
    ``.pgpass`` entry nor another ``PG*`` variable is consulted (the connection is also
    opened in a process whose environment holds none of them)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    where = f"connections.{conn.name}"
    try:
        url = make_url(conn.url)
    except (ArgumentError, ValueError):
        raise BadSource(f"{profile}: {where}.url is not a database URL ({EXAMPLE_URL})") from None
    backend, _, driver = url.drivername.partition("+")
    if backend not in ENGINES or driver not in DRIVERS[backend]:
        raise BadSource(
            f"{profile}: {where}.url: praxis reads sqlite, duckdb and postgresql+psycopg "
            f"databases (it holds them to read-only), not {url.drivername!r}"
        )

    def fill(value: str | None, part: str) -> str | None:
        return None if value is None else expand(value, f"{where}.{part}")

    password = fill(conn.password, "password") or fill(url.password, "url") or ""
    secrets = {password} if password else set()
    for name in REFERENCE.findall(conn.url + (conn.password or "")):
        secrets.add(expand("${" + name + "}", where))
    shown = tuple(sorted((s for s in secrets if len(s) >= 4), key=len, reverse=True))
    if backend != "postgresql":
        path = fill(url.database, "url") or ""
        if not PurePosixPath(path).is_absolute():
            raise BadSource(
                f"{profile}: {where}.url names {path or 'no file'}: a connection to a database "
                f"file names its absolute path ({backend}:////PATH)"
            )
        return Target(backend, file=path, connection=conn.name, where=profile)
    params: dict[str, str] = {}
    for key, given in url.query.items():
        params[key] = str(fill(given if isinstance(given, str) else given[-1], "url"))
    for key, part in (("user", url.username), ("host", url.host), ("dbname", url.database)):
        if part:
            params[key] = str(fill(part, "url"))
    if url.port:
        params["port"] = str(url.port)
    if password or "password" not in params:
        params["password"] = password  # never PGPASSWORD's
    params.setdefault("passfile", "/dev/null")  # never ~/.pgpass
    return Target(
        "postgresql",
        params=params,
        connection=conn.name,
        allow_superuser=conn.allow_superuser,
        secrets=shown,
        where=profile,
    )


def missing_driver(engine: str) -> str | None:
    """What to install when the engine's driver is missing (the pip command), else None."""
    spec = ENGINES[engine]
    absent = [m for m in spec.modules if _find(m) is None]
    if not absent:
        return None
    pip = f"{sys.executable} -m pip install 'praxis[{spec.extra}]'"
    return f"{engine} needs {', '.join(absent)}, which is not installed: {pip}"


def _find(module: str) -> object | None:
    try:
        return importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None


def redact(text: str, values: tuple[str, ...] | list[str]) -> str:
    """``text`` with each secret value replaced by ``***``."""
    for value in values:
        text = text.replace(value, "***")
    return text
