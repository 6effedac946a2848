"""Finding rows server-side: the columnar copy row for row as csvedit reads the file, the
filters, search, sort and flagged rows, the cell-save checks against ``checks.evaluate``,
and the /rows answers (with the page's escaping kept)."""

from __future__ import annotations

from pathlib import Path

import pytest

from praxis.flows.engine import checks
from praxis.web import cellchecks, columnar, csvedit, csvsplice, find

from .conftest import Served

HEADER = b"id,city,temp,note\n"


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRAXIS_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()


def table(tmp_path: Path, body: bytes, name: str = "t.csv") -> csvedit.Index:
    path = tmp_path / name
    path.write_bytes(HEADER + body)
    return csvedit.index(path)


def rows(idx: csvedit.Index, q: find.Query, spec: dict | None = None) -> list[int]:
    return find.find(columnar.copy_of(idx), q, spec).rows.to_pylist()


BODY = (
    b"1,Oslo,3.5,\n"
    b'2,"Bergen, west",-1,"two\nlines"\n'
    b"3,oslo,12,  \n"
    b"4,Troms\xc3\xb8,x,ok\n"
    b"\n"
    b"5,Oslo,+7,last"
)


def test_the_copy_holds_each_row_where_csvedit_finds_it(tmp_path: Path) -> None:
    idx = table(tmp_path, BODY)
    copy = columnar.copy_of(idx)
    assert copy.rows == idx.data_rows == 6
    spans = copy.spans(list(range(copy.rows)))
    assert [r.fields for r in csvedit.read_spans(idx, spans)] == [
        r.fields for r in csvedit.read_rows(idx, 1, 6)
    ]
    assert copy.column(3).to_pylist() == ["", "two\nlines", "  ", "ok", "", "last"]


def test_a_file_arrow_reads_otherwise_is_copied_by_the_slow_pass(tmp_path: Path) -> None:
    idx = table(tmp_path, b"1,a\n2,b,c,d,e\n3\n")  # rows of other widths
    copy = columnar.copy_of(idx)
    assert copy.column(0).to_pylist() == ["1", "2", "3"]
    assert copy.column(1).to_pylist() == ["a", "b", ""]


def test_a_long_record_is_scanned_to_its_end_and_its_head_kept(tmp_path: Path) -> None:
    long = b"x" * (columnar.LINE_CAP + 3 * csvedit.CHUNK)
    idx = table(tmp_path, b'1,"' + long + b'",9,a\n2,b,10,c\n')
    copy = columnar.copy_of(idx)
    assert copy.rows == 2
    assert copy.column(0).to_pylist()[1] == "2"
    assert len(copy.column(1).to_pylist()[0]) == columnar.FIELD_CAP
    assert [r.fields[0] for r in csvedit.read_spans(idx, copy.spans([1]))] == ["2"]


def test_filters_search_and_sort(tmp_path: Path) -> None:
    idx = table(tmp_path, BODY)
    F = find.Filter
    assert rows(idx, find.Query(filters=(F(1, "eq", "Oslo"),))) == [0, 5]
    assert rows(idx, find.Query(filters=(F(1, "contains", "OSLO"),))) == [0, 2, 5]
    assert rows(idx, find.Query(filters=(F(3, "empty"),))) == [0, 2, 4]
    assert rows(idx, find.Query(filters=(F(3, "notempty"),))) == [1, 3, 5]
    assert rows(idx, find.Query(filters=(F(2, "range", "0", "10"),))) == [0, 5]
    assert rows(idx, find.Query(filters=(F(2, "range", "", "0"),))) == [1]
    assert rows(idx, find.Query(search="west")) == [1]
    both = find.Query(filters=(F(1, "contains", "o"),), search="3")
    assert rows(idx, both) == [0, 2]
    assert rows(idx, find.Query(sort=0, desc=True)) == [5, 3, 2, 1, 0, 4]  # empty last
    # a column with a cell that is not a number sorts as text
    assert rows(idx, find.Query(sort=2)) == [5, 1, 2, 0, 3, 4]
    numeric = table(tmp_path, b"1,a,10,\n2,b,9,\n3,c,,\n4,d,-2.5,\n", "n.csv")
    assert rows(numeric, find.Query(sort=2)) == [3, 1, 0, 2]


