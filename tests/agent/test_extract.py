"""SQL extracts on the host: the flow's SQLite file opened read-only, the result as CSV with
a sample, refusals the model can act on."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from praxis.agent import extract
from praxis.agent.extract import ExtractError, SourceUnavailable, extract_to_workspace, run_query


@pytest.fixture
def root(tmp_path: Path) -> Path:
    flow = tmp_path / "flow"
    (flow / "data").mkdir(parents=True)
    conn = sqlite3.connect(flow / "data" / "shop.sqlite")
    conn.execute("create table sales (region text, amount integer)")
    conn.executemany("insert into sales values (?, ?)", [(f"r{i}", i) for i in range(8)])
    conn.commit()
    conn.close()
    return flow


def test_a_select_is_written_as_csv_with_a_five_row_sample(root: Path, tmp_path: Path) -> None:
    dest = tmp_path / "out.csv"
    got = run_query("data/shop.sqlite", root, "select region, amount from sales", dest)
    assert (got.name, got.columns, got.rows) == ("out.csv", ["region", "amount"], 8)
    assert got.sample == [(f"r{i}", i) for i in range(5)]
    assert dest.read_text().splitlines()[:2] == ["region,amount", "r0,0"]
    assert got.summary().startswith("wrote out.csv: 8 rows, columns region, amount\nfirst rows:")


def test_the_database_is_read_only(root: Path, tmp_path: Path) -> None:
    for sql in ("delete from sales", "insert into sales values ('x', 1)"):
        with pytest.raises(ExtractError):
            run_query("data/shop.sqlite", root, sql, tmp_path / "out.csv")
    conn = sqlite3.connect(root / "data" / "shop.sqlite")
    assert conn.execute("select count(*) from sales").fetchone() == (8,)
    conn.close()


def test_bad_sql_and_statements_without_rows_are_refused(root: Path, tmp_path: Path) -> None:
    with pytest.raises(ExtractError, match="SQL error: no such table: nope"):
        run_query("data/shop.sqlite", root, "select * from nope", tmp_path / "o.csv")
    with pytest.raises(ExtractError, match="returned no result set"):
        run_query("data/shop.sqlite", root, "pragma foreign_keys = 1", tmp_path / "o.csv")


@pytest.mark.parametrize(
    ("database", "says"),
    [
        (None, "declares no 'database'"),
        ("data/missing.sqlite", "database 'data/missing.sqlite': "),
        ("../outside.sqlite", "database '../outside.sqlite': "),
    ],
)
def test_a_missing_or_outside_database_is_unavailable(
    root: Path, tmp_path: Path, database: str | None, says: str
) -> None:
    with pytest.raises(SourceUnavailable, match=says):
        run_query(database, root, "select 1", tmp_path / "o.csv")


def test_too_many_rows_are_refused(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(extract, "MAX_ROWS", 5)
    with pytest.raises(ExtractError, match="more than 5 rows; filter or aggregate in SQL"):
        run_query("data/shop.sqlite", root, "select * from sales", tmp_path / "o.csv")


def test_an_extract_is_uploaded_under_its_name_and_the_temp_file_goes(root: Path) -> None:
    seen: list[tuple[Path, str, str]] = []
    got = extract_to_workspace(
        "data/shop.sqlite",
        root,
        "select count(*) as n from sales",
        lambda path, name: seen.append((path, name, path.read_text())),
        "count.csv",
    )
    assert (got.name, got.rows, got.sample) == ("count.csv", 1, [(8,)])
    assert [(name, text) for _, name, text in seen] == [("count.csv", "n\n8\n")]
    assert not seen[0][0].exists()
