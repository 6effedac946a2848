"""The record renderer keeps run output away from the page; tables page and edit cell by cell."""

from __future__ import annotations

import itertools
from pathlib import Path

import nbformat
import pytest

from praxis.web import highlight, notebook, render, tables
from praxis.web.security import FRAME_HEADERS


def test_html_outputs_go_into_a_script_free_sandboxed_frame() -> None:
    out = {"output_type": "display_data", "data": {"text/html": '<script>alert("x")</script>'}}
    html = notebook.render_output(out, lambda j: f"/output?cell=0&output={j}")
    assert '<iframe class="out html" sandbox loading="lazy"' in html
    assert 'src="/output?cell=0&amp;output=0"' in html
    assert "<script>" not in html and "alert" not in html  # the page never holds it
    assert "<script>" not in notebook.render_output(out)  # no frame: shown as text


def test_the_frame_document_carries_the_output_and_the_stylesheet() -> None:
    doc = notebook.frame_document("<table><tr><td>1</td></tr></table>")
    assert "<table><tr><td>1</td></tr></table>" in doc
    assert "tbody tr:nth-child(even)" in doc  # JupyterLab's striped rows
    assert FRAME_HEADERS["Content-Security-Policy"].startswith("sandbox; default-src 'none'")
    assert "script-src" not in FRAME_HEADERS["Content-Security-Policy"]  # none: default-src
    assert notebook.frame_height("<tr>" * 3) == 24 + 3 * 27


def test_text_and_errors_are_escaped_and_images_shown() -> None:
    stream = notebook.render_output({"output_type": "stream", "name": "stdout", "text": "<b>1</b>"})
    assert "&lt;b&gt;1&lt;/b&gt;" in stream
    error = notebook.render_output(
        {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["\x1b[31mboom\x1b[0m"]}
    )
    assert '<span class="ansi31">boom</span>' in error and "\x1b" not in error
    image = notebook.render_output(
        {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo=\n", "text/plain": "x"}}
    )
    assert 'src="data:image/png;base64,iVBORw0KGgo="' in image
    bad = notebook.render_output(
        {"output_type": "display_data", "data": {"image/png": '"><script>', "text/plain": "t"}}
    )
    assert "<script>" not in bad and "<img" not in bad


def test_ansi_colours_become_classes_and_other_escapes_are_dropped() -> None:
    text = "\x1b[38;5;28;01mdef\x1b[39;00m <f> \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b[2K\x07"
    shown = highlight.terminal(text)
    assert '<span class="ansi1 ansi38-28">def</span>' in shown
    assert "&lt;f&gt;" in shown and "link" in shown
    assert "\x1b" not in shown and "\x07" not in shown and "http://x" not in shown
    assert ".ansi .ansi31 { color: #e75c58; }" in highlight.stylesheet()  # JupyterLab's red
    assert ".highlight .k " in highlight.stylesheet()  # Pygments' keyword class


def test_a_record_reads_like_jupyterlab(tmp_path: Path) -> None:
    md = nbformat.v4.new_markdown_cell(
        "**Phase failed:** <span id=x>x</span> ![a](attachment:a.png)"
    )
    md.attachments = {"a.png": {"image/png": "iVBORw0KGgo="}}
    code = nbformat.v4.new_code_cell("def f():\n    return 1", execution_count=3)
    code.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "1"},
                                           execution_count=3)]  # fmt: skip
    code.metadata["praxis"] = {"cell": 3, "status": "error"}
    nb = nbformat.v4.new_notebook(cells=[md, code])
    path = tmp_path / "r.ipynb"
    nbformat.write(nb, path)
    got = notebook.load(
        path, markdown=lambda text, att: render.markdown(
            text, flow="f", run="r", folder="records", attachments=att)
    )  # fmt: skip
    shown, cell = got.cells
    assert "<strong>Phase failed:</strong>" in shown.html and "&lt;span id=x&gt;" in shown.html
    assert 'src="data:image/png;base64,iVBORw0KGgo="' in shown.html
    assert cell.anchor == "cell-3" and cell.count == 3 and cell.failure
    assert '<span class="k">def</span>' in cell.html
    assert '<div class="prompt">Out[3]:</div>' in cell.outputs[0]


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


def test_markdown_past_the_pages_time_is_shown_as_text_naming_the_cap() -> None:
    ticks = itertools.count()  # a clock that moves 10 ms each time the parser reads it
    budget = render.Budget.start(clock=lambda: next(ticks) / 100)
    first = render.markdown("**a**", flow="f", run="r", folder="", budget=budget)
    assert first == "<p><strong>a</strong></p>\n"
    slow = render.markdown("*b* ![" * 50, flow="f", run="r", folder="", budget=budget)
    assert slow.startswith(
        '<p class="muted">Shown as text: this page renders at most 1 s of markdown (MAX_SECONDS)'
    )
    assert slow.endswith("<pre>" + "*b* ![" * 50 + "</pre>")  # escaped, never rendered
    again = render.markdown("**c**", flow="f", run="r", folder="", budget=budget)
    assert "Shown as text" in again and "<strong>" not in again  # the page's time is spent


def test_a_pages_markdown_is_bounded_in_characters() -> None:
    budget = render.Budget(deadline=float("inf"), room=10)
    assert render.markdown("*12345*", flow="f", run="r", folder="", budget=budget) == (
        "<p><em>12345</em></p>\n"
    )
    cut = render.markdown("*1234*", flow="f", run="r", folder="", budget=budget)
    assert cut == (
        '<p class="muted">Markdown of 6 characters not shown: this page shows at most 8 MiB of '
        "markdown (MAX_PAGE_MARKDOWN); download the file to read it.</p>"
    )
