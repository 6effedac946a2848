"""A Parquet output on the reviewer's pages: a read-only table, paged from its row groups."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from praxis.web import validate, views

from .conftest import Served


def write(path: Path, rows: int = 250) -> Path:
    table = pa.table({"id": list(range(rows)), "region": [f"r{i % 3}" for i in range(rows)]})
    pq.write_table(table, path, row_group_size=64)
    return path


def test_a_parquet_artifact_is_a_read_only_table(tmp_path: Path) -> None:
    art = views.artifact(write(tmp_path / "top.parquet"), 2)
    assert (art.kind, art.readonly, art.problem, art.text) == ("table", True, None, None)
    assert art.table is not None
    assert (art.table.total, art.table.page, art.table.pages) == (250, 2, 3)
    assert art.table.header == ["id", "region"]
    assert art.table.rows[0] == (100, ["100", "r1"])
    assert art.table.dialect.startswith("Parquet, shown read-only")


def test_a_text_save_of_parquet_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "top.parquet")
    try:
        validate.text_save(path, "id,region\n1,x\n")
    except validate.tables.BadEdit as exc:
        assert "is Parquet: it is read-only here" in str(exc)
    else:
        raise AssertionError("saved")


def test_the_pages_show_parquet_rows_and_offer_no_edit(served: Served) -> None:
    served.login()
    output = served.gated.flow / "runs" / served.gated.run_id / "output"
    write(output / "extra.parquet")
    q = f"flow={served.gated.ref}&run={served.gated.run_id}"
    page = served.client.get(f"/view?{q}&path=output/extra.parquet&page=3")
    assert page.status_code == 200
    assert "250 rows" in page.text and "page 3 of 3" in page.text
    assert '<span class="cell">249</span>' in page.text
    rows = served.client.get(f"/rows?{q}&name=extra.parquet&start=200&n=3").json()
    assert rows["rows"] == [[200, ["200", "r2"]], [201, ["201", "r0"]], [202, ["202", "r1"]]]
    assert rows["total"] == 250
    assert len(rows["clipped"]) == 6  # every cell shown as text, none as an input
