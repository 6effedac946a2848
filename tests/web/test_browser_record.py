"""A notebook phase's record in Chromium reads like JupyterLab: markdown rendered, code
highlighted, a DataFrame styled in its sandboxed frame, an inline figure, a display updated in
place, a failed cell under one number, and nothing from the run reaching the page."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest

from praxis.flows.engine import runner
from praxis.flows.engine.runner import load_flow
from praxis.flows.store.handle import RunHandle

from .conftest import GatedRun, local_sandbox
from .test_browser import CHROMIUM, LiveServer
from .test_browser_review import browser  # noqa: F401, F811  (the fixture)

SHOTS = Path(os.environ.get("PRAXIS_SHOTS", "/tmp/shots"))

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists() and os.environ.get("CI") != "true",
        reason="needs /usr/bin/chromium (apt-get install chromium)",
    ),
]

CELLS = [
    ("markdown", "# Weather check\n\nA **record** with a table, a figure, a display updated "
                 "in place and a failing cell.\n\n- stations: `north`, `south`\n- "
                 "<span id=x>raw HTML is shown as text</span>"),
    ("code", "import pandas as pd\n\nstations = pd.DataFrame({'station': ['north', 'south', "
             "'east'], 'readings': [5, 4, 5], 'mean_temp_c': [11.2, 16.75, 13.1]})\nstations"),
    ("code", "import matplotlib.pyplot as plt\n\nfig, ax = plt.subplots(figsize=(5, 2.2), dpi=80)\n"
             "ax.bar(stations['station'], stations['mean_temp_c'], color='tab:blue')\n"
             "ax.set_ylabel('°C')"),
    ("code", "from IPython.display import display\n\nprogress = display('checking stations…', "
             "display_id=True)"),
    ("markdown", "## Checks"),
    ("code", "import sys\nprint('\\x1b[32mall readings in range\\x1b[0m')\n"
             "print('one station has a gap', file=sys.stderr)\n"
             "progress.update('checked 3 stations')"),
    ("code", "from IPython.display import HTML\nHTML('<b>bold from the run</b><script>"
             "parent.pwned = 1</script><img src=x onerror=\"parent.pwned = 2\">')"),
    ("code", "warmest = stations['mean_temp_c'].max()\n"
             "assert warmest < 15, f'too warm: {warmest} °C'"),
    ("code", "print('never runs')"),
]  # fmt: skip


@pytest.fixture
def showcase(tmp_path: Path) -> GatedRun:
    root = tmp_path / "root"
    flow = root / "flows" / "showcase"
    (flow / "nb").mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Py", "language": "python"}
    for kind, source in CELLS:
        maker = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        nb.cells.append(maker(source))
    nbformat.write(nb, flow / "nb" / "check.ipynb")
    (flow / "flow.yaml").write_text(
        "flow: showcase\nsandbox: {backend: local}\nphases:\n"
        "  - {id: check, kind: notebook, script: nb/check.ipynb}\n"
    )
    run = runner.begin(flow)
    state = runner.advance(flow, run.id, options=runner.RunOptions(make_sandbox=local_sandbox))
    assert state.status == "failed"
    return GatedRun(root=root, flow=flow, run_id=run.id)


def test_a_record_reads_like_jupyterlab(showcase: GatedRun, browser: Any) -> None:  # noqa: F811
    from playwright.sync_api import expect

    state = RunHandle.open(load_flow(showcase.flow), showcase.run_id).state
    error = str(state.phase("check").error)
    number = int(re.search(r"cell (\d+):", error).group(1))  # type: ignore[union-attr]
    assert error == f"nb/check.ipynb cell {number}: AssertionError: too warm: 16.75 °C"
    with LiveServer(showcase) as server:
        page = browser.new_page(viewport={"width": 1180, "height": 900})
        page.goto(server.url)
        page.goto(
            f"http://127.0.0.1:{server.port}/record?flow=flows/showcase&run={showcase.run_id}"
            "&phase=check"
        )
        nb = page.locator(".nb")
        expect(nb.get_by_role("heading", name="Weather check")).to_be_visible()
        expect(nb.locator(".markdown strong", has_text="record")).to_have_count(1)
        expect(nb.locator("li", has_text="raw HTML")).to_have_text(
            "<span id=x>raw HTML is shown as text</span>"
        )
        expect(nb.locator("pre.source .kn").first).to_have_text("import")  # highlighted
        # the DataFrame, in its frame, striped as JupyterLab stripes it
        frame = page.frame_locator("iframe.out.html").first
        expect(frame.locator("table.dataframe")).to_be_visible()
        even = frame.locator("table.dataframe tbody tr").nth(1)
        expect(even).to_have_css("background-color", "rgb(245, 245, 245)")
        page.wait_for_function(  # a function: the page's CSP forbids eval at each poll
            "() => [...document.querySelectorAll('img.out')].some(i => i.naturalWidth > 100)"
        )
        # the display shows its last value, where it was first shown
        updated = nb.locator(".cell.code", has_text="progress = display")
        expect(updated.locator("pre.out")).to_have_text("'checked 3 stations'")
        expect(nb.locator("pre.out.stdout .ansi32")).to_have_text("all readings in range")
        # one number: the error, the link at the top, the anchor, In [n] and the traceback
        failed = page.locator(f"#cell-{number}")
        expect(failed).to_have_class(re.compile(r"\bfailure\b"))
        expect(failed.locator(".prompt").first).to_have_text(f"In [{number}]:")
        expect(failed.locator("pre.out.error")).to_contain_text(f"Cell In[{number}], line 2")
        top = nb.get_by_role("link", name="go to the failing cell")
        expect(top).to_have_attribute("href", f"#cell-{number}")
        hostile = page.frame_locator("iframe.out.html").nth(1)
        expect(hostile.locator("b")).to_have_text("bold from the run")
        expect(nb.locator(".cell.code").first.locator(".prompt").first).to_have_text("In [ ]:")
        page.screenshot(path=str(SHOTS / "record-notebook.png"), full_page=True)
        top.click()
        expect(failed).to_be_in_viewport()
        page.screenshot(path=str(SHOTS / "record-failed-cell.png"), full_page=False)
        assert page.evaluate("window.pwned") is None
        page.close()
