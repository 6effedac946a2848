"""A reviewer's edit as a diff: rows changed, added and removed with their row numbers, only
the rows between the shared start and end compared, and the attempt's edits file."""

from __future__ import annotations

import json
from pathlib import Path

from praxis.flows.engine import edits

TABLE = b"id,v\n1,a\n2,b\n3,c\n4,d\n"


def test_changed_added_and_removed_rows_with_their_cells() -> None:
    new = b"id,v\n1,a\n2,B\n4,d\n5,e\n"
    diff = edits.diff_tables("t.csv", TABLE, new)
    assert (diff["changed"], diff["added"], diff["removed"]) == (1, 1, 1)
    assert diff["cells"] == [{"row": 2, "column": "v", "old": "b", "new": "B"}]
    assert edits.summary(diff) == "1 row(s) changed, 1 added, 1 removed"


def test_row_numbers_count_the_rows_skipped_before_the_change() -> None:
    rows = b"".join(b"%d,x\n" % i for i in range(1, 5001))
    old = b"id,v\n" + rows
    new = old.replace(b"\n4000,x\n", b"\n4000,y\n")
    diff = edits.diff_tables("t.csv", old, new)
    assert diff["cells"] == [{"row": 4000, "column": "v", "old": "x", "new": "y"}]
    assert (diff["changed"], diff["added"], diff["removed"]) == (1, 0, 0)


def test_a_quoted_cell_with_newlines_is_one_row() -> None:
    old = b'id,note\n1,"two\nlines"\n2,b\n'
    new = b'id,note\n1,"two\nlines"\n2,B\n'
    diff = edits.diff_tables("t.csv", old, new)
    assert diff["cells"] == [{"row": 2, "column": "note", "old": "b", "new": "B"}]


def test_a_column_added_is_named_and_a_tsv_is_read_with_tabs() -> None:
    diff = edits.diff_tables("t.tsv", b"id\tv\n1\ta\n", b"id\tv\tw\n1\ta\tz\n")
    assert (diff["columns_before"], diff["columns_after"]) == (["id", "v"], ["id", "v", "w"])
    assert edits.summary(diff).endswith("; columns ['id', 'v'] -> ['id', 'v', 'w']")


def test_cells_shown_are_bounded() -> None:
    old = b"id,v\n" + b"".join(b"%d,x\n" % i for i in range(200))
    new = old.replace(b",x\n", b",y\n")
    diff = edits.diff_tables("t.csv", old, new)
    assert diff["changed"] == 200 and len(diff["cells"]) == edits.MAX_CELLS


def test_diff_of_a_text_file_and_of_a_missing_earlier_version(tmp_path: Path) -> None:
    (tmp_path / "new.csv").write_bytes(TABLE)
    assert edits.diff_of("notes.txt", None, tmp_path / "new.csv") == {"text": True}
    missing = edits.diff_of("t.csv", tmp_path / "gone.csv", tmp_path / "new.csv")
    assert edits.summary(missing) == "the earlier version is not in the record"
    (tmp_path / "old.csv").write_bytes(TABLE.replace(b"3,c", b"3,C"))
    assert edits.diff_of("t.csv", tmp_path / "old.csv", tmp_path / "new.csv")["changed"] == 1


def test_edits_are_appended_oldest_first_and_bounded(tmp_path: Path) -> None:
    assert edits.load(tmp_path, "flag", 1) == []
    rel = edits.record(tmp_path, "flag", 1, {"name": "a.csv", "by": "reviewer"})
    assert rel == "edits/flag/1.json"
    edits.record(tmp_path, "flag", 1, {"name": "b.csv", "by": "hand"})
    assert [e["name"] for e in edits.load(tmp_path, "flag", 1)] == ["a.csv", "b.csv"]
    assert edits.load(tmp_path, "flag", 2) == []  # per attempt
    path = tmp_path / rel
    path.write_text(json.dumps([{"name": "kept"}, "not an entry", 3]))
    assert edits.load(tmp_path, "flag", 1) == [{"name": "kept"}]
    path.write_text("{broken")
    assert edits.load(tmp_path, "flag", 1) == []
    path.write_text(json.dumps([{"n": i} for i in range(edits.MAX_EDITS)]))
    edits.record(tmp_path, "flag", 1, {"n": "last"})
    kept = edits.load(tmp_path, "flag", 1)
    assert len(kept) == edits.MAX_EDITS and kept[0] == {"n": 1} and kept[-1] == {"n": "last"}
