"""The flow list: flows found below the root, tests, hidden and ignored folders skipped."""

from __future__ import annotations

from pathlib import Path

from praxis.web import catalog

from .conftest import copy_example


def test_the_flow_list_skips_tests_hidden_and_ignored_folders(tmp_path: Path) -> None:
    copy_example(tmp_path)
    for broken in ("tests/flows/bad", ".hidden/flow", "scratch/old", "more/tests/x"):
        (tmp_path / broken).mkdir(parents=True)
        (tmp_path / broken / "flow.yaml").write_text("phases: [\n")
    (tmp_path / ".praxisignore").write_text("# old experiments\nscratch/*\n")
    assert catalog.find_flows(tmp_path) == ["flows/sales-report"]
    (tmp_path / ".praxisignore").unlink()
    rows = catalog.flow_rows(tmp_path)
    assert [(r.ref, r.problem is not None) for r in rows] == [
        ("flows/sales-report", False),
        ("scratch/old", True),
    ]
