"""Run parameters bound as SQL parameters: ``:name`` becomes each driver's placeholder outside
literals, identifiers, comments and casts; the values never enter the text."""

from __future__ import annotations

import sqlite3

import duckdb
import pytest

from praxis.sources.params import UnboundParameter, bind, names

SQL = """-- :not_a_param in a comment
SELECT ':nor_this' AS a, "col:umn" AS b, x::text, /* :neither */ $q$ :body $q$
FROM t WHERE d >= :start AND r = :region AND s LIKE '50%' AND d2 >= :start"""


def test_parameters_are_found_outside_literals_comments_and_casts() -> None:
    assert names(SQL) == ["start", "region"]


@pytest.mark.parametrize(
    "engine, placeholder", [("sqlite", ":start"), ("duckdb", "$start"), ("postgresql", "%(start)s")]
)
def test_each_engine_gets_its_placeholder(engine: str, placeholder: str) -> None:
    text, bound = bind(SQL, engine, {"start": "2024-01-01", "region": "n", "other": 1})
    assert bound == {"start": "2024-01-01", "region": "n"}  # only what the query uses
    assert text.count(placeholder) == 2
    assert "2024-01-01" not in text
    assert ("'50%%'" in text) == (engine == "postgresql")  # psycopg reads % as its own


def test_a_query_without_parameters_is_left_as_written() -> None:
    assert bind("SELECT '50%' AS p", "postgresql", {"x": 1}) == ("SELECT '50%' AS p", {})


def test_a_parameter_the_run_lacks_names_it() -> None:
    with pytest.raises(UnboundParameter, match=r":region, which is not a run parameter .*start"):
        bind("SELECT 1 WHERE a = :start AND b = :region", "duckdb", {"start": 1})


@pytest.mark.parametrize("value", ["x' OR '1'='1", "x'); DROP TABLE t; --", "$start", ":start"])
def test_a_hostile_value_stays_a_value_in_sqlite_and_duckdb(value: str) -> None:
    query = "SELECT count(*) FROM t WHERE name = :name"
    for engine, conn in (("sqlite", sqlite3.connect(":memory:")), ("duckdb", duckdb.connect())):
        conn.execute("CREATE TABLE t (name TEXT)")
        conn.execute("INSERT INTO t VALUES ('a'), ('b')")
        text, bound = bind(query, engine, {"name": value})
        assert conn.execute(text, bound).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (2,)
