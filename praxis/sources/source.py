"""flow.yaml's ``database:`` as written: its engine, its secrets kept out, its driver named.

A bare path is a SQLite file of the flow. A URL names one of three engines, each of which
praxis can hold to read-only (DESIGN.md §12, "A database"):

    sqlite:///data/shop.sqlite                   a file, relative to the flow folder
    duckdb:///data/x.duckdb  (or duckdb:///:memory:, for the phase's files alone)
    postgresql+psycopg://reader:${PGPASSWORD}@db.example/shop

``${NAME}`` in a URL is read from praxis's environment when it connects, and only then: the
text as written is all praxis keeps or shows, so a password is never in flow.yaml, run.json,
events, records or pages. A password written out in the URL is an error (``praxis check``).
The driver's own variables and files (``PGPASSWORD``, ``PGHOST``, ``~/.pgpass``) work too.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # SQLAlchemy is imported only by a flow that names a URL (0.4 s)
    from sqlalchemy.engine import URL

REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# the parts of a URL as SQLAlchemy's make_url reads them: a password runs to the first "@"
_PASSWORD = re.compile(r"^([\w+]+://[^:/]*:)([^@]*)@")
_QUERY_PASSWORD = re.compile(r"([?&]password=)([^&]*)", re.IGNORECASE)
MEMORY = ":memory:"


@dataclass(frozen=True)
class Engine:
    name: str
    modules: tuple[str, ...]  # what must be importable for SQLAlchemy to reach it
    extra: str | None  # praxis's pip extra that installs them
    files: bool  # the database is a file on this machine


ENGINES = {
    "sqlite": Engine("sqlite", ("sqlite3",), None, files=True),
    "duckdb": Engine("duckdb", ("duckdb", "duckdb_engine"), "duckdb", files=True),
    "postgresql": Engine("postgresql", ("psycopg",), "postgres", files=False),
}
DRIVERS = {"sqlite": ("", "pysqlite"), "duckdb": ("",), "postgresql": ("", "psycopg")}


class BadSource(ValueError):
    """The ``database:`` text is not one praxis can use; the message is one line, masked."""


@dataclass(frozen=True)
class Source:
    text: str  # as written in flow.yaml (references unresolved)
    engine: str  # sqlite | duckdb | postgresql
    path: str | None = None  # a file engine's database file as written; None: in memory
    references: tuple[str, ...] = ()  # the ${NAME}s the URL reads from the environment

    @property
    def shown(self) -> str:
        return masked(self.text)


class Reporter(Protocol):
    def error(self, loc: str, message: str) -> None: ...
    def warn(self, loc: str, message: str) -> None: ...


def masked(text: str) -> str:
    """``text`` with any password written in it replaced by ``***`` (references stay)."""

    def hide(match: re.Match[str]) -> str:
        value = match.group(2)
        kept = value if REFERENCE.fullmatch(value) else "***"
        return match.group(1) + kept + ("@" if match.re is _PASSWORD else "")

    return _QUERY_PASSWORD.sub(hide, _PASSWORD.sub(hide, text))


def parse(text: str) -> Source:
    """The source ``text`` names; BadSource (saying what to write instead) when it names none."""
    if "://" not in text:
        if not text.strip():
            raise BadSource("is empty: name a SQLite file of the flow or a database URL")
        return Source(text, "sqlite", path=text)
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    shown = masked(text)
    try:
        url = make_url(text)
    except (ArgumentError, ValueError) as exc:
        raise BadSource(f"{shown!r} is not a database URL ({_first_line(exc)})") from None
    backend, _, driver = url.drivername.partition("+")
    if backend not in ENGINES:
        raise BadSource(
            f"{shown!r}: praxis reads {', '.join(ENGINES)} databases (it holds them to "
            f"read-only), not {backend!r}"
        )
    if driver not in DRIVERS[backend]:
        known = " or ".join(f"{backend}+{d}" if d else backend for d in DRIVERS[backend])
        raise BadSource(f"{shown!r}: write {known}:// (praxis's driver), not {url.drivername}")
    if _literal_password(url.password) or any(
        key.lower() == "password" and _literal_password(str(v)) for key, v in url.query.items()
    ):
        raise BadSource(
            f"{shown!r} holds a password: write ${{NAME}} in its place and set NAME in "
            "praxis's environment (or use the driver's own, such as PGPASSWORD or ~/.pgpass)"
        )
    path = None
    if ENGINES[backend].files:
        path = url.database or MEMORY
        if backend == "sqlite" and path == MEMORY:
            raise BadSource(f"{shown!r} is an empty database: name the SQLite file")
    references = tuple(dict.fromkeys(REFERENCE.findall(text)))
    return Source(text, backend, path=path, references=references)


def _literal_password(value: str | None) -> bool:
    return bool(value) and not REFERENCE.fullmatch(value or "")


def missing_driver(source: Source) -> str | None:
    """What to install when the engine's driver is missing (the pip command), else None."""
    engine = ENGINES[source.engine]
    absent = [m for m in engine.modules if _find(m) is None]
    if not absent:
        return None
    pip = f"{sys.executable} -m pip install 'praxis[{engine.extra}]'"
    return f"{source.engine} needs {', '.join(absent)}, which is not installed: {pip}"


