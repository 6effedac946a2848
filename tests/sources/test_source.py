"""praxis.sources.source: the database text as written, masked, resolved at connect time."""

from __future__ import annotations

import pytest

from praxis.sources.source import BadSource, masked, parse, redact, resolved_url, secrets


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("postgresql://u:hunter2@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:${PW}@h/db", "postgresql://u:${PW}@h/db"),  # a reference is no secret
        (
            "postgresql://u@h/db?sslmode=require&password=x",
            "postgresql://u@h/db?sslmode=require&password=***",
        ),
        ("postgresql://u:a/b@c@h/db", "postgresql://u:***@c@h/db"),  # as make_url reads it
        ("data/shop.sqlite", "data/shop.sqlite"),
    ],
)
def test_a_written_password_is_masked(text: str, shown: str) -> None:
    assert masked(text) == shown


def test_references_are_filled_part_by_part_without_quoting() -> None:
    source = parse("postgresql+psycopg://${USER_}:${PW}@${HOST}/shop?sslmode=${MODE}")
    assert source.references == ("USER_", "PW", "HOST", "MODE")
    env = {"USER_": "ana", "PW": "p@ss/w:rd", "HOST": "db.example", "MODE": "require"}
    url = resolved_url(source, env)
    assert (url.username, url.password, url.host, url.database) == (
        "ana", "p@ss/w:rd", "db.example", "shop"
    )  # fmt: skip
    assert dict(url.query) == {"sslmode": "require"}
    assert source.shown == source.text  # what is kept never holds a value


def test_an_unset_reference_is_named_not_guessed() -> None:
    source = parse("postgresql://u:${PW}@h/db")
    with pytest.raises(BadSource, match=r"needs \$\{PW\}, which praxis's environment"):
        resolved_url(source, {})


def test_secrets_are_the_values_behind_references_and_pgpassword() -> None:
    source = parse("postgresql://u:${PW}@h/db")
    assert secrets(source, {"PW": "one", "PGPASSWORD": "twotwo", "HOME": "/root"}) == [
        "twotwo",
        "one",
    ]
    assert redact("bad password one for twotwo", ["twotwo", "one"]) == "bad password *** for ***"


@pytest.mark.parametrize(
    ("text", "engine", "path"),
    [
        ("data/shop.sqlite", "sqlite", "data/shop.sqlite"),
        ("sqlite:////srv/shop.sqlite", "sqlite", "/srv/shop.sqlite"),
        ("duckdb:///:memory:", "duckdb", ":memory:"),
        ("duckdb:///x.duckdb", "duckdb", "x.duckdb"),
        ("postgresql:///shop", "postgresql", None),
    ],
)
def test_the_engine_and_its_file(text: str, engine: str, path: str | None) -> None:
    got = parse(text)
    assert (got.engine, got.path) == (engine, path)
