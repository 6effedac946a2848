"""What the terminal shows while a run advances: the Gate's table preview."""

from __future__ import annotations

import io
from pathlib import Path

from praxis.console import Progress, format_event, table_preview
from praxis.flows.model.events import CodeRan, PartitionChanged, WorkspaceRecorded


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


def test_the_preview_shows_the_rows_a_check_flags_first(tmp_path: Path) -> None:
    path = tmp_path / "review.csv"
    path.write_text("id,reason\n" + "".join(f"{n},r{n}\n" for n in range(1, 41)), encoding="utf-8")
    lines = table_preview(path, rows=4, flagged=(30, 2, 30)).splitlines()
    assert lines == ["     # id reason", "    (rows a check flags first: 2, 30)",
                     "     2  2     r2", "    30 30    r30", "     1  1     r1",
                     "     3  3     r3", "    … 36 more rows"]  # fmt: skip
    # a row past the end is not there: the first rows fill the preview
    assert table_preview(path, rows=2, flagged=(99,)).splitlines()[2:4] == [
        "    1  1     r1",
        "    2  2     r2",
    ]


def test_a_log_line_gives_seconds_and_bytes_in_units_a_person_reads() -> None:
    ran = format_event(CodeRan(phase="a", label="script", status="ok", seconds=7.62939453125e-06))
    assert ran.endswith("code_ran         phase=a label=script status=ok seconds=7.6 µs")
    recorded = WorkspaceRecorded(
        phase="a", attempt=1, which="post", files=3, stored=2, stored_bytes=53064342, seconds=125.0
    )
    assert "files=3 stored=2 stored_bytes=50.6 MiB seconds=2 min 05 s" in format_event(recorded)


def test_progress_shows_every_partition_of_a_fan_out() -> None:
    out = io.StringIO()
    progress = Progress(1, ["per_region"], out)
    for status, name, extra in (
        ("running", "east", {"node": "0123456789abcdef"}),
        ("running", "west", {}),
        ("failed", "east", {"seconds": 1.5, "error": "boom\nmore"}),
        ("done", "west", {"seconds": 2.0}),
        ("done", "north", {"source": "20261205-000000-aaaa/per_region/north/1"}),
    ):
        progress(PartitionChanged(phase="per_region", partition=name, status=status,
                                  attempt=1, **extra))  # fmt: skip
    assert out.getvalue().splitlines() == [
        "  ▶ per_region[east] running on node 0123456789ab",
        "  ▶ per_region[west] running",
        "  ✗ per_region[east] failed after 1.5 s: boom",
        "  ✓ per_region[west] done in 2.0 s",
        "  ↺ per_region[north] reused from 20261205-000000-aaaa",
    ]
