"""Changes: table diffs aligned by row (changed, added, removed)."""

from __future__ import annotations

from pathlib import Path

from praxis.web import changes


def test_table_diffs_align_added_and_removed_rows(tmp_path: Path) -> None:
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("id,v\n1,a\n2,b\n3,c\n4,d\n")
    b.write_text("id,v\n1,a\n2,B\n4,d\n5,e\n")
    d = changes.diff_tables(a, b)
    assert d.counts == {"changed": 1, "added": 1, "removed": 1}
    assert [(c.row, c.cells) for c in d.changed] == [(2, [("v", "b", "B")])]
    assert d.removed == [(3, ["3", "c"])] and d.added == [(4, ["5", "e"])]
    b.write_text("id,v\n1,a\n2,b\n3,c\n4,x\n")
    d = changes.diff_tables(a, b)
    assert d.counts == {"changed": 1, "added": 0, "removed": 0}
    assert d.changed[0].cells == [("v", "d", "x")]
