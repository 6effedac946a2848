"""The reviewer's page in Chromium: no lost edits, lossless saves, Changes, live output,
rendered reports, a million-row Gate file. Screenshots go to /tmp/shots/ for a person."""

from __future__ import annotations

import base64
import json
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from praxis.flows.engine import runner
from praxis.flows.engine.runner import load_flow
from praxis.flows.model.events import ArtifactEdited
from praxis.flows.store.event_log import EventLog
from praxis.flows.store.handle import RunHandle

from .conftest import GatedRun
from .test_browser import ARGS, CHROMIUM, LiveServer, wait_for_run

SHOTS = Path("/tmp/shots")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists() and os.environ.get("CI") != "true",
        reason="needs /usr/bin/chromium (apt-get install chromium)",
    ),
]


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
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(server.url)
    page.get_by_role("link", name=run_id).click()
    return page


def review_path(gated: GatedRun) -> Path:
    return gated.flow / "runs" / gated.run_id / "output" / "review.csv"


def records(data: bytes) -> list[bytes]:
    """Records of a CSV's bytes, split at newlines outside quotes."""
    out, start, quotes = [], 0, 0
    for i, byte in enumerate(data):
        if byte == 0x22:
            quotes += 1
        elif byte == 0x0A and quotes % 2 == 0:
            out.append(data[start : i + 1])
            start = i + 1
    if start < len(data):
        out.append(data[start:])
    return out


# --- no lost work ----------------------------------------------------------------------------


def test_approve_with_an_unsaved_cell_saves_it_first(
    gated: GatedRun, server: LiveServer, browser: Any
) -> None:
    from playwright.sync_api import expect

    page = open_run(browser, server, gated.run_id)
    row = page.locator("table.grid tr", has=page.locator('input[value="O0151"]'))
    row.get_by_label("action row", exact=False).fill("keep")
    expect(page.locator(".approve-drafts")).to_be_visible()
    page.screenshot(path=str(SHOTS / "gate-unsaved-edit.png"), full_page=False)
    page.get_by_role("button", name="Approve and continue").click()
    expect(page.get_by_role("status")).to_contain_text("Your unsaved edits were saved")
    wait_for_run(gated, "done")
    assert ",negative amount,keep" in review_path(gated).read_text()
    flow = load_flow(gated.flow)
    edits = [e for e in EventLog(RunHandle.open(flow, gated.run_id).paths.events).read()]
    assert any(isinstance(e, ArtifactEdited) and e.by == "web" for e in edits)


def test_leaving_with_a_draft_warns_and_a_broken_text_edit_is_refused_with_the_draft_kept(
    gated: GatedRun, server: LiveServer, browser: Any
) -> None:
    from playwright.sync_api import expect

    page = open_run(browser, server, gated.run_id)
    before = review_path(gated).read_bytes()
    row = page.locator("table.grid tr", has=page.locator('input[value="O0151"]'))
    cell = row.get_by_label("action row", exact=False)
    cell.click()
    cell.fill("keep")
    dialogs: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.type)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    with page.expect_event("dialog"):
        page.locator("a.brand").click()
    assert dialogs == ["beforeunload"]
    assert "/run?" in page.url  # the reviewer stayed: the draft is still there
    expect(cell).to_have_value("keep")

    page.get_by_text("Edit review.csv as text").click()
    area = page.locator("form.text-edit textarea")
    broken = area.input_value().replace(",negative amount,drop", ",negative amount", 1)
    area.fill(broken)
    page.locator("form.text-edit").get_by_role("button", name="Save review.csv").click()
    expect(page.locator("#refusal")).to_contain_text("fields, the header has 7")
    expect(page.locator("form.text-edit textarea")).to_have_value(broken.replace("\r\n", "\n"))
    page.screenshot(path=str(SHOTS / "gate-text-refused.png"), full_page=False)
    assert review_path(gated).read_bytes() == before
    # the cell draft came back on the re-rendered page
    expect(
        page.locator("table.grid tr", has=page.locator('input[value="O0151"]')).get_by_label(
            "action row", exact=False
        )
    ).to_have_value("keep")
    revision = RunHandle.open(load_flow(gated.flow), gated.run_id).state.revision
    with page.expect_event("dialog"):  # it asks first; we say no
        page.get_by_role("button", name="Cancel the run").click()
    assert dialogs == ["beforeunload", "confirm"]
    state = RunHandle.open(load_flow(gated.flow), gated.run_id).state
    assert state.waiting == "gate" and state.revision == revision
    page.remove_listener("dialog", on_dialog)


