"""Query phases and publishing against a real PostgreSQL server (tests/pg_server.py): a read
role (``analyst``, held read-only by praxis) feeds a query phase with a bound parameter, a
write role (``loader``, marked ``write: true`` in the profile) takes the approved output in
one transaction; the table is unchanged by a refused, mismatched or killed publish."""

from __future__ import annotations

import os
import signal
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from praxis.errors import Refused
from praxis.flows.engine.runner import PublishIncomplete
from praxis.flows.store.handle import RunHandle
from praxis.service import acting
from praxis.service.reading import load

from ..pg_server import ADMIN, Server
from ..waiting import GIVE_UP

SHOP = """
CREATE TABLE orders (id integer PRIMARY KEY, region text NOT NULL, day date, amount numeric(8, 2));
INSERT INTO orders VALUES (1, 'north', '2024-01-01', 10.50), (2, 'south', '2024-02-01', 20.00),
  (3, 'north', '2024-03-01', 7.25), (4, 'east', '2024-03-02', 5.00);
CREATE SCHEMA analytics;
CREATE TABLE analytics.summary (region text PRIMARY KEY, total numeric(10, 2), orders integer);
INSERT INTO analytics.summary VALUES ('west', 1.00, 1);
CREATE TABLE analytics.narrow (region text PRIMARY KEY, total numeric(10, 2));
"""
LOADER_PASSWORD = "loader-" + os.urandom(6).hex()

QUERY = """\
-- orders since :start, but not those of :skip (a value, never SQL)
SELECT id, region, day, amount FROM orders
WHERE day >= CAST(:start AS date) AND region <> :skip
ORDER BY id
"""
SUMMARY = """\
import pandas as pd
df = pd.read_parquet("orders.parquet")
out = df.groupby("region", as_index=False).agg(total=("amount", "sum"), orders=("id", "count"))
out.to_csv("summary.csv", index=False)
"""


def flow_yaml(connection: str, table: str, mode: str) -> str:
    key = ", key: [region]" if mode == "upsert" else ""
    return textwrap.dedent(f"""\
        flow: pgreport
        sandbox: {{backend: local}}
        database: warehouse
        params: {{start: "2024-02-01", skip: "east"}}
        phases:
          - {{id: orders, kind: query, query: orders.sql, outputs: [orders.parquet]}}
          - id: summary
            kind: script
            script: summary.py
            inputs: {{working: [orders.parquet]}}
            outputs: [summary.csv]
            review: required
        publish:
          - output: summary.csv
            to: {{connection: {connection}, table: {table}, mode: {mode}{key}}}
        """)


@pytest.fixture(scope="module")
def shop(postgres: Server) -> str:
    name = postgres.create("publish_shop", SHOP)
    with postgres.connect(name) as conn:
        conn.execute("DROP ROLE IF EXISTS loader")
        conn.execute(f"CREATE ROLE loader LOGIN PASSWORD '{LOADER_PASSWORD}'")
        conn.execute("GRANT USAGE ON SCHEMA analytics TO loader")
        conn.execute("GRANT SELECT, INSERT, DELETE ON ALL TABLES IN SCHEMA analytics TO loader")
    return name


@pytest.fixture
def pg(
    postgres: Server, shop: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, allow_local: None
) -> Iterator[Server]:
    """A profile: ``warehouse`` (analyst, read), ``sales_write`` (loader, write: true),
    ``sales`` (loader, not marked for writing) and ``sales_admin`` (a superuser, write: true);
    the summary table as the module made it."""
    base = f"postgresql+psycopg://{{}}@/{shop}?host={postgres.folder}"
    profile = tmp_path / "profile.yaml"
    profile.write_text(
        textwrap.dedent(f"""\
        connections:
          warehouse: {{url: '{base.format("analyst")}', password: '${{PG_READ}}'}}
          sales_write: {{url: '{base.format("loader")}', password: '${{PG_WRITE}}', write: true}}
          sales: {{url: '{base.format("loader")}', password: '${{PG_WRITE}}'}}
          sales_admin: {{url: '{base.format(ADMIN)}', password: '${{PG_ADMIN}}', write: true}}
        """)
    )
    monkeypatch.setenv("PG_ADMIN", postgres.admin_password)
    monkeypatch.setenv("PRAXIS_PROFILE", str(profile))
    monkeypatch.setenv("PG_READ", postgres.password)
    monkeypatch.setenv("PG_WRITE", LOADER_PASSWORD)
    with postgres.connect(shop) as conn:
        conn.execute("DELETE FROM analytics.summary")
        conn.execute("INSERT INTO analytics.summary VALUES ('west', 1.00, 1)")
    yield postgres


