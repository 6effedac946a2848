"""RELIABILITY.md item 52: host views of sandbox files are bounded by their decoded size.

A 3 KB Parquet file whose dictionary of one 1 MiB string is referenced by 1,400 rows (1.4 GB
decoded; the view took the server to 2.2 GB), the same under a column named with a dot, and a
300-byte file whose one row holds a list of 50 million values (1.9 GB) are each shown or
refused, naming the cap, within the server's 512 MiB (RSS measured with RUSAGE_CHILDREN in a
child process that builds the run page's table of it, its /rows and the prompt's profile).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ._bounds import SERVER_BUDGET, measured_python

VIEWS = r"""
import json, sys
from pathlib import Path
from praxis import parquet
from praxis.agent.prompt import profile
from praxis.web import parquet_view, views
path = Path(sys.argv[1])
art = views.artifact(path, 1)
page = None if art.table is None else [cells for _, cells in art.table.rows]
try:
    more = [cells for _, cells in parquet_view.rows_of(path, 1000, 500)]
except parquet.NotReadable as exc:
    more = str(exc)
def short(rows):  # each cell's length and its tail (stdout keeps 4,000 characters)
    if isinstance(rows, str):
        return rows
    return [[(len(c), c[-40:]) for c in cells] for cells in rows[:1] + rows[-1:]] + [len(rows)]
print(json.dumps({"problem": art.problem, "page": short(page or []), "more": short(more),
                  "profile": profile(path)[:300]}))
"""

BIG = 1 << 20  # characters of the one string every row refers to


def dictionary_bomb(path: Path, name: str) -> Path:
    """A few KB of Parquet: 1,400 rows each referring to one 1 MiB string of its dictionary."""
    rows = 1400
    column = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array(["x" * BIG]))
    table = pa.table({"id": pa.array(range(rows)), name: column})
    # store_schema=False: a reader learns nothing from an Arrow schema, as with any writer's file
    pq.write_table(table, path, compression="zstd", compression_level=22, store_schema=False)
    return path


@pytest.mark.parametrize("name", ["s", "x.y"])
def test_item52_a_parquet_dictionary_bomb_is_shown_within_the_server_budget(
    tmp_path: Path, name: str
) -> None:
    path = dictionary_bomb(tmp_path / "bomb.parquet", name)
    assert path.stat().st_size < 8 << 10, path.stat().st_size
    done = measured_python(VIEWS, str(path))
    assert done.code == 0, done
    assert done.rss < SERVER_BUDGET, f"the views peaked at {done.rss >> 20} MiB"
    report = json.loads(done.out)
    assert report["problem"] is None, report["problem"]
    tail = f" [... {BIG - 10_000} more characters]"  # clipped, never expanded
    cell = [10_000 + len(tail), ("x" * 40 + tail)[-40:]]
    assert report["page"] == [[[1, "0"], cell], [[2, "99"], cell], 100], report["page"]
    assert report["more"] == [[[4, "1000"], cell], [[4, "1399"], cell], 400], report["more"]
    assert report["profile"].startswith("1,400 rows, 2 columns (Parquet)\n\n"), report


def test_item52_a_row_of_fifty_million_values_is_refused_naming_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "nulls.parquet"
    n = 50_000_000  # one row: a list of 50 million nulls, a few hundred bytes on disk
    offsets = pa.array([0, n, n + 2], pa.int32())
    column = pa.ListArray.from_arrays(offsets, pa.nulls(n + 2, pa.int64()))
    pq.write_table(pa.table({"l": column}), path, compression="zstd", store_schema=False)
    assert path.stat().st_size < 4 << 10, path.stat().st_size
    done = measured_python(VIEWS, str(path))
    assert done.code == 0, done
    assert done.rss < SERVER_BUDGET, f"the views peaked at {done.rss >> 20} MiB"
    report = json.loads(done.out)
    cap = "nulls.parquet's row group 1 is 476 MiB decoded, over the 256 MiB this view reads"
    assert report["problem"].startswith(cap), report
    assert report["profile"] == f"could not be read as a table ({cap}; read it with code)"