# --- lossless --------------------------------------------------------------------------------


def test_a_multiline_cell_edit_leaves_every_other_byte_unchanged(
    gated: GatedRun, server: LiveServer, browser: Any
) -> None:
    from playwright.sync_api import expect

    path = review_path(gated)
    rows = records(path.read_bytes())
    target = next(i for i, r in enumerate(rows) if r.startswith(b"O0151,"))
    rows[target] = rows[target].replace(b"negative amount", b'"negative amount\nsee ticket"')
    rows[1] = rows[1].replace(b",drop\n", b',"drop"\n')  # another quoting style, kept as is
    path.chmod(0o644)
    runner.edit(gated.flow, "review.csv", b"".join(rows), gated.run_id, by="hand")
    page = open_run(browser, server, gated.run_id)
    area = page.locator("table.grid tr", has=page.locator('input[value="O0151"]')).locator(
        "textarea"
    )
    expect(area).to_have_value("negative amount\nsee ticket")
    area.fill("negative amount\nsee ticket 42\nchecked")
    page.screenshot(path=str(SHOTS / "gate-multiline.png"), full_page=False)
    page.locator("form.table-edit").get_by_role("button", name="Save review.csv").click()
    expect(page.get_by_role("status")).to_contain_text("Saved.")
    after = records(path.read_bytes())
    assert len(after) == len(rows)
    for i, (old, new) in enumerate(zip(rows, after, strict=True)):
        if i != target:
            assert new == old, f"row {i} changed"
    assert after[target] == rows[target].replace(
        b'"negative amount\nsee ticket"', b'"negative amount\nsee ticket 42\nchecked"'
    )
    assert path.stat().st_mode & 0o777 == 0o644


def test_the_changes_view_shows_the_edited_cell(
    gated: GatedRun, server: LiveServer, browser: Any
) -> None:
    from playwright.sync_api import expect

    page = open_run(browser, server, gated.run_id)
    row = page.locator("table.grid tr", has=page.locator('input[value="O0151"]'))
    row.get_by_label("action row", exact=False).fill("keep")
    page.locator("form.table-edit").get_by_role("button", name="Save review.csv").click()
    expect(page.get_by_role("status")).to_contain_text("Saved.")
    page.get_by_role("link", name="Changes").click()
    diff = page.locator("table.diff").first
    expect(diff).to_contain_text("action")
    expect(diff.locator("td.old")).to_have_text("drop")
    expect(diff.locator("td.new")).to_have_text("keep")
    expect(page.locator("body")).to_contain_text("1 row changed · 0 added · 0 removed")
    page.screenshot(path=str(SHOTS / "changes.png"), full_page=True)


# --- big tables ------------------------------------------------------------------------------


def test_a_million_row_gate_file_is_paged(
    gated: GatedRun, server: LiveServer, browser: Any
) -> None:
    from playwright.sync_api import expect

    path = review_path(gated)
    header = path.read_bytes().split(b"\n", 1)[0] + b"\n"
    draft = gated.root / "big.csv"
    with draft.open("wb") as fh:
        fh.write(header)
        for start in range(0, 1_000_000, 10_000):
            fh.write(
                b"".join(
                    b"O%07d,North,widget,%d,%d.5,negative amount,drop\n" % (i, i % 50, i)
                    for i in range(start, start + 10_000)
                )
            )
    runner.edit(gated.flow, "review.csv", draft.read_bytes(), gated.run_id, by="hand")
    original = path.read_bytes()
    transferred: dict[str, int] = {}

    page = open_run(browser, server, gated.run_id)

    def on_response(response: Any) -> None:
        if "/run?" in response.url or "/rows?" in response.url:
            transferred[response.url] = len(response.body())

    page.on("response", on_response)
    page.reload()
    form = page.locator("form.table-edit")
    expect(form.locator(".pager")).to_contain_text("1000000 rows")
    expect(form.locator("table.grid tbody tr")).to_have_count(100)
    expect(form.locator("table.grid tbody tr").first.locator("td").first).to_have_text("1")
    form.locator("a.next").click()
    expect(form.locator("table.grid tbody tr").first.locator("td").first).to_have_text("101")
    expect(form.locator("table.grid tbody tr")).to_have_count(100)
    expect(form.locator(".page-label")).to_have_text("rows 101–200")
    page_bytes = max(v for k, v in transferred.items() if "/run?" in k)
    rows_bytes = max(v for k, v in transferred.items() if "/rows?" in k)
    assert page_bytes < 200_000, page_bytes  # the file is 50 MB; the page is one page of it
    assert rows_bytes < 50_000, rows_bytes
    cell = form.get_by_label("action row 150", exact=True)
    cell.fill("keep")
    page.screenshot(path=str(SHOTS / "gate-1m-rows.png"), full_page=False)
    with page.expect_navigation(timeout=300_000):  # writing 50 MB and recording the edit
        form.get_by_role("button", name="Save review.csv").click(no_wait_after=True)
    expect(page.get_by_role("status")).to_contain_text("Saved.")
    after = path.read_bytes()
    changed = b"O0000149,North,widget,49,149.5,negative amount,"
    assert after == original.replace(changed + b"drop\n", changed + b"keep\n")


