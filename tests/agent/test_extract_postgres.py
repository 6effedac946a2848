"""Extracts against a real PostgreSQL server (tests/pg_server.py), reached through a connection
of the person's profile: read-only and bounded by the server itself, the password read from
the variable the profile names and never shown, a superuser role refused unless allowed."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from praxis.agent.extract import Data, ExtractError, SourceUnavailable, run_query
from praxis.sources import sink

from ..pg_server import ADMIN, Server

SHOP = """
CREATE TABLE products (id integer PRIMARY KEY, name text NOT NULL, price numeric(8, 2));
INSERT INTO products VALUES (1, 'notebook', 19.90), (2, 'lamp', 149.00), (3, 'pencils', 4.50);
CREATE SEQUENCE tickets;
CREATE TABLE nums AS SELECT g FROM generate_series(1, 100000) g;
"""


@pytest.fixture(scope="module")
def shop(postgres: Server) -> str:
    return postgres.create("extract_shop", SHOP)


@pytest.fixture
def pg(
    postgres: Server, shop: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Server]:
    for key, value in postgres.profile(tmp_path, shop).items():
        monkeypatch.setenv(key, value)
    yield postgres


def data(server: Server, tmp_path: Path, seconds: float = 60) -> Data:
    return Data(database="shop", root=tmp_path, seconds=seconds)


def count(server: Server) -> int:
    with server.connect("extract_shop") as conn:
        return int(conn.execute("SELECT count(*) FROM products").fetchone()[0])


def test_a_select_is_written_as_csv_and_as_typed_parquet(pg: Server, tmp_path: Path) -> None:
    query = "SELECT name, price FROM products ORDER BY price DESC"
    got = run_query(data(pg, tmp_path), query, tmp_path / "p.csv")
    assert (got.rows, got.columns) == (3, ["name", "price"])
    assert (tmp_path / "p.csv").read_text() == (
        "name,price\nlamp,149.00\nnotebook,19.90\npencils,4.50\n"
    )
    run_query(data(pg, tmp_path), query, tmp_path / "p.parquet")
    table = pq.read_table(tmp_path / "p.parquet")
    assert str(table.schema.field("price").type) == "decimal128(5, 2)"
    assert [str(v) for v in table.column("price").to_pylist()] == ["149.00", "19.90", "4.50"]


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO products VALUES (9, 'x', 1)",
        "DELETE FROM products",
        "UPDATE products SET price = 0",
        "CREATE TABLE t (a int)",
        "WITH gone AS (DELETE FROM products RETURNING *) SELECT * FROM gone",
        "SELECT nextval('tickets')",
    ],
)
def test_a_write_is_refused_by_the_server(pg: Server, tmp_path: Path, sql: str) -> None:
    # analyst owns the table: only the read-only transaction stands in the way
    with pytest.raises(ExtractError, match="SQL error: cannot execute .* in a read-only transac"):
        run_query(data(pg, tmp_path), sql, tmp_path / "o.csv")
    assert count(pg) == 3
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        ("COMMIT; INSERT INTO products VALUES (9, 'x', 1)", "cannot insert multiple commands"),
        ("SET TRANSACTION READ WRITE", "didn't produce a result"),
        ("SELECT set_config('transaction_read_only', 'off', true)", "must be set before any"),
        ("SELECT * FROM nowhere", 'relation "nowhere" does not exist'),
    ],
)
def test_ways_around_read_only_fail(pg: Server, tmp_path: Path, sql: str, says: str) -> None:
    with pytest.raises(ExtractError, match=says):
        run_query(data(pg, tmp_path), sql, tmp_path / "o.csv")
    assert count(pg) == 3


def test_a_query_over_the_budget_is_cancelled_by_the_server(pg: Server, tmp_path: Path) -> None:
    with pytest.raises(ExtractError, match="ran past the phase's budget of 1 s and was cancelled"):
        run_query(data(pg, tmp_path, seconds=1), "SELECT pg_sleep(120)", tmp_path / "o.csv")
    assert still_running(pg) == 0


def still_running(server: Server) -> int:
    """Queries of praxis's still running on the server (waiting a moment for one that ends)."""
    for _ in range(50):
        with server.connect("postgres") as conn:
            n = int(conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'praxis extract'"
            ).fetchone()[0])  # fmt: skip
        if n == 0:
            return 0
        time.sleep(0.1)
    return n


