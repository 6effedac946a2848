"""What the terminal shows: the Gate's table preview and the status timeline."""

from __future__ import annotations

from pathlib import Path

from praxis.console import table_preview, timeline
from praxis.flows.state import PhaseState, RunState


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


def test_the_timeline_places_phases_on_the_run_clock() -> None:
    state = RunState(
        run="r",
        flow="f",
        phases=[
            PhaseState(id="a", status="done", attempt=1, started=0.0, ended=10.0),
            PhaseState(id="b", status="failed", attempt=2, started=10.0, ended=20.0, error="x"),
            PhaseState(id="c"),
        ],
    )
    rows = timeline(state, width=10).splitlines()
    assert rows[0].startswith("  ✓ done     a") and rows[0].endswith("10.0 s  █████")
    assert rows[1].startswith("  ✗ failed   b") and rows[1].endswith("10.0 s       █████  x")
    assert rows[2].startswith("  · pending  c")