# --- live output and rendered reports --------------------------------------------------------


def tiny_png() -> bytes:
    width, height = 60, 30
    raw = b"".join(b"\x00" + b"\x25\x63\xeb" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


TICK = """\
import base64, time
print("<img src=x onerror=window.pwned=2> & <b>not bold</b>", flush=True)
for i in range(12):
    print(f"tick {{i}}", flush=True)
    time.sleep(0.5)
with open("chart.png", "wb") as fh:
    fh.write(base64.b64decode({png!r}))
with open("report.md", "w") as fh:
    fh.write("# Ticker report\\n\\nTwelve ticks.\\n\\n![the chart](chart.png)\\n\\n"
             "<script>window.pwned = 1</script>\\n\\n| tick | value |\\n|---|---|\\n| 1 | 2 |\\n")
"""


@pytest.fixture
def ticker(tmp_path: Path) -> GatedRun:
    root = tmp_path / "root"
    flow = root / "flows" / "ticker"
    (flow / "scripts").mkdir(parents=True)
    (flow / "scripts" / "tick.py").write_text(
        TICK.format(png=base64.b64encode(tiny_png()).decode())
    )
    (flow / "scripts" / "after.py").write_text("open('done.txt', 'w').write('ok')\n")
    (flow / "flow.yaml").write_text(
        json.dumps(
            {
                "flow": "ticker",
                "sandbox": {"backend": "local", "timeout": 120},
                "phases": [
                    {
                        "id": "tick",
                        "kind": "script",
                        "script": "scripts/tick.py",
                        "outputs": ["report.md", "chart.png"],
                        "review": "required",
                    },
                    {
                        "id": "after",
                        "kind": "script",
                        "script": "scripts/after.py",
                        "inputs": {"working": ["report.md"]},
                        "outputs": ["done.txt"],
                    },
                ],
            }
        )
    )
    run = runner.begin(flow)
    return GatedRun(root=root, flow=flow, run_id=run.id)


def test_live_output_appears_while_the_phase_runs_then_the_report_is_rendered(
    ticker: GatedRun, browser: Any
) -> None:
    from playwright.sync_api import expect

    with LiveServer(ticker) as server:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(server.url)
        page.get_by_role("link", name=ticker.run_id).click()
        page.get_by_role("button", name="Continue the run").click()
        log = page.locator("#live-log")
        expect(log).to_contain_text("tick 2", timeout=60_000)
        shown = log.inner_text()
        # seen while the phase still ran: not all of its output existed yet
        assert "tick 11" not in shown
        assert "<img src=x onerror=window.pwned=2> & <b>not bold</b>" in shown  # as text
        assert log.locator("img, b").count() == 0
        expect(page.locator("#live-elapsed")).to_contain_text("running for")
        page.screenshot(path=str(SHOTS / "run-live.png"), full_page=False)
        expect(log).to_contain_text("tick 11", timeout=60_000)
        expect(page.locator("#moved")).to_contain_text(
            "waits at the Gate after tick", timeout=30_000
        )
        expect(page.locator("#live-title")).to_have_text("Output of phase")
        assert page.evaluate("window.pwned") is None
        page.screenshot(path=str(SHOTS / "run-banner.png"), full_page=False)
        page.locator("#moved-reload").click()

        preview = page.locator(".markdown.preview")
        expect(preview.get_by_role("heading", name="Ticker report")).to_be_visible()
        expect(preview).to_contain_text("<script>window.pwned = 1</script>")
        img = preview.locator("img")
        expect(img).to_have_attribute("alt", "the chart")
        # a function, not an expression: the page's CSP forbids eval, and Playwright
        # evals an expression again at every poll after the first
        page.wait_for_function(
            "() => document.querySelector('.markdown.preview img').naturalWidth > 0"
        )
        assert page.evaluate("window.pwned") is None
        page.screenshot(path=str(SHOTS / "gate-report-md.png"), full_page=True)

        page.get_by_role("link", name="report.md").first.click()
        expect(page.locator(".markdown h1")).to_have_text("Ticker report")
        expect(page.locator(".markdown table")).to_be_visible()
        page.wait_for_function("() => document.querySelector('.markdown img').naturalWidth > 0")
        page.screenshot(path=str(SHOTS / "view-report-md.png"), full_page=True)
        page.go_back()
        page.get_by_role("link", name="records/tick.ipynb").click()
        expect(page.locator(".notebook pre.source").first).to_contain_text("tick")
        expect(page.locator(".notebook pre.out").first).to_contain_text("tick 0")
        page.screenshot(path=str(SHOTS / "view-record.png"), full_page=False)
        page.close()


SCROLLER = """\
import os, time
for i in range(300):
    print(f"line {i}", flush=True)
    time.sleep(0.005)
for i in range(5):
    print(f"\\rprogress {i}", end="", flush=True)
    time.sleep(0.3)
print("\\r\\r\\nabcdef\\rXY", flush=True)
print("the newest line", flush=True)
for _ in range(1200):  # until the test lets it end (at most 2 minutes)
    if os.path.exists("stop"):
        break
    time.sleep(0.1)
open("done.txt", "w").write("ok")
"""


@pytest.fixture
def scroller(tmp_path: Path) -> GatedRun:
    root = tmp_path / "root"
    flow = root / "flows" / "scroller"
    (flow / "scripts").mkdir(parents=True)
    (flow / "scripts" / "scroll.py").write_text(SCROLLER)
    (flow / "scripts" / "prepare.py").write_text("import time\ntime.sleep(1)\n")
    (flow / "flow.yaml").write_text(
        json.dumps(
            {
                "flow": "scroller",
                "sandbox": {"backend": "local", "timeout": 300},
                "phases": [
                    {"id": "prepare", "kind": "script", "script": "scripts/prepare.py"},
                    {
                        "id": "scroll",
                        "kind": "script",
                        "script": "scripts/scroll.py",
                        "outputs": ["done.txt"],
                    },
                ],
            }
        )
    )
    run = runner.begin(flow)
    return GatedRun(root=root, flow=flow, run_id=run.id)


def test_the_live_panel_scrolls_follows_the_newest_line_and_the_timeline_grows(
    scroller: GatedRun, browser: Any
) -> None:
    """300 lines in a panel 320 px high: it scrolls inside its box (nothing spills over the
    timeline), shows the newest line, and the running phase's bar grows (beside the bar of
    the phase before it, which takes less and less of the run's clock)."""
    from playwright.sync_api import expect

    workspace = RunHandle.open(load_flow(scroller.flow), scroller.run_id).paths.workspace
    with LiveServer(scroller) as server:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(server.url)
        page.get_by_role("link", name=scroller.run_id).click()
        page.get_by_role("button", name="Continue the run").click()
        log = page.locator("#live-log")
        expect(log).to_contain_text("the newest line", timeout=60_000)
        shown = log.inner_text()  # \r as JupyterLab shows it: the line rewritten in place
        assert "progress 4\nXYcdef\nthe newest line" in shown, shown[-200:]
        assert "progress 3" not in shown
        geometry = page.evaluate(
            """() => {
              const log = document.getElementById("live-log");
              const svg = document.getElementById("timeline");
              const box = log.getBoundingClientRect();
              const range = document.createRange();
              range.selectNodeContents(log);
              const rects = range.getClientRects();
              const last = rects[rects.length - 1];
              return {
                overflow: getComputedStyle(log).overflowY,
                scrollHeight: log.scrollHeight, clientHeight: log.clientHeight,
                scrollTop: log.scrollTop, logBottom: box.bottom, logTop: box.top,
                timelineTop: svg.getBoundingClientRect().top,
                lastTop: last.top, lastBottom: last.bottom,
              };
            }"""
        )
        assert geometry["overflow"] == "auto"
        assert geometry["scrollHeight"] > 3 * geometry["clientHeight"]  # 300 lines scroll
        # it follows the newest line: scrolled to the end, that line inside the box
        bottom = geometry["scrollTop"] + geometry["clientHeight"]
        assert bottom >= geometry["scrollHeight"] - 4, geometry
        assert geometry["logTop"] <= geometry["lastTop"] < geometry["lastBottom"]
        assert geometry["lastBottom"] <= geometry["logBottom"] + 1, geometry
        assert geometry["logBottom"] <= geometry["timelineTop"]  # nothing over the timeline
        bar = page.locator('#timeline rect.bar[data-phase="scroll"]')
        label = page.locator('#timeline text.label[data-phase="scroll"]')
        expect(label).to_contain_text("running · ")
        first = float(bar.get_attribute("width") or 0)
        page.wait_for_function(
            "(w) => parseFloat(document.querySelector("
            "'#timeline rect.bar[data-phase=\"scroll\"]').getAttribute('width')) > w + 1",
            arg=first,
            timeout=30_000,
        )
        expect(page.locator('#timeline text.label[data-phase="prepare"]')).to_have_text("done")
        before = page.locator('#timeline rect.bar[data-phase="prepare"]')
        assert float(before.get_attribute("width") or 0) > 2  # it ended where scroll began
        # the phase table says what the timeline says, without a reload
        expect(page.locator('tr[data-phase="prepare"] .phase-status')).to_have_text("done")
        expect(page.locator('tr[data-phase="scroll"] .phase-status')).to_have_text("running")
        page.screenshot(path=str(SHOTS / "run-live-scrolled.png"), full_page=False)
        (workspace / "stop").write_text("")
        expect(page.locator("#live-title")).to_have_text("Output of phase", timeout=60_000)
        page.close()


def test_a_reject_from_the_command_line_shows_a_banner_and_the_page_stays(
    gated: GatedRun, server: LiveServer, browser: Any
) -> None:
    from playwright.sync_api import expect

    page = open_run(browser, server, gated.run_id)
    row = page.locator("table.grid tr", has=page.locator('input[value="O0151"]'))
    row.get_by_label("action row", exact=False).fill("keep")
    page.evaluate("window.sameDocument = true")
    revision = RunHandle.open(load_flow(gated.flow), gated.run_id).state.revision
    runner.reject(gated.flow, "flag", "look again", gated.run_id, expect_revision=revision)
    banner = page.locator("#moved")
    expect(banner).to_contain_text("the Gate after flag was decided", timeout=15_000)
    expect(page.locator("#moved-drafts")).to_be_visible()
    assert page.evaluate("window.sameDocument") is True  # no reload behind the reviewer's back
    expect(row.get_by_label("action row", exact=False)).to_have_value("keep")
    page.screenshot(path=str(SHOTS / "run-cli-reject-banner.png"), full_page=False)


def test_a_large_text_box_loads_when_opened_and_saves(
    gated: GatedRun, server: LiveServer, browser: Any
) -> None:
    from playwright.sync_api import expect

    path = review_path(gated)
    head, rest = path.read_bytes().split(b"\n", 1)
    unique = b"".join(rest.replace(b"O0", b"O%d" % i) for i in range(2000))
    big = head + b"\n" + unique  # about 500 KB: not in the page
    runner.edit(gated.flow, "review.csv", big, gated.run_id, by="hand")
    page = open_run(browser, server, gated.run_id)
    area = page.locator("form.text-edit textarea")
    expect(area).to_have_value("")
    page.get_by_text("Edit review.csv as text").click()
    expect(area).not_to_have_attribute("readonly", "")
    assert area.input_value().encode() == path.read_bytes()
    area.press("Control+End")
    area.type("O9999,North,widget,1,1.0,typed,keep\n")
    page.locator("form.text-edit").get_by_role("button", name="Save review.csv").click()
    expect(page.get_by_role("status")).to_contain_text("Saved.")
    assert path.read_bytes() == big + b"O9999,North,widget,1,1.0,typed,keep\n"


def test_a_declared_check_blocks_a_save_and_the_draft_stays(
    gated: GatedRun, server: LiveServer, browser: Any
) -> None:
    from playwright.sync_api import expect

    before = review_path(gated).read_bytes()
    page = open_run(browser, server, gated.run_id)
    row = page.locator("table.grid tr", has=page.locator('input[value="O0151"]'))
    row.get_by_label("action row", exact=False).fill("maybe")
    page.locator("form.table-edit").get_by_role("button", name="Save review.csv").click()
    expect(page.locator("#refusal")).to_contain_text("breaks the checks flow.yaml declares")
    expect(page.locator("#refusal")).to_contain_text("action")
    page.screenshot(path=str(SHOTS / "gate-check-refused.png"), full_page=False)
    assert review_path(gated).read_bytes() == before
    again = page.locator("table.grid tr", has=page.locator('input[value="O0151"]'))
    expect(again.get_by_label("action row", exact=False)).to_have_value("maybe")