def test_a_bad_query_says_which_part(tmp_path: Path) -> None:
    with pytest.raises(find.BadQuery, match="filter 1: the table has no column '9'"):
        find.parse_query({"f0": "9", "op0": "eq"}, 4)
    with pytest.raises(find.BadQuery, match="'near' is not a number"):
        find.parse_query({"f0": "1", "op0": "range", "v0": "near"}, 4)
    with pytest.raises(find.BadQuery, match="is not one of"):
        find.parse_query({"f0": "1", "op0": "like"}, 4)


SPEC = {
    "unique": ["id"],
    "not_null": ["city"],
    "values": {"note": ["ok", "", "fine"]},
    "dtype": {"temp": "number"},
}


def test_flagged_rows_are_every_row_the_checks_name(tmp_path: Path) -> None:
    body = b"1,Oslo,3,ok\n2,,4,ok\n1,Oslo,x,bad\n3,Oslo,5,ok\n2,Rome,6,bad\n"
    idx = table(tmp_path, body)
    flags = find.flagged(columnar.copy_of(idx), SPEC)
    got = {(f.check, f.column): f.rows.to_pylist() for f in flags}
    assert got == {
        ("unique", "id"): [2, 4],
        ("not_null", "city"): [1],
        ("values", "note"): [2, 4],
        ("dtype", "temp"): [2],
    }
    # the same rows checks.evaluate names (1-based)
    expected = {
        (f.check, f.column): list(f.rows) for f in checks.evaluate("t.csv", SPEC, HEADER + body)
    }
    assert {k: [r + 1 for r in v] for k, v in got.items()} == expected
    assert rows(idx, find.Query(flagged=True), SPEC) == [1, 2, 4]
    assert rows(idx, find.Query(check=0), SPEC) == [2, 4]


@pytest.mark.parametrize(
    "edits",
    [
        {0: {3: "bad"}},  # values
        {1: {0: "1"}},  # unique, against a row not edited
        {0: {1: " "}, 2: {2: "warm"}},  # not_null and dtype
        {2: {0: "9"}},  # fixes nothing, breaks nothing
        {0: {1: "Os\nlo"}, 2: {3: "bad"}},  # a line break before the failing row
        {1: {3: "one\ntwo"}, 3: {3: "bad"}},  # and one taken away before it
    ],
)
def test_a_cell_save_is_checked_as_checks_evaluate_would(tmp_path: Path, edits: dict) -> None:
    body = b'1,Oslo,3,ok\n2,Rome,4,ok\n3,Oslo,5,fine\n4,"Ber\ngen",6,fine\n'
    idx = table(tmp_path, body)
    spec = {**SPEC, "min_rows": 1, "columns": ["id", "city"]}
    got = cellchecks.check_cells(idx, "t.csv", spec, edits)
    data = csvsplice.splice(idx, edits)
    want = checks.evaluate("t.csv", spec, data)
    assert got is not None
    assert sorted(map(str, got)) == sorted(map(str, want))


def test_a_script_check_is_left_to_the_whole_file(tmp_path: Path) -> None:
    idx = table(tmp_path, b"1,a,1,ok\n")
    assert cellchecks.check_cells(idx, "t.csv", {"script": "c.py"}, {0: {1: "b"}}) is None


def test_splice_streams_only_the_edited_rows_and_names_the_changed_cells(tmp_path: Path) -> None:
    idx = table(tmp_path, BODY)
    out = tmp_path / "out.csv"
    with out.open("wb") as fh:
        spliced = csvsplice.splice_to(idx, {1: {1: "Bergen, west"}, 5: {3: "end"}}, fh)
    assert out.read_bytes() == HEADER + BODY.replace(b"last", b"end")
    assert spliced.changed == [(5, 3, "last", "end")]
    assert spliced.shifts == [(30, 62, 32), (91, 105, 13)]  # row 2 kept its length