def make_flow(root: Path, connection: str = "sales_write", table: str = "analytics.summary",
              mode: str = "upsert") -> Path:  # fmt: skip
    root.mkdir(parents=True, exist_ok=True)
    (root / "flow.yaml").write_text(flow_yaml(connection, table, mode))
    (root / "orders.sql").write_text(QUERY)
    (root / "summary.py").write_text(SUMMARY)
    return root


def table(server: Server, name: str = "analytics.summary") -> tuple[int, str]:
    """The table's row count and a checksum of its rows."""
    with server.connect("publish_shop") as conn:
        row = conn.execute(
            f"SELECT count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) "
            f"FROM {name} t"
        ).fetchone()
    return int(row[0]), str(row[1])


def rows(server: Server, name: str = "analytics.summary") -> list[tuple[object, ...]]:
    with server.connect("publish_shop") as conn:
        return [tuple(map(str, r)) for r in conn.execute(f"SELECT * FROM {name} ORDER BY 1")]


def approved(root: Path, params: dict[str, str] | None = None) -> str:
    """A run of the flow at ``root``, its Gate approved by a person, advanced to its end."""
    state = acting.run(root, params=params)
    assert (state.status, state.waiting) == ("paused", "gate"), state.error
    acting.approve(root, state.run, gate="summary", actor="person")
    assert acting.advance(root, state.run).status == "done"
    return state.run


def events(root: Path, run: str, kind: str) -> list[object]:
    return [e for e in RunHandle.open(load(root), run).log.read() if e.kind == kind]


def test_a_query_phase_binds_its_parameter_and_feeds_a_script(pg: Server, tmp_path: Path) -> None:
    root = make_flow(tmp_path / "f")
    state = acting.run(root)
    assert state.waiting == "gate", state.error
    out = (root / "runs" / state.run / "output" / "summary.csv").read_text()
    assert out == "region,total,orders\nnorth,7.25,1\nsouth,20.00,1\n"  # since 2024-02-01, no east


@pytest.mark.parametrize(
    "value", ["east' OR '1'='1", "east'; DROP TABLE orders; --", "east\\' OR 1=1 --", "%s %(x)s"]
)
def test_an_injection_through_a_parameter_stays_a_value(
    pg: Server, tmp_path: Path, value: str
) -> None:
    root = make_flow(tmp_path / "f")
    state = acting.run(root, params={"skip": value, "start": "2000-01-01"})
    assert state.waiting == "gate", state.error
    out = (root / "runs" / state.run / "output" / "summary.csv").read_text()
    # no region is named so: every order counts, and the orders table is still there
    assert out == "region,total,orders\neast,5.00,1\nnorth,17.75,2\nsouth,20.00,1\n"
    assert table(pg, "orders")[0] == 4


def test_publish_upserts_once_and_the_same_digest_again_changes_nothing(
    pg: Server, tmp_path: Path
) -> None:
    root = make_flow(tmp_path / "f")
    run = approved(root)
    [out] = acting.publish(root, run)
    assert (out.status, out.rows) == ("published", 2)
    assert rows(pg) == [("north", "7.25", "1"), ("south", "20.00", "1"), ("west", "1.00", "1")]
    before = table(pg)
    [again] = acting.publish(root, run)
    assert again.status == "already"
    assert table(pg) == before
    [ev] = events(root, run, "published")
    assert (ev.rows, ev.table, ev.sha256) == (2, "analytics.summary", out.sha256)  # type: ignore[attr-defined]
    receipt = acting_receipt(root, run)
    assert [(p["status"], p["rows"]) for p in receipt["published"]] == [("published", 2)]


