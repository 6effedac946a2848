"""What the terminal shows while a run advances: the Gate's table preview."""

from __future__ import annotations

from pathlib import Path

from praxis.console import table_preview


def test_the_preview_shows_the_first_rows_aligned_and_counts_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "review.csv"
    path.write_text("id,reason\n" + "".join(f"{n},r{n}\n" for n in range(12)), encoding="utf-8")
    lines = table_preview(path, rows=3).splitlines()
    assert lines == ["    id reason", "     0     r0", "     1     r1", "     2     r2",
                     "    … 9 more rows"]  # fmt: skip


def test_the_preview_escapes_control_characters_and_clips_long_cells(tmp_path: Path) -> None:
    path = tmp_path / "t.tsv"
    path.write_text("a\tb\n\x1b]0;title\x07\t" + "x" * 40 + "\n", encoding="utf-8")
    text = table_preview(path)
    assert "\x1b" not in text and "\x07" not in text
    assert "^[]0;title^G" in text
    assert "x" * 21 + "..." in text and "x" * 25 not in text


def test_the_preview_of_an_empty_or_unreadable_file_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "e.csv"
    empty.write_text("", encoding="utf-8")
    assert table_preview(empty) == "    (empty file)"
    assert table_preview(tmp_path / "missing.csv").startswith("    (no preview:")