# --- through the app ---------------------------------------------------------------------


def rows_url(served: Served, extra: str) -> str:
    g = served.gated
    return f"/rows?flow={g.ref}&run={g.run_id}&name=review.csv&{extra}"


def test_rows_answers_a_find_and_refuses_a_bad_one(served: Served) -> None:
    served.login()
    r = served.client.get(rows_url(served, "f0=6&op0=eq&v0=drop&n=5"))
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["matches"] >= 1 and len(data["rows"]) <= 5
    assert all(cells[6] == "drop" for _, cells in data["rows"])
    bad = served.client.get(rows_url(served, "f0=99&op0=eq"))
    assert bad.status_code == 400 and "no column" in bad.json()["error"]
    flagged = served.client.get(rows_url(served, "flagged=1")).json()
    assert flagged["matches"] == 0 and flagged["flags"] == []  # as the phase wrote it


def test_a_refusal_links_the_rows_it_names_and_stays_escaped(served: Served) -> None:
    from praxis.web.refusals import row_links

    html = str(row_links("t.csv: <b>x</b> failed; rows 3, 7 (of 12)"))
    assert "&lt;b&gt;x&lt;/b&gt;" in html
    assert html.count('class="goto"') == 2 and 'data-row="7">7</a>' in html
    html = str(row_links("t.csv: check x failed: data rows 3 (line 4), 12 (line 14)"))
    assert 'data-row="3">3</a> (line 4), <a href="#" class="goto" data-row="12">' in html


def test_a_saved_files_index_and_copy_are_carried_as_a_scan_would_make_them(
    tmp_path: Path,
) -> None:
    from praxis.web import tables

    body = b"".join(b"%d,c%d,%d,n\n" % (i, i, i) for i in range(3000))
    idx = table(tmp_path, body)
    old = columnar.copy_of(idx)
    cells = {(5, 1): "a much longer city, quoted", (1500, 3): "", (2999, 2): "77"}
    staged = tables.stage_cells(idx.path, cells, tmp_path)
    staged.path.replace(idx.path)
    new = csvsplice.carried(idx, staged.spliced)
    assert new is not None
    columnar._carry(old, new, staged.spliced.shifts, staged.edits)
    fresh = csvedit.build_index(idx.path)
    assert (new.offsets, new.rows, new.version) == (fresh.offsets, fresh.rows, fresh.version)
    built = tmp_path / "fresh.arrow"
    columnar.build(fresh, built)
    carried = columnar.copy_of(new).table
    import pyarrow.ipc as ipc

    assert carried.equals(ipc.open_file(str(built)).read_all())
    assert csvedit.read_spans(new, columnar.copy_of(new).spans([5]))[0].fields[1] == (
        "a much longer city, quoted"
    )