def acting_receipt(root: Path, run: str) -> dict[str, object]:
    from praxis.flows.report.receipt import receipt

    handle = RunHandle.open(load(root), run)
    return receipt(handle.state, handle.log.read(), [])


def test_publish_replace_makes_the_table_the_output(pg: Server, tmp_path: Path) -> None:
    root = make_flow(tmp_path / "f", mode="replace")
    run = approved(root)
    [out] = acting.publish(root, run)
    assert out.rows == 2
    assert rows(pg) == [("north", "7.25", "1"), ("south", "20.00", "1")]
    before = table(pg)
    assert acting.publish(root, run)[0].status == "already"
    assert table(pg) == before


def test_a_column_mismatch_is_refused_before_anything_is_written(
    pg: Server, tmp_path: Path
) -> None:
    root = make_flow(tmp_path / "f", table="analytics.narrow", mode="replace")
    with pg.connect("publish_shop") as conn:
        conn.execute("DELETE FROM analytics.narrow")
        conn.execute("INSERT INTO analytics.narrow VALUES ('west', 3.00)")
    before = table(pg, "analytics.narrow")
    run = approved(root)
    with pytest.raises(PublishIncomplete, match="the table has no column orders"):
        acting.publish(root, run)
    assert table(pg, "analytics.narrow") == before
    [failed] = events(root, run, "publish_failed")
    assert "nothing was written" in failed.error  # type: ignore[attr-defined]
    assert events(root, run, "published") == []


def test_a_publish_killed_mid_transaction_leaves_the_table_unchanged(
    pg: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_flow(tmp_path / "f", mode="replace")
    run = approved(root)
    before = table(pg)
    marker = tmp_path / "paused"
    monkeypatch.setenv("PRAXIS_TEST_PUBLISH_PAUSE", str(marker))
    caught: list[BaseException] = []

    def publish() -> None:
        try:
            acting.publish(root, run)
        except BaseException as exc:  # noqa: BLE001 (told to the test)
            caught.append(exc)

    thread = threading.Thread(target=publish)
    thread.start()
    deadline = time.monotonic() + GIVE_UP
    while not marker.exists() or not marker.read_text():
        assert thread.is_alive() and time.monotonic() < deadline, caught
        time.sleep(0.05)
    # the rows are deleted and the output's inserted, uncommitted: the worker dies here
    os.kill(int(marker.read_text()), signal.SIGKILL)
    thread.join(GIVE_UP)
    assert len(caught) == 1 and isinstance(caught[0], PublishIncomplete), caught
    assert "publish worker ended early" in str(caught[0])
    assert table(pg) == before
    monkeypatch.delenv("PRAXIS_TEST_PUBLISH_PAUSE")
    [out] = acting.publish(root, run)  # praxis publish resumes it
    assert (out.status, out.rows) == ("published", 2)


def test_publish_is_refused_before_a_person_approved(pg: Server, tmp_path: Path) -> None:
    root = make_flow(tmp_path / "f")
    state = acting.run(root)
    before = table(pg)
    with pytest.raises(Refused, match="published once every phase is done"):
        acting.publish(root, state.run)
    assert table(pg) == before


def test_publish_is_refused_for_a_connection_not_marked_write(pg: Server, tmp_path: Path) -> None:
    root = make_flow(tmp_path / "f", connection="sales")
    run = approved(root)
    before = table(pg)
    with pytest.raises(PublishIncomplete, match=r"not marked for writing: add `write: true`"):
        acting.publish(root, run)
    assert table(pg) == before


def test_publish_as_a_superuser_is_refused_unless_the_profile_allows_it(
    pg: Server, tmp_path: Path
) -> None:
    root = make_flow(tmp_path / "f", connection="sales_admin")
    run = approved(root)
    before = table(pg)
    with pytest.raises(PublishIncomplete, match="is a superuser"):
        acting.publish(root, run)
    assert table(pg) == before
