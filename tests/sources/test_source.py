"""praxis.sources.source: what a flow may name (a connection, a file of its own) and what a
profile connection is opened with (its own parts only, each ${VAR} expanded after parsing)."""

from __future__ import annotations

import pytest

from praxis.flows.definition.profile import Connection, ProfileUnset, expand
from praxis.sources.source import BadSource, parse, redact, target


@pytest.mark.parametrize(
    ("text", "engine", "path", "connection"),
    [
        ("warehouse", None, None, "warehouse"),
        ("sales_2-db", None, None, "sales_2-db"),
        ("data/shop.sqlite", "sqlite", "data/shop.sqlite", None),
        ("data/x.duckdb", "duckdb", "data/x.duckdb", None),
        ("sqlite:///data/shop.sqlite", "sqlite", "data/shop.sqlite", None),
        ("duckdb:///:memory:", "duckdb", ":memory:", None),
        ("duckdb:///x.duckdb", "duckdb", "x.duckdb", None),
    ],
)
def test_a_flow_names_a_connection_or_a_file_of_its_own(
    text: str, engine: str | None, path: str | None, connection: str | None
) -> None:
    got = parse(text)
    assert (got.engine, got.path, got.connection) == (engine, path, connection)


@pytest.mark.parametrize(
    "text",
    [
        "postgresql+psycopg://${ADV4_SECRET}@127.0.0.1:55432/${HOME}",
        "postgresql:///shop?host=trusted.example&hostaddr=127.0.0.1",
        "postgresql://u:hunter2@db.example/x",
        "sqlite:////var/tmp/secret.sqlite",
        "duckdb:////var/tmp/secret.duckdb",
        "/var/tmp/secret.sqlite",
        "../secret.sqlite",
        "$HOME/x.sqlite",
        "sqlite:///x.sqlite?mode=rw",
    ],
)
def test_whatever_reaches_the_host_is_refused_naming_the_profile_entry(text: str) -> None:
    with pytest.raises(BadSource) as refused:
        parse(text, "~/p.yaml")
    said = str(refused.value)
    assert "add `connections: {NAME: {url: " in said and "to ~/p.yaml" in said
    assert "hunter2" not in said and "\n" not in said


def env_expand(env: dict[str, str]):  # type: ignore[no-untyped-def]
    return lambda text, where: expand(text, env, where=where)


def test_a_profile_connection_gives_libpq_its_parts_and_nothing_else() -> None:
    conn = Connection(
        "warehouse",
        "postgresql+psycopg://${WH_USER}@${WH_HOST}:5433/shop?sslmode=require",
        password="${WH_PW}",
    )
    env = {"WH_USER": "ana", "WH_HOST": "db.internal", "WH_PW": "p@ss/w:rd", "PGPASSWORD": "x"}
    got = target(conn, env_expand(env), "~/p.yaml")
    assert got.params == {
        "sslmode": "require",
        "user": "ana",
        "host": "db.internal",
        "dbname": "shop",
        "port": "5433",
        "password": "p@ss/w:rd",
        "passfile": "/dev/null",
    }
    assert "p@ss/w:rd" in got.secrets and "x" not in got.secrets
    assert (got.connection, got.allow_superuser) == ("warehouse", False)


def test_no_password_in_the_profile_is_an_empty_password_not_pgpass() -> None:
    got = target(Connection("w", "postgresql+psycopg://ana@db/shop"), env_expand({}), "p")
    assert (got.params["password"], got.params["passfile"]) == ("", "/dev/null")


def test_an_unset_variable_of_the_profile_is_named_not_guessed() -> None:
    conn = Connection("w", "postgresql+psycopg://ana@db/shop", password="${WH_PW}")
    with pytest.raises(ProfileUnset, match=r"connections.w.password needs \$\{WH_PW\}"):
        target(conn, env_expand({}), "p")


def test_a_profile_file_connection_names_an_absolute_path() -> None:
    got = target(Connection("f", "duckdb:////srv/x.duckdb"), env_expand({}), "p")
    assert (got.engine, got.file) == ("duckdb", "/srv/x.duckdb")
    with pytest.raises(BadSource, match="names its absolute path"):
        target(Connection("f", "sqlite:///rel.sqlite"), env_expand({}), "p")
    with pytest.raises(BadSource, match="not 'mysql'"):
        target(Connection("m", "mysql://u@h/x"), env_expand({}), "p")


def test_redact_masks_each_secret() -> None:
    assert redact("bad password one for twotwo", ["twotwo", "one"]) == "bad password *** for ***"