@pytest.mark.parametrize("cap", ["rows", "bytes"])
def test_a_capped_result_stops_the_query_at_once(
    pg: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cap: str
) -> None:
    if cap == "rows":
        monkeypatch.setattr(sink, "MAX_ROWS", 5_000)
    else:
        monkeypatch.setattr(sink, "MAX_BYTES", 100_000)
    endless = "SELECT a.g, b.g, repeat('x', 50) FROM nums a, nums b"  # 10^10 rows, streamed
    # a budget of 10 minutes, over the test's own timeout: waiting for the rest of the
    # result (instead of cancelling it) fails the test
    says = "the row cap" if cap == "rows" else "the byte cap"
    with pytest.raises(ExtractError, match=says):
        run_query(data(pg, tmp_path, seconds=600), endless, tmp_path / "o.csv")
    assert not (tmp_path / "o.csv").exists()
    assert still_running(pg) == 0


def test_the_password_comes_from_the_profiles_variable_and_is_never_shown(
    pg: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PRAXIS_TEST_PGPASSWORD")
    monkeypatch.setenv("PGPASSWORD", pg.password)  # the driver's own variable: never read
    with pytest.raises(
        SourceUnavailable,
        match=r"the profile's connections.shop.password needs \$\{PRAXIS_TEST_PGPASSWORD\}",
    ):
        run_query(data(pg, tmp_path), "SELECT 1", tmp_path / "o.csv")
    monkeypatch.setenv("PRAXIS_TEST_PGPASSWORD", "wrong-" + pg.password)
    with pytest.raises(SourceUnavailable, match="password authentication failed") as wrong:
        run_query(data(pg, tmp_path), "SELECT 1", tmp_path / "o.csv")
    assert pg.password not in str(wrong.value)
    monkeypatch.setenv("PRAXIS_TEST_PGPASSWORD", pg.password)
    with pytest.raises(ExtractError) as echoed:  # an error that quotes the secret
        run_query(data(pg, tmp_path), f'SELECT * FROM "{pg.password}"', tmp_path / "o.csv")
    assert pg.password not in str(echoed.value)
    assert 'relation "***" does not exist' in str(echoed.value)


def test_no_password_in_the_profile_sends_none_not_pgpassword_nor_pgpass(
    pg: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile = tmp_path / "profile.yaml"
    profile.write_text(
        profile.read_text().replace("    password: '${PRAXIS_TEST_PGPASSWORD}'\n", "")
    )
    monkeypatch.setenv("PGPASSWORD", pg.password)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".pgpass").write_text(f"*:*:*:*:{pg.password}\n")
    (home / ".pgpass").chmod(0o600)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PGPASSFILE", str(home / ".pgpass"))
    with pytest.raises(SourceUnavailable, match="no password supplied"):
        run_query(data(pg, tmp_path), "SELECT 1", tmp_path / "o.csv")


@pytest.mark.parametrize(
    "rights", ["superuser", "pg_read_server_files", "pg_execute_server_program"]
)
def test_a_role_that_may_reach_the_server_host_is_refused_unless_allowed(
    postgres: Server, shop: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rights: str
) -> None:
    if rights == "superuser":
        user = ADMIN
    else:
        user = f"power_{rights}"
        with postgres.connect("postgres") as conn:
            conn.execute(f"DROP ROLE IF EXISTS {user}")
            conn.execute(
                f"CREATE ROLE {user} LOGIN PASSWORD '{postgres.password}' IN ROLE {rights}"
            )
            conn.execute(f"GRANT CONNECT ON DATABASE {shop} TO {user}")
    env = postgres.profile(tmp_path, shop, user=user)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    said = "a superuser" if rights == "superuser" else f"a member of {rights}"
    with pytest.raises(SourceUnavailable) as refused:
        run_query(
            data(postgres, tmp_path), "SELECT pg_read_file('/etc/passwd')", tmp_path / "o.csv"
        )
    assert str(refused.value) == (
        f"database 'shop': role '{user}' is {said}, which may read server files and run "
        "programs even in a read-only transaction; connect as a role without them, or write "
        f"`allow_superuser: true` under connections.shop in {tmp_path}/profile.yaml"
    )
    assert not (tmp_path / "o.csv").exists()
    postgres.profile(tmp_path, shop, user=user, extra="    allow_superuser: true\n")
    got = run_query(data(postgres, tmp_path), "SELECT current_user AS who", tmp_path / "o.csv")
    assert (tmp_path / "o.csv").read_text() == f"who\n{user}\n" and got.rows == 1


def test_a_missing_driver_names_the_extra(
    pg: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(SourceUnavailable, match=r"needs psycopg, which is not installed: .* -m "
                       r"pip install 'praxis\[postgres\]'"):  # fmt: skip
        run_query(data(pg, tmp_path), "SELECT 1", tmp_path / "o.csv")
