"""RELIABILITY.md item 40: host reads of sandbox-written files are bounded.

On docker, a phase writes declared tables built to exhaust the host: a one-line CSV of 200
MB of short fields and a CSV of 10^6 columns (output checks), a 30 MB one-line CSV at a Gate
(the CLI preview, the run page, its file page and /rows). The runner refuses or previews
them within 256 MiB and the server within 512 MiB (RSS measured with RUSAGE_CHILDREN in a
child process). Profiles for prompts (the agent's and the chat's `profile`) of a 1 MB
one-line CSV, a long CSV and a small Parquet file of 4*10^8 rows stay within 256 MiB and
read no more rows than their budget. Each bound is also checked on a table just past it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from praxis.agent import tableprofile
from praxis.flows.engine import checks
from praxis.flows.store.csvread import MAX_FIELDS, MAX_LINE, MAX_RECORD

from ..labels import left_after
from ._bounds import (
    BUDGET,
    SERVER_BUDGET,
    flow,
    measured,
    measured_python,
    phase,
    remove_containers,
)
from ._flows import begin, state_of

WIDE = r"""
with open("clean.csv", "w") as fh:  # one line, 200 MB of two-byte fields
    piece = "a," * (1 << 19)
    for _ in range(200):
        fh.write(piece)
    fh.write("a\n")
with open("wide.csv", "w") as fh:  # 10^6 columns, two rows
    for _ in range(2):
        fh.write(",".join(f"c{n}" for n in range(1_000_000)) + "\n")
"""


@pytest.mark.docker
def test_item40_a_200_mb_one_line_csv_and_a_million_columns_are_refused_in_budget(
    docker_image: str, tmp_path: Path
) -> None:
    spec = {"columns": ["a"], "not_null": ["a"]}
    root = flow(
        tmp_path / "flow",
        docker_image,
        [
            phase(
                "p",
                "wide.py",
                ["clean.csv", "wide.csv"],
                checks={"clean.csv": spec, "wide.csv": {"min_rows": 1}},
            )
        ],
        {"wide.py": WIDE},
    )
    run = begin(root)
    try:
        res = measured("advance", str(root))
        assert "Traceback" not in res.err, res
        assert res.rss < BUDGET, f"praxis advance peaked at {res.rss >> 20} MiB"
        p = state_of(run).phase("p")
        assert res.code == 1 and p.status == "failed", res
        line = f"line 1 has more than {MAX_LINE:,} characters (the most read of one line)"
        assert str(p.error) == (  # every failing check at once (issue 27), each bounded
            f"2 checks fail: (1) clean.csv: check parse failed: clean.csv: {line}; "
            f"(2) wide.csv: check parse failed: wide.csv: {line}"
        ), p.error
        assert left_after(run.name) == []
    finally:
        remove_containers(run)


def test_item40_each_bound_refuses_a_table_just_past_it() -> None:
    spec = {"min_rows": 1}
    fields = ",".join(["x"] * (MAX_FIELDS + 1)).encode() + b"\n"
    (failure,) = checks.evaluate("t.csv", spec, fields)
    assert failure.message == (
        f"t.csv: line 1 has more than {MAX_FIELDS:,} fields (the most read of one record)"
    )
    field = b'"' + b"y\n" * 60_000 + b'"'  # each within csv's field limit, on many lines
    quoted = b"a\n" + b",".join([field] * (MAX_RECORD // len(field) + 1)) + b"\n"
    (failure,) = checks.evaluate("t.csv", spec, quoted)
    assert f"has more than {MAX_RECORD:,} characters (the most read of one record)" in (
        failure.message
    ), failure.message
    ok = b"a,b\n" + b"1,2\n" * 1000 + b'"' + b"z" * 100_000 + b'",3\n'
    assert checks.evaluate("t.csv", {"min_rows": 1001, "not_null": ["a"]}, ok) == []


def test_item40_checks_stream_a_table_from_its_file(tmp_path: Path) -> None:
    """The same failures as before the stream: unique, not_null, values, dtype, rows."""
    table = tmp_path / "t.csv"
    rows = ["id,kind,n"] + [f"{i % 7},{'ab'[i % 2]},{i if i % 5 else 'x'}" for i in range(40)]
    table.write_text("\n".join(rows) + "\n")
    spec = {
        "unique": ["id"],
        "values": {"kind": ["a"]},
        "dtype": {"n": "integer"},
        "not_null": ["kind"],
        "max_rows": 10,
    }
    found = [str(f) for f in checks.evaluate("t.csv", spec, table)]

    def rows(*numbers: int) -> str:
        return ", ".join(f"{n} (line {n + 1})" for n in numbers)

    assert found == [
        "t.csv: check unique failed on column 'id': 33 row(s) with repeated values; "
        f"data rows {rows(8, 9, 10, 11, 12)} (of 33)",
        "t.csv: check values failed on column 'kind': 20 row(s) with values not in ['a']; "
        f"data rows {rows(2, 4, 6, 8, 10)} (of 20)",
        "t.csv: check dtype failed on column 'n': 8 row(s) with values that are not integer; "
        f"data rows {rows(1, 6, 11, 16, 21)} (of 8)",
        "t.csv: check max_rows failed: 40 rows, at most 10",
    ]
    quoted = tmp_path / "q.csv"  # a quoted field over two lines: rows keep their own line
    quoted.write_text('k,v\n"a\nb",1\nx,\n')
    (failure,) = checks.evaluate("q.csv", {"not_null": ["v"]}, quoted)
    assert str(failure).endswith("; data row 2 (line 4)"), failure


LINE = r"""
with open("out.csv", "w") as fh:  # 30 MB, one line of short fields
    piece = "b," * (1 << 19)
    for _ in range(30):
        fh.write(piece)
    fh.write("b\n")