def _find(module: str) -> object | None:
    try:
        return importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None


def unset(source: Source, environ: Mapping[str, str] | None = None) -> list[str]:
    """The references of ``source`` that the environment does not set."""
    env = os.environ if environ is None else environ
    return [name for name in source.references if name not in env]


def check(text: str, root: Path, report: Reporter, loc: str = "database") -> Source | None:
    """``praxis check`` of a ``database:`` value: its form, its file, its driver, its secrets."""
    try:
        source = parse(text)
    except BadSource as exc:
        report.error(loc, str(exc))
        return None
    if source.path is not None and source.path != MEMORY and "://" in text:
        problem = file_problem(root, source.path)
        if problem:
            report.error(loc, f"{source.shown!r}: {problem}")
    missing = missing_driver(source)
    if missing:
        report.error(loc, missing)
    for name in unset(source):
        report.warn(loc, f"${{{name}}} is not set in this environment: set it before a run")
    return source


def file_problem(root: Path, path: str) -> str | None:
    """Why database file ``path`` (relative to the flow folder, or absolute) cannot be read."""
    absolute = Path(path).is_absolute()
    full = Path(path) if absolute else root / path
    where = "" if absolute else " in the flow folder"
    try:
        if not absolute and not full.resolve().is_relative_to(root.resolve()):
            return f"{path!r} leads outside the flow folder"
        if not full.exists():
            return f"{path!r} does not exist{where}"
        if not full.is_file():
            return f"{path!r} is not a regular file"
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
        return f"{path!r} cannot be read ({getattr(exc, 'strerror', exc)})"
    return None


def resolved_url(source: Source, environ: Mapping[str, str] | None = None) -> URL:
    """The URL to connect with: each ``${NAME}`` replaced by its value from the environment.

    Each part is replaced on its own, after parsing, so a value holding ``@`` or ``/`` needs no
    quoting. Raises BadSource naming an unset reference; the message never holds a value.
    """
    from sqlalchemy.engine import make_url

    env = os.environ if environ is None else environ
    missing = unset(source, env)
    if missing:
        names = ", ".join(f"${{{n}}}" for n in missing)
        raise BadSource(f"{source.shown!r} needs {names}, which praxis's environment does not set")

    def fill(value: str | None) -> str | None:
        return None if value is None else REFERENCE.sub(lambda m: env[m.group(1)], value)

    url = make_url(source.text)
    query = {k: fill(v) if isinstance(v, str) else tuple(map(fill, v))
             for k, v in url.query.items()}  # fmt: skip
    return url.set(
        username=fill(url.username),
        password=fill(url.password),
        host=fill(url.host),
        database=fill(url.database),
        query=query,  # type: ignore[arg-type]
    )


def secrets(source: Source, environ: Mapping[str, str] | None = None) -> list[str]:
    """Values that must never leave the connection: the references' and the driver's own."""
    env = os.environ if environ is None else environ
    names = list(source.references)
    if source.engine == "postgresql":
        names.append("PGPASSWORD")
    return sorted({env[n] for n in names if env.get(n)}, key=len, reverse=True)


def redact(text: str, values: list[str]) -> str:
    """``text`` with each secret value replaced by ``***``."""
    for value in values:
        text = text.replace(value, "***")
    return text


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
