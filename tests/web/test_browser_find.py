"""Finding rows at a Gate in Chromium: filter, search, sort, the flagged rows, a row a
refused save names, and a save from a filtered view. Screenshots go to SHOTS for a person."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from praxis.flows.engine import runner

from .conftest import GatedRun
from .test_browser import ARGS, CHROMIUM, LiveServer

SHOTS = Path(os.environ.get("PRAXIS_SHOTS", "/tmp/shots"))
ROWS = 20_000

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists() and os.environ.get("CI") != "true",
        reason="needs /usr/bin/chromium (apt-get install chromium)",
    ),
]


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cache").mkdir()
    monkeypatch.setenv("PRAXIS_CACHE", str(tmp_path / "cache"))


def review_path(gated: GatedRun) -> Path:
    return gated.flow / "runs" / gated.run_id / "output" / "review.csv"


def big_review(gated: GatedRun, broken: bool = False) -> bytes:
    """review.csv with ROWS rows (units = i % 50, amount = i + 0.5), left by another tool;
    ``broken``: rows 101 and 202 fail the declared checks (a repeated id, an action not
    in [keep, drop])."""
    path = review_path(gated)
    lines = [path.read_bytes().split(b"\n", 1)[0] + b"\n"]
    for i in range(ROWS):
        oid = b"O%07d" % (i if not (broken and i == 100) else 7)
        action = b"maybe" if broken and i == 201 else b"drop"
        lines.append(b"%s,North,widget,%d,%d.5,negative amount,%s\n" % (oid, i % 50, i, action))
    data = b"".join(lines)
    runner.edit(gated.flow, "review.csv", data, gated.run_id, by="hand")
    return data


@pytest.fixture
def server(gated: GatedRun) -> Iterator[LiveServer]:
    with LiveServer(gated) as live:
        yield live


@pytest.fixture
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def open_run(browser: Any, server: LiveServer, run_id: str) -> Any:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(server.url)
    page.get_by_role("link", name=run_id).click()
    return page


def column(form: Any, index: int) -> list[str]:
    """The values the grid shows in column ``index`` (0 is the row number)."""
    cells = form.locator("table.grid tbody tr").evaluate_all(
        f"rows => rows.map(r => {{ const td = r.children[{index}];"
        " const el = td.querySelector('input, textarea, span');"
        " return el ? (el.value !== undefined ? el.value : el.textContent) : td.textContent; })"
    )
    return [str(c) for c in cells]


def test_filter_and_search_find_rows_across_the_whole_table(
    gated: GatedRun, server: LiveServer, browser: Any
) -> None:
    from playwright.sync_api import expect

    big_review(gated)
    page = open_run(browser, server, gated.run_id)
    form = page.locator("form.table-edit")
    form.get_by_role("button", name="+ filter").click()
    f = form.locator(".find-filters .filter").first
    f.get_by_label("Filter column").select_option(label="units")
    f.get_by_label("Filter operation").select_option("eq")
    f.get_by_label("Filter value").fill("7")
    f.get_by_label("Filter value").press("Enter")  # finds; never submits the save
    count = form.locator(".find-count")
    expect(count).to_have_text(f"{ROWS // 50} of {ROWS} rows match")
    expect(form.locator("table.grid tbody tr")).to_have_count(100)
    assert set(column(form, 4)) == {"7"}
    assert column(form, 0)[:3] == ["8", "58", "108"]  # the file's own row numbers
    form.locator("a.next").click()
    expect(form.locator(".page-label")).to_have_text(f"found 101–200 of {ROWS // 50}")
    assert column(form, 0)[0] == str(100 * 50 + 8)

    form.get_by_role("button", name="+ filter").click()
    g = form.locator(".find-filters .filter").nth(1)
    g.get_by_label("Filter column").select_option(label="amount")
    g.get_by_label("Filter operation").select_option("range")
    g.get_by_label("Filter value").fill("1000")
    g.get_by_label("Filter up to").fill("2000")
    form.get_by_role("button", name="Find", exact=True).click()
    expect(count).to_have_text(f"20 of {ROWS} rows match")  # units 7 among rows 1000..1999
    assert column(form, 4) == ["7"] * 20
    page.screenshot(path=str(SHOTS / "find-filter.png"), full_page=False)

    form.get_by_role("button", name="Show every row").click()
    form.get_by_label("Search review.csv").fill("O0012345")
    form.get_by_label("Search review.csv").press("Enter")
    expect(count).to_have_text(f"1 of {ROWS} rows match")
    assert column(form, 1) == ["O0012345"]
    assert review_path(gated).stat().st_size > 0  # nothing was submitted by Enter


def test_sort_orders_the_whole_table_by_a_column(
    gated: GatedRun, server: LiveServer, browser: Any
) -> None:
    from playwright.sync_api import expect

    big_review(gated)
    page = open_run(browser, server, gated.run_id)
    form = page.locator("form.table-edit")
    form.get_by_label("descending").check()
    form.get_by_label("Sort review.csv by").select_option(label="amount")
    expect(form.locator(".find-count")).to_have_text(f"{ROWS} of {ROWS} rows match")
    expect(form.locator("table.grid tbody tr").first.locator("td").first).to_have_text(str(ROWS))
    amounts = [float(a) for a in column(form, 5)]
    assert amounts == sorted(amounts, reverse=True) and amounts[0] == ROWS - 1 + 0.5
    form.get_by_label("Sort review.csv by").select_option(label="units")  # numbers, not text
    form.get_by_label("descending").uncheck()
    expect(form.locator("table.grid tbody tr").first.locator("td").first).to_have_text("1")
    units = [int(u) for u in column(form, 4)]
    assert units == sorted(units) and units[-1] == 0  # 100 rows of units 0 come first
    form.get_by_label("descending").check()
    expect(
        form.locator("table.grid tbody tr").first.locator("td").nth(4).locator("input")
    ).to_have_value("49")
    page.screenshot(path=str(SHOTS / "find-sort.png"), full_page=False)


def test_jump_to_the_flagged_rows_and_to_a_row_a_refusal_names(
    gated: GatedRun, server: LiveServer, browser: Any
) -> None:
    from playwright.sync_api import expect

    before = big_review(gated, broken=True)
    page = open_run(browser, server, gated.run_id)
    form = page.locator("form.table-edit")
    form.get_by_role("button", name="Flagged rows").click()
    expect(form.locator(".find-count")).to_have_text(f"2 of {ROWS} rows match")
    assert column(form, 0) == ["101", "202"]
    flags = form.locator(".find-flags li")
    expect(flags).to_have_count(2)
    expect(flags.nth(0)).to_contain_text("check unique on order_id: 1 row(s) with repeated values")
    expect(flags.nth(1)).to_contain_text("check values on action")
    page.screenshot(path=str(SHOTS / "find-flagged.png"), full_page=False)
    flags.nth(1).get_by_role("button", name="show only these").click()
    expect(form.locator(".find-count")).to_have_text(f"1 of {ROWS} rows match")
    assert column(form, 0) == ["202"]
    # each check's rows are links: to the row in the file's own order, on its page
    form.get_by_role("button", name="Flagged rows").click()
    form.locator(".find-flags li").nth(0).get_by_role("link", name="101").click()
    expect(form.locator("tr.target td").first).to_have_text("101")
    expect(form.locator(".page-label")).to_have_text("rows 101–200")

    # a save the checks refuse names its rows; each is a link to it in the table
    expect(form.locator(".find-flags li")).to_have_count(0)  # the find is put aside
    expect(form.get_by_role("button", name="Show every row")).to_be_hidden()
    form.get_by_label("Go to row of review.csv").fill("5000")
    form.get_by_label("Go to row of review.csv").press("Enter")
    target = form.locator("table.grid tbody tr.target")
    expect(target.locator("td").first).to_have_text("5000")
    form.get_by_label("action row 5000", exact=True).fill("perhaps")
    form.get_by_role("button", name="Save review.csv").click()
    refusal = page.locator("#refusal")
    expect(refusal).to_contain_text("breaks the checks flow.yaml declares")
    expect(refusal.locator("a.goto")).to_have_count(3)  # rows 101; 202, 5000
    refusal.get_by_role("link", name="5000").click()
    form = page.locator("form.table-edit")
    expect(form.locator("tr.target td").first).to_have_text("5000")
    expect(form.get_by_label("action row 5000", exact=True)).to_have_value("perhaps")  # kept
    page.screenshot(path=str(SHOTS / "find-refusal-row.png"), full_page=False)
    assert review_path(gated).read_bytes() == before


def test_a_save_from_a_filtered_view_changes_that_cell_only(
    gated: GatedRun, server: LiveServer, browser: Any
) -> None:
    from playwright.sync_api import expect

    before = big_review(gated)
    page = open_run(browser, server, gated.run_id)
    form = page.locator("form.table-edit")
    form.get_by_label("Search review.csv").fill("O0015151")
    form.get_by_role("button", name="Find", exact=True).click()
    expect(form.locator(".find-count")).to_have_text(f"1 of {ROWS} rows match")
    form.get_by_label("action row 15152", exact=True).fill("keep")
    expect(form.locator(".draft-count")).to_have_text("1 unsaved cell")
    page.screenshot(path=str(SHOTS / "find-edit-found-row.png"), full_page=False)
    form.get_by_role("button", name="Save review.csv").click()
    expect(page.get_by_role("status")).to_contain_text("Saved.")
    row = b"O0015151,North,widget,1,15151.5,negative amount,"
    assert review_path(gated).read_bytes() == before.replace(row + b"drop\n", row + b"keep\n")


def test_a_save_keeps_the_filter_the_sort_and_the_page(
    gated: GatedRun, server: LiveServer, browser: Any
) -> None:
    from playwright.sync_api import expect

    before = big_review(gated)
    page = open_run(browser, server, gated.run_id)
    form = page.locator("form.table-edit")
    form.get_by_role("button", name="+ filter").click()
    f = form.locator(".find-filters .filter").first
    f.get_by_label("Filter column").select_option(label="units")
    f.get_by_label("Filter operation").select_option("eq")
    f.get_by_label("Filter value").fill("7")
    form.get_by_label("descending").check()
    form.get_by_label("Sort review.csv by").select_option(label="amount")
    count = form.locator(".find-count")
    expect(count).to_have_text(f"{ROWS // 50} of {ROWS} rows match")
    form.locator("a.next").click()
    label = form.locator(".page-label")
    expect(label).to_have_text(f"found 101–200 of {ROWS // 50}")
    shown = column(form, 0)
    first = int(shown[0])  # sorted by amount descending: row 19958, 19908, ... then page 2
    assert first == ROWS - 42 - 100 * 50
    form.get_by_label(f"action row {first}", exact=True).fill("keep")
    form.get_by_role("button", name="Save review.csv").click()
    expect(page.get_by_role("status")).to_contain_text("Saved.")

    form = page.locator("form.table-edit")  # the page after the save
    expect(form.locator(".find-count")).to_have_text(f"{ROWS // 50} of {ROWS} rows match")
    expect(form.locator(".page-label")).to_have_text(f"found 101–200 of {ROWS // 50}")
    assert column(form, 0) == shown  # the same rows, in the same order
    expect(form.get_by_label(f"action row {first}", exact=True)).to_have_value("keep")
    f = form.locator(".find-filters .filter").first
    expect(f.get_by_label("Filter value")).to_have_value("7")
    expect(form.get_by_label("descending")).to_be_checked()
    page.screenshot(path=str(SHOTS / "find-kept-after-save.png"), full_page=False)
    row = b"O%07d,North,widget,7,%d.5,negative amount," % (first - 1, first - 1)
    assert review_path(gated).read_bytes() == before.replace(row + b"drop\n", row + b"keep\n")

    form.get_by_role("button", name="Show every row").click()  # a reload after: file order
    page.reload()
    form = page.locator("form.table-edit")
    expect(form.locator(".page-label")).to_have_text("rows 1–100")
