"""praxis.parquet: a Parquet file's shape from its footer, rows a page at a time, within caps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from praxis import parquet


@pytest.fixture
def small(tmp_path: Path) -> Path:
    path = tmp_path / "t.parquet"
    table = pa.table({"id": list(range(10)), "name": [None if i % 4 == 0 else f"n{i}"
                                                       for i in range(10)]})  # fmt: skip
    pq.write_table(table, path, row_group_size=4)  # groups of 4, 4, 2
    return path


def test_the_shape_comes_from_the_footer(small: Path) -> None:
    found = parquet.shape(small)
    assert (found.rows, found.groups) == (10, [4, 4, 2])
    assert found.columns == [("id", "int64"), ("name", "string")]
    assert found.nulls == [0, 3]


def test_rows_are_read_across_row_groups(small: Path) -> None:
    assert parquet.rows(small, 3, 3) == [["3", "n3"], ["4", ""], ["5", "n5"]]
    assert parquet.rows(small, 9, 5) == [["9", "n9"]]
    assert parquet.rows(small, 20, 5) == []


def test_the_profile_reads_like_the_pandas_one(small: Path) -> None:
    text = parquet.profile(small, 2)
    assert text.startswith("10 rows, 2 columns (Parquet)\n\n| column | dtype | nulls |")
    assert "| name | string | 3 |" in text
    assert text.endswith("First 2 rows:\n```\nid,name\n0,\n1,n1\n```")


def test_a_page_deep_in_one_row_group_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "one.parquet"
    pq.write_table(pa.table({"x": list(range(5000))}), path)  # one row group
    monkeypatch.setattr(parquet, "MAX_SKIP", 1000)
    assert parquet.rows(path, 1000, 2) == [["1000"], ["1001"]]
    with pytest.raises(parquet.NotReadable, match="lies 1,001 rows into a row group of 5,000"):
        parquet.rows(path, 1001, 2)


@pytest.mark.parametrize("cap", ["MAX_FOOTER", "MAX_GROUP_BYTES"])
def test_a_large_footer_or_row_group_is_refused(
    small: Path, monkeypatch: pytest.MonkeyPatch, cap: str
) -> None:
    monkeypatch.setattr(parquet, cap, 10)
    with pytest.raises(parquet.NotReadable, match="over the 0 MiB this view reads"):
        parquet.rows(small, 0, 5)


def test_not_parquet_and_links_are_refused(small: Path, tmp_path: Path) -> None:
    (tmp_path / "fake.parquet").write_text("a,b\n1,2\n3,4\n5,6\n")
    with pytest.raises(parquet.NotReadable, match="is not a Parquet file"):
        parquet.shape(tmp_path / "fake.parquet")
    (tmp_path / "link.parquet").symlink_to(small)
    with pytest.raises(parquet.NotReadable, match="cannot be opened"):
        parquet.shape(tmp_path / "link.parquet")
    assert "could not be read as a table" in parquet.profile(tmp_path / "fake.parquet")


PROBE = """
import json, sys
from pathlib import Path
from praxis import parquet
path = Path(sys.argv[1])
text = parquet.profile(path)
last = parquet.rows(path, 19_999_900, 100)
# VmHWM: this process's peak since exec (ru_maxrss may carry the parent's over a fork)
hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"rss": int(hwm.split()[1]) // 1024,
                  "head": text.splitlines()[0], "last": last[-1]}))
"""


def test_a_file_of_millions_of_rows_costs_a_few_batches(tmp_path: Path) -> None:
    path = tmp_path / "big.parquet"
    con = duckdb.connect(config={"threads": 1})
    con.execute("SET enable_progress_bar = false")
    con.execute(f"COPY (SELECT range AS id, 'same' AS s FROM range(20000000)) TO '{path}'")
    con.close()
    done = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True,
                          text=True, timeout=240, env={**os.environ})  # fmt: skip
    report = json.loads(done.stdout)
    assert report["head"] == "20,000,000 rows, 2 columns (Parquet)"
    assert report["last"] == ["19999999", "same"]
    assert report["rss"] <= 256, report  # MiB (78 measured here)


@pytest.mark.parametrize("name", ["x.y", "id"])
def test_every_shown_column_counts_toward_the_cap_whatever_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    path = tmp_path / "dotted.parquet"
    table = pa.table([pa.array(range(100)), pa.array(["y" * 2000] * 100)], names=["id", name])
    pq.write_table(table, path, use_dictionary=False, store_schema=False)  # 200 KB unpacked
    monkeypatch.setattr(parquet, "MAX_GROUP_BYTES", 100_000)
    with pytest.raises(parquet.NotReadable, match="row group 1 is 0 MiB decoded, over the 0 MiB"):
        parquet.rows(path, 0, 5)
    monkeypatch.setattr(parquet, "MAX_GROUP_BYTES", 300_000)
    assert parquet.rows(path, 99, 5) == [["99", "y" * 2000]]
    assert parquet.shape(path).columns == [("id", "int64"), (name, "string")]


def test_nested_cells_read_as_python_writes_them_and_are_clipped(tmp_path: Path) -> None:
    path = tmp_path / "nested.parquet"
    table = pa.table({
        "l": [["a", "b"], None, ["c"], ["z" * 30] * 5000],
        "st": [{"a": "x", "b": 1}, None, {"a": None, "b": 2}, None],
        "m": pa.array([[("k", "v")], [], None, None], pa.map_(pa.string(), pa.string())),
        "b": [b"\x00ab", None, b"z", None],
    })  # fmt: skip
    pq.write_table(table, path)
    got = parquet.rows(path, 0, 4)
    assert got[:3] == [
        ["['a', 'b']", "{'a': 'x', 'b': 1}", "[('k', 'v')]", "b'\\x00ab'"],
        ["", "", "[]", ""],
        ["['c']", "{'a': None, 'b': 2}", "", "b'z'"],
    ]
    long = got[3][0]
    assert long.startswith("['" + "z" * 30 + "', '") and long.endswith(" [...]")
    assert len(long) == 10_000 + len(" [...]")
    assert parquet.shape(path).nulls == [None, None, None, 2]


def test_the_text_of_one_read_is_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "wide.parquet"
    pq.write_table(pa.table({f"c{i}": ["v" * 100] * 10 for i in range(10)}), path)
    monkeypatch.setattr(parquet, "MAX_TEXT", 5 * 2**20)
    assert len(parquet.rows(path, 0, 10)) == 10
    monkeypatch.setattr(parquet, "MAX_TEXT", 5_000)
    with pytest.raises(parquet.NotReadable, match="hold more than 0 MiB of text, the most this"):
        parquet.rows(path, 0, 10)
