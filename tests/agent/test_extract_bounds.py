"""RELIABILITY 48: an extract's result is bounded on the host as it is fetched.

The rows are fetched by a worker process whose address space is capped (praxis.sources.fetch):
whatever one row or value holds, the worker stays under the extract's byte cap plus 100 MiB
and the runner holds no row at all; the extract fails naming the cap and writes nothing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import duckdb
import pytest

from praxis.agent.extract import Data, ExtractError, run_query
from praxis.sources import sink

MiB = 1 << 20
BOUND = sink.MAX_BYTES + 100 * MiB


def high_water() -> int:
    """This process's peak resident memory so far (VmHWM), bytes."""
    with open("/proc/self/status", encoding="ascii") as fh:
        return next(int(ln.split()[1]) * 1024 for ln in fh if ln.startswith("VmHWM:"))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    flow = tmp_path / "flow"
    (flow / "data").mkdir(parents=True)
    sqlite3.connect(flow / "data" / "shop.sqlite").close()
    duckdb.connect(str(flow / "data" / "shop.duckdb")).close()
    return flow


FIVE = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) "


@pytest.mark.parametrize(
    ("database", "query", "cap"),
    [
        # the extract: five 300 MB values (over SQLite's length limit, set at the cap)
        ("data/shop.sqlite", FIVE + "SELECT zeroblob(300000000) AS b FROM n", "memory cap"),
        # under that limit: five 200 MB values, each far more once written as text
        ("data/shop.sqlite", FIVE + "SELECT zeroblob(200000000) AS b FROM n", "memory cap"),
        # one row of twelve 100 MB values
        ("data/shop.sqlite", "SELECT " + ", ".join(f"zeroblob(100000000) AS c{i}"
                                                    for i in range(12)), "memory cap"),
        ("data/shop.duckdb", "SELECT repeat('x', 1000000000) AS s", "memory cap"),
        ("data/shop.duckdb", "SELECT repeat('x', 100000000) AS s FROM range(5)",
         "(memory|byte) cap"),
    ],
)  # fmt: skip
def test_a_huge_row_fails_naming_the_cap_within_the_bound(
    root: Path, tmp_path: Path, database: str, query: str, cap: str
) -> None:
    before = high_water()
    for name in ("o.csv", "o.parquet"):
        with pytest.raises(ExtractError, match=f"the {cap} of one extract") as failed:
            run_query(Data(database=database, root=root, seconds=300), query, tmp_path / name)
        assert 0 < failed.value.peak_rss < BOUND, (name, failed.value.peak_rss // MiB)
        assert not (tmp_path / name).exists()
    assert high_water() - before < 100 * MiB  # the runner held no row


@pytest.mark.parametrize(
    ("database", "query", "rows"),
    [
        # SQLite hands rows over a few at a time: 120 MB of text in 120 rows
        ("data/shop.sqlite", FIVE.replace("i < 5", "i < 120") + "SELECT printf('%.*c', "
                             "1000000, 'x') AS s FROM n", 120),
        # DuckDB builds a chunk of up to 2,048 rows at once, twice over (its copy, Python's)
        ("data/shop.duckdb", "SELECT repeat('x', 1000000) AS s FROM range(60)", 60),
    ],
)  # fmt: skip
def test_a_wide_result_within_the_caps_is_written_whole(
    root: Path, tmp_path: Path, database: str, query: str, rows: int
) -> None:
    got = run_query(Data(database=database, root=root), query, tmp_path / "o.csv")
    assert got.rows == rows and 0 < got.peak_rss < BOUND
    assert (tmp_path / "o.csv").stat().st_size == rows * 1_000_001 + len("s\n")