@pytest.mark.parametrize("cells", [{(4, 3): "bad"}, {(2, 0): "9"}, {(0, 0): "7", (3, 1): ""}])
def test_flagged_rows_after_a_carried_save_are_those_of_a_fresh_copy(
    tmp_path: Path, cells: dict
) -> None:
    from praxis.web import tables

    body = b"1,Oslo,3,ok\n2,,4,ok\n1,Oslo,x,bad\n3,Oslo,5,ok\n2,Rome,6,ok\n"
    idx = table(tmp_path, body)
    old = columnar.copy_of(idx)
    find.flagged(old, SPEC)  # the unique check's rows kept for this version
    staged = tables.stage_cells(idx.path, cells, tmp_path)
    touched = frozenset(c for _, c in cells)
    edited = cellchecks.check_cells(idx, "t.csv", SPEC, tables.edits_of(cells))
    staged.path.replace(idx.path)
    new = csvsplice.carried(idx, staged.spliced)
    assert new is not None
    columnar._carry(old, new, staged.spliced.shifts, staged.edits)
    carried = {
        (f.check, f.column): f.rows.to_pylist() for f in find.flagged(columnar.copy_of(new), SPEC)
    }
    fresh_idx = csvedit.build_index(idx.path)
    built = tmp_path / "fresh.arrow"
    columnar.build(fresh_idx, built)
    import pyarrow.ipc as ipc

    fresh_copy = columnar.Copy(
        "", old.header, ipc.open_file(str(built)).read_all(), old.rows, kept=False
    )
    fresh = {(f.check, f.column): f.rows.to_pylist() for f in find.flagged(fresh_copy, SPEC)}
    assert carried == fresh
    want = checks.evaluate("t.csv", SPEC, idx.path)
    assert sorted(map(str, edited or [])) == sorted(map(str, want))
    assert (0 in touched) == (fresh.get(("unique", "id")) != [2, 4])  # the case tried


PROBE = """
import json, sys
from pathlib import Path
from praxis.web import columnar, csvedit

def hwm():
    line = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    return int(line.split()[1]) // 1024

path = Path(sys.argv[1])
size = path.stat().st_size
st = path.stat()
dialect = csvedit.Dialect("utf-8", b"", ",", b"\\n")
# the index a scan would give, made by hand: only the copy's build is measured
idx = csvedit.Index(path, (st.st_size, st.st_mtime_ns, st.st_ino), dialect, [0], 3, size)
# Arrow's first IPC write sets up its allocator and threads (about 50 MiB, whatever the
# table): a small copy first, so what is measured is what the 30 MB line costs
small = path.with_name("small.csv")
small.write_bytes(b"id,text\\n1,a\\n")
sst = small.stat()
warm = csvedit.Index(small, (sst.st_size, sst.st_mtime_ns, sst.st_ino), dialect, [0], 2,
                     sst.st_size)
columnar.build(warm, path.with_name("small.arrow"))
before = hwm()
columnar.build(idx, Path(sys.argv[2]))
copy = columnar.copy_of(idx)
print(json.dumps({"before": before, "after": hwm(), "rows": copy.rows,
                  "head": len(copy.column(1).to_pylist()[0]), "last": copy.column(0).to_pylist()}))
"""


def test_a_30_mb_line_is_copied_in_bounded_memory(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    path = tmp_path / "wide.csv"
    with path.open("wb") as fh:
        fh.write(b"id,text\n1,")
        for _ in range(30):
            fh.write(b"y" * (1 << 20))
        fh.write(b"\n2,short\n")
    env = {**os.environ, "PRAXIS_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", PROBE, str(path), str(tmp_path / "c.arrow")],
                          capture_output=True, text=True, timeout=240, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["rows"] == 2 and report["last"] == ["1", "2"]
    assert report["head"] == columnar.FIELD_CAP
    assert report["after"] - report["before"] < 24, report  # MiB; the line alone is 30


def test_a_table_too_wide_to_search_says_so(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    width = columnar.MAX_COLUMNS + 1
    path.write_text(",".join(f"c{i}" for i in range(width)) + "\n" + "1," * (width - 1) + "1\n")
    with pytest.raises(csvedit.NotATable, match=f"has {width} columns: rows are found in"):
        columnar.copy_of(csvedit.index(path))
    assert cellchecks.check_cells(csvedit.index(path), "wide.csv", {}, {0: {0: "2"}}) is None


def test_a_cache_folder_others_may_write_to_is_not_used(tmp_path: Path) -> None:
    import os

    planted = tmp_path / "cache" / f"praxis-tables-{os.getuid()}"
    planted.mkdir()
    planted.chmod(0o777)
    assert columnar.cache_dir() != planted
    assert not os.stat(columnar.cache_dir()).st_mode & 0o077
    planted.chmod(0o700)
    assert columnar.cache_dir() == planted
