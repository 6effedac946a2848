"""The record renderer keeps run output away from the page; tables page and edit cell by cell."""

from __future__ import annotations

from pathlib import Path

import pytest

from praxis.web import notebook, tables


def test_html_outputs_go_into_a_script_free_sandboxed_frame() -> None:
    html = notebook.render_output(
        {"output_type": "display_data", "data": {"text/html": '<script>alert("x")</script>'}}
    )
    assert html.startswith('<iframe class="out html" sandbox title=')
    assert "<script>" not in html  # escaped into srcdoc, never live in the page
    assert "&lt;script&gt;" in html


def test_text_and_errors_are_escaped_and_images_shown() -> None:
    stream = notebook.render_output({"output_type": "stream", "name": "stdout", "text": "<b>1</b>"})
    assert "&lt;b&gt;1&lt;/b&gt;" in stream
    error = notebook.render_output(
        {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["\x1b[31mboom\x1b[0m"]}
    )
    assert "boom" in error and "\x1b" not in error
    image = notebook.render_output(
        {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo=\n", "text/plain": "x"}}
    )
    assert 'src="data:image/png;base64,iVBORw0KGgo="' in image
    bad = notebook.render_output(
        {"output_type": "display_data", "data": {"image/png": '"><script>', "text/plain": "t"}}
    )
    assert "<script>" not in bad and "<img" not in bad


def test_a_large_table_is_paged(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    path.write_text("n,v\n" + "".join(f"{i},{i * 2}\n" for i in range(250)))
    last = tables.page_of(path, 3)
    assert (last.page, last.pages, last.total) == (3, 3, 250)
    assert last.rows[0] == (200, ["200", "400"]) and len(last.rows) == 50
    assert tables.page_of(path, 99).page == 3


def test_cell_edits_change_only_those_cells(tmp_path: Path) -> None:
    path = tmp_path / "t.tsv"
    path.write_bytes(b'a\tb\r\n1.50\tx, y\r\n2\t"q""q"\r\n')
    data = tables.apply_cells(path, {(1, 0): "3"})
    assert data == b'a\tb\r\n1.50\tx, y\r\n3\t"q""q"\r\n'
    with pytest.raises(tables.BadEdit, match="no cell at row 3"):
        tables.apply_cells(path, {(2, 0): "x"})
    assert tables.parse_cell_fields([("cell.4.1", "v"), ("csrf", "t")]) == {(4, 1): "v"}
