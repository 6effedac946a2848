"""SQL extracts on the host: SQLite and DuckDB files opened read-only, the phase's CSV and
Parquet inputs as DuckDB tables, results as CSV, TSV or Parquet, caps and the timeout."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow.parquet as pq
import pytest

from praxis.agent.extract import (
    Data,
    ExtractError,
    SourceUnavailable,
    describe,
    extract_to_workspace,
    run_query,
)
from praxis.sources import sink


@pytest.fixture
def root(tmp_path: Path) -> Path:
    flow = tmp_path / "flow"
    (flow / "data").mkdir(parents=True)
    conn = sqlite3.connect(flow / "data" / "shop.sqlite")
    conn.execute("create table sales (region text, amount integer)")
    conn.executemany("insert into sales values (?, ?)", [(f"r{i}", i) for i in range(8)])
    conn.commit()
    conn.close()
    con = duckdb.connect(str(flow / "data" / "shop.duckdb"))
    con.execute("create table sales as select 'r' || range as region, range as amount "
                "from range(8)")  # fmt: skip
    con.close()
    return flow


def sqlite(root: Path, database: str = "data/shop.sqlite", **kw: object) -> Data:
    return Data(database=database, root=root, **kw)  # type: ignore[arg-type]


def test_a_select_is_written_as_csv_with_a_five_row_sample(root: Path, tmp_path: Path) -> None:
    dest = tmp_path / "out.csv"
    got = run_query(sqlite(root), "select region, amount from sales", dest)
    assert (got.name, got.columns, got.rows) == ("out.csv", ["region", "amount"], 8)
    assert got.sample == [(f"r{i}", i) for i in range(5)]
    assert dest.read_text().splitlines()[:2] == ["region,amount", "r0,0"]
    assert got.summary().startswith("wrote out.csv: 8 rows, columns region, amount\nfirst rows:")


def test_the_name_chooses_csv_tsv_or_parquet(root: Path, tmp_path: Path) -> None:
    query = "select region, amount from sales where amount < 3"
    run_query(sqlite(root), query, tmp_path / "o.tsv")
    assert (tmp_path / "o.tsv").read_text() == "region\tamount\nr0\t0\nr1\t1\nr2\t2\n"
    run_query(sqlite(root), query, tmp_path / "o.parquet")
    table = pq.read_table(tmp_path / "o.parquet")
    assert table.column_names == ["region", "amount"]
    assert str(table.schema.field("amount").type) == "int64"  # typed, not text
    assert table.to_pydict() == {"region": ["r0", "r1", "r2"], "amount": [0, 1, 2]}
    with pytest.raises(ExtractError, match="written as .csv, .tsv, .parquet by the name's ext"):
        run_query(sqlite(root), query, tmp_path / "o.xlsx")


def test_parquet_unifies_the_types_of_its_batches(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from praxis.sources import connect

    monkeypatch.setattr(connect, "BATCH_ROWS", 2)  # a NULL-only batch, an int one, a float one
    conn = sqlite3.connect(root / "data" / "shop.sqlite")
    conn.execute("create table mixed (x)")
    conn.executemany("insert into mixed values (?)", [(None,), (None,), (1,), (2,), (2.5,)])
    conn.commit()
    conn.close()
    run_query(sqlite(root), "select x from mixed", tmp_path / "m.parquet")
    table = pq.read_table(tmp_path / "m.parquet")
    assert str(table.schema.field("x").type) == "double"
    assert table.column("x").to_pylist() == [None, None, 1.0, 2.0, 2.5]


@pytest.mark.parametrize("database", ["data/shop.sqlite", "sqlite:///data/shop.sqlite"])
def test_sqlite_refuses_writes_itself(root: Path, tmp_path: Path, database: str) -> None:
    for sql in (
        "delete from sales",
        "insert into sales values ('x', 1)",
        "attach database 'other.sqlite' as o",
        "select 1; delete from sales",
    ):
        with pytest.raises(ExtractError, match="SQL error: "):
            run_query(sqlite(root, database), sql, tmp_path / "out.csv")
        assert not (tmp_path / "out.csv").exists()
    conn = sqlite3.connect(root / "data" / "shop.sqlite")
    assert conn.execute("select count(*) from sales").fetchone() == (8,)
    conn.close()
    assert not (root / "data" / "other.sqlite").exists()


def test_bad_sql_and_statements_without_rows_are_refused(root: Path, tmp_path: Path) -> None:
    with pytest.raises(ExtractError, match="SQL error: no such table: nope"):
        run_query(sqlite(root), "select * from nope", tmp_path / "o.csv")
    with pytest.raises(ExtractError, match="returned no result set"):
        run_query(sqlite(root), "pragma foreign_keys = 1", tmp_path / "o.csv")


@pytest.mark.parametrize(
    ("database", "says"),
    [
        (None, "declares no 'database'"),
        ("data/missing.sqlite", "database: 'data/missing.sqlite' does not exist"),
        ("../outside.sqlite", r"names a file outside the flow folder \(../outside.sqlite\)"),
        ("mysql://u@h/x", r"names a host \(h\): a flow names a connection of your profile"),
        ("nowhere", "'nowhere' is not in your profile .*: add `connections: {nowhere: {url: "),
    ],
)
def test_a_missing_or_outside_database_is_unavailable(
    root: Path, tmp_path: Path, database: str | None, says: str
) -> None:
    with pytest.raises(SourceUnavailable, match=says):
        run_query(sqlite(root, database), "select 1", tmp_path / "o.csv")  # type: ignore[arg-type]


def test_the_row_cap_refuses_the_extract_and_writes_nothing(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sink, "MAX_ROWS", 5)
    for name in ("o.csv", "o.parquet"):
        with pytest.raises(ExtractError, match="more than 5 rows .the row cap of one extract"):
            run_query(sqlite(root), "select * from sales", tmp_path / name)
        assert not (tmp_path / name).exists()
    assert run_query(sqlite(root), "select * from sales limit 5", tmp_path / "o.csv").rows == 5


def test_the_byte_cap_refuses_the_extract_and_writes_nothing(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sink, "MAX_BYTES", 4096)
    query = "select printf('%.*c', 3000, 'x') as wide from sales"
    for name in ("o.csv", "o.parquet"):
        with pytest.raises(ExtractError, match="over 0 MiB .the byte cap of one extract"):
            run_query(sqlite(root), query, tmp_path / name)
        assert not (tmp_path / name).exists()


def test_a_query_over_the_budget_is_cancelled(root: Path, tmp_path: Path) -> None:
    endless = (
        "with recursive n(i) as (select 1 union all select i + 1 from n) select count(*) from n"
    )
    with pytest.raises(ExtractError, match="ran past the phase's budget of 0.5 s and was canc"):
        run_query(sqlite(root, seconds=0.5), endless, tmp_path / "o.csv")
    duck = sqlite(root, "duckdb:///data/shop.duckdb", seconds=0.5)
    with pytest.raises(ExtractError, match="ran past the phase's budget of 0.5 s"):
        run_query(duck, "select count(*) from range(10000000000000) a", tmp_path / "o.csv")


def test_a_duckdb_file_is_read_only(root: Path, tmp_path: Path) -> None:
    duck = sqlite(root, "duckdb:///data/shop.duckdb")
    got = run_query(duck, "select sum(amount) as total from sales", tmp_path / "t.csv")
    assert (tmp_path / "t.csv").read_text() == "total\n28\n" and got.rows == 1
    for sql in ("insert into sales values ('x', 1)", "create table t (a int)", "drop table sales"):
        with pytest.raises(ExtractError, match="attached in read-only mode"):
            run_query(duck, sql, tmp_path / "o.csv")
    con = duckdb.connect(str(root / "data" / "shop.duckdb"), read_only=True)
    assert con.execute("select count(*) from sales").fetchone() == (8,)
    con.close()


def files(root: Path, tmp_path: Path, database: str | None = None) -> tuple[Data, list[str]]:
    """A phase whose working inputs are a CSV and a Parquet file, fetched from a workspace."""
    ws = tmp_path / "ws"
    (ws / "data").mkdir(parents=True)
    pd.DataFrame({"region": ["n", "s", "n"], "amount": [1.5, 2.0, 3.0]}).to_parquet(
        ws / "sales.parquet"
    )
    (ws / "data" / "costs.csv").write_text("region,cost\nn,1\ns,4\n")
    (tmp_path / "secret.csv").write_text("secret\nhost file\n")
    fetched: list[str] = []

    def fetch(name: str, dest: Path) -> None:
        fetched.append(name)
        shutil.copyfile(ws / name, dest)

    return Data(database, root, ("sales.parquet", "data/costs.csv", "notes.md"), fetch), fetched


def test_the_phases_files_are_tables_by_their_names(root: Path, tmp_path: Path) -> None:
    data, fetched = files(root, tmp_path)
    query = (
        "select s.region, sum(amount) as amount, max(cost) as cost "
        "from 'sales.parquet' s join \"data/costs.csv\" c using (region) "
        "group by 1 order by 1"
    )
    run_query(data, query, tmp_path / "j.csv")
    assert (tmp_path / "j.csv").read_text() == "region,amount,cost\nn,4.5,1\ns,2.0,4\n"
    assert fetched == ["sales.parquet", "data/costs.csv"]
    assert "'sales.parquet', 'data/costs.csv'" in describe(data)


def test_the_files_are_the_only_files_a_query_reads_or_writes(root: Path, tmp_path: Path) -> None:
    data, _ = files(root, tmp_path)
    for sql, says in [
        (f"select * from '{tmp_path / 'secret.csv'}'", "file system operations are disabled"),
        ("select * from read_csv('/etc/passwd')", "file system operations are disabled"),
        (f"copy (select 1) to '{tmp_path / 'out.csv'}'", "file system operations are disabled"),
        ("set enable_external_access = true", "the configuration has been locked"),
        ("create table t as select 1", "read-only mode"),
        ("install httpfs", "disabled"),
    ]:
        with pytest.raises(ExtractError, match=says):
            run_query(data, sql, tmp_path / "o.csv")
    assert not (tmp_path / "out.csv").exists()


def test_a_duckdb_database_sees_the_files_too(root: Path, tmp_path: Path) -> None:
    data, _ = files(root, tmp_path, "duckdb:///data/shop.duckdb")
    query = "select count(*) as n from sales, 'sales.parquet'"
    run_query(data, query, tmp_path / "n.csv")
    assert (tmp_path / "n.csv").read_text() == "n\n24\n"


def test_sqlite_does_not_offer_the_files(root: Path, tmp_path: Path) -> None:
    data, fetched = files(root, tmp_path, "data/shop.sqlite")
    with pytest.raises(ExtractError, match="no such table: sales.parquet"):
        run_query(data, "select * from 'sales.parquet'", tmp_path / "o.csv")
    assert fetched == []


def test_an_extract_is_uploaded_under_its_name_and_the_temp_file_goes(root: Path) -> None:
    seen: list[tuple[Path, str, str]] = []
    got = extract_to_workspace(
        sqlite(root),
        "select count(*) as n from sales",
        lambda path, name: seen.append((path, name, path.read_text())),
        "count.csv",
    )
    assert (got.name, got.rows, got.sample) == ("count.csv", 1, [(8,)])
    assert [(name, text) for _, name, text in seen] == [("count.csv", "n\n8\n")]
    assert not seen[0][0].exists()


def test_a_root_only_file_outside_the_flow_never_reaches_an_output(
    root: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.sqlite"  # RELIABILITY 47
    conn = sqlite3.connect(secret)
    conn.execute("create table sales (region text, amount integer)")
    conn.execute("insert into sales values ('root-only-secret', 1)")
    conn.commit()
    conn.close()
    secret.chmod(0o600)
    (root / "linked").symlink_to(tmp_path)
    (root / "data" / "link.sqlite").symlink_to(secret)
    for database in (
        f"sqlite:///{secret}",
        str(secret),
        f"duckdb:///{secret}",
        "../secret.sqlite",
        "linked/secret.sqlite",
        "data/link.sqlite",
    ):
        with pytest.raises(SourceUnavailable, match="flow.yaml: database: ") as refused:
            run_query(sqlite(root, database), "select * from sales", tmp_path / "o.csv")
        assert "outside the flow folder" in str(refused.value) or "symbolic link" in str(
            refused.value
        )
        assert not (tmp_path / "o.csv").exists(), database


def test_a_profile_connection_may_name_a_host_file(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    person = tmp_path / "person.duckdb"  # the person named it: outside any flow, absolute
    shutil.copyfile(root / "data" / "shop.duckdb", person)
    (tmp_path / "profile.yaml").write_text(f"connections:\n  mine: {{url: 'duckdb:///{person}'}}\n")
    monkeypatch.setenv("PRAXIS_PROFILE", str(tmp_path / "profile.yaml"))
    got = run_query(sqlite(root, "mine"), "select count(*) as n from sales", tmp_path / "n.csv")
    assert (tmp_path / "n.csv").read_text() == "n\n8\n" and got.rows == 1
    assert "connection 'mine'" in describe(sqlite(root, "mine"))