"""

# Serves the flows below argv[1] in this process and reads the run page and the file's page
# as a browser would; prints the bytes of each page.
PAGES = r"""
import sys
from pathlib import Path
from starlette.testclient import TestClient
from praxis.web.app import create_app
from praxis.web.security import Guard
root, ref, run = sys.argv[1:]
guard = Guard()
with TestClient(create_app(Path(root), guard=guard), base_url="http://127.0.0.1:8765") as client:
    assert client.get(f"/?token={guard.token}", follow_redirects=False).status_code == 303
    page = client.get(f"/run?flow={ref}&run={run}")
    view = client.get(f"/view?flow={ref}&run={run}&path=output/out.csv")
    rows = client.get(f"/rows?flow={ref}&run={run}&name=out.csv&start=0&n=100")
    print(page.status_code, len(page.content), view.status_code, len(view.content),
          rows.status_code, len(rows.content))
"""


@pytest.mark.docker
def test_item40_a_30_mb_one_line_csv_at_a_gate_is_previewed_and_paged_in_budget(
    docker_image: str, tmp_path: Path
) -> None:
    root = flow(
        tmp_path / "served" / "line",
        docker_image,
        [phase("p", "line.py", ["out.csv"], review="required")],
        {"line.py": LINE},
    )
    run = begin(root)
    try:
        gate = measured("advance", str(root))
        assert "Traceback" not in gate.err, gate
        assert gate.code == 0 and state_of(run).waiting == "gate", gate
        assert gate.rss < BUDGET, f"praxis advance peaked at {gate.rss >> 20} MiB"
        assert gate.out_bytes < 8 << 10, f"the Gate printed {gate.out_bytes} bytes"
        assert "(no preview: out.csv: line 1 has more than 65,536 characters" in gate.out
        served = measured_python(PAGES, str(tmp_path / "served"), "line", run.name)
        assert served.code == 0, served
        assert served.rss < SERVER_BUDGET, f"the server peaked at {served.rss >> 20} MiB"
        page, page_bytes, view, view_bytes, rows, rows_bytes = map(int, served.out.split())
        assert (page, view, rows) == (200, 200, 404), served.out
        assert page_bytes < 4 << 20 and view_bytes < 4 << 20, (page_bytes, view_bytes)
        assert rows_bytes < 4 << 10, rows_bytes
        assert left_after(run.name) == []
    finally:
        remove_containers(run)


# -- profiles for prompts (the agent's and the chat's): a row, byte and time budget ----------

PROFILE = r"""
import json, resource, sys
from pathlib import Path
from praxis.agent.prompt import profile
text = profile(Path(sys.argv[1]))
print(json.dumps({"rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10,
                  "text": text[:2000], "size": len(text)}))
"""


PARQUET_PAGE = r"""
import json, sys
from pathlib import Path
from praxis.web import parquet_view
page = parquet_view.page_of(Path(sys.argv[1]), 2)
print(json.dumps({"total": page.total, "rows": len(page.rows), "pages": page.pages}))
"""


def _profiled(path: Path) -> dict[str, Any]:
    done = measured_python(PROFILE, str(path))
    assert done.code == 0, done
    report: dict[str, Any] = json.loads(done.out)
    assert done.rss < BUDGET, f"the profile peaked at {done.rss >> 20} MiB"
    return report


def test_item40_a_1_mb_one_line_csv_is_profiled_in_budget(tmp_path: Path) -> None:
    path = tmp_path / "line.csv"
    path.write_text("a," * 500_000 + "a\n")
    report = _profiled(path)
    assert report["text"] == (
        f"could not be read as a table (line.csv: line 1 has more than {MAX_FIELDS:,} fields "
        "(the most read of one record))"
    ), report
    assert report["size"] < 1000


def test_item40_a_long_csv_is_profiled_from_its_first_rows(tmp_path: Path) -> None:
    path = tmp_path / "long.csv"
    path.write_text("n,s\n" + "".join(f"{i},x\n" for i in range(tableprofile.ROWS * 3)))
    got = tableprofile.sample(path)
    assert len(got.rows) == tableprofile.ROWS and not got.complete, len(got.rows)
    report = _profiled(path)
    assert report["text"].startswith(
        f"{tableprofile.ROWS * 3:,} rows, 2 columns (profiled from the first "
        f"{tableprofile.ROWS:,} rows: {tableprofile.ROWS:,} rows)"
    ), report


def test_item40_a_small_parquet_of_400_million_rows_is_profiled_in_budget(
    tmp_path: Path,
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "many.parquet"
    group = pa.table({"v": pa.repeat(pa.scalar(7, pa.int8()), 10_000_000)})
    with pq.ParquetWriter(path, group.schema, compression="zstd") as writer:
        for _ in range(40):  # 4 * 10^8 rows, row groups of one repeated value
            writer.write_table(group, row_group_size=10_000_000)
    del group
    assert path.stat().st_size < 8 << 20, path.stat().st_size
    report = _profiled(path)
    assert report["text"].startswith("400,000,000 rows, 1 columns (Parquet)"), report
    paged = measured_python(PARQUET_PAGE, str(path))  # the run page's table of it
    assert paged.code == 0 and paged.rss < SERVER_BUDGET, paged
    assert json.loads(paged.out) == {"total": 400_000_000, "rows": 100, "pages": 4_000_000}
    assert "First 5 rows:\n```\nv\n7\n7\n7\n7\n7\n```" in report["text"], report
