"""RELIABILITY.md item 52: a notebook of pathological markdown is served bounded.

A 64 MiB notebook of 320 cells of ``![![![...`` (markdown-it-py spends ~15 us a character on
it: 64 MiB took ~20 minutes a view) is served by the real app in a child process whose peak
RSS (RUSAGE_CHILDREN) stays within the server's 512 MiB; the cells past the page's time for
markdown are shown as text under the line naming the cap, and those past its characters of
markdown are named with theirs. The index page answers after it.
"""

from __future__ import annotations

import json

from praxis.web import reading, render

from ..reliability._bounds import SERVER_BUDGET, measured_python
from .conftest import GatedRun

VIEW = r"""
import sys, time
from pathlib import Path
from starlette.testclient import TestClient
from praxis.web.app import create_app
from praxis.web.security import Guard
root, ref, run, name = sys.argv[1:]
guard = Guard()
with TestClient(create_app(Path(root), guard=guard), base_url="http://127.0.0.1:8765") as client:
    assert client.get(f"/?token={guard.token}", follow_redirects=False).status_code == 303
    started = time.monotonic()
    view = client.get(f"/view?flow={ref}&run={run}&path=output/{name}")
    took = time.monotonic() - started
    index = client.get("/")
    text = view.text
    print(view.status_code, index.status_code, len(view.content), f"{took:.2f}",
          text.count("Shown as text: this page renders at most"),
          text.count("this page shows at most 8 MiB of markdown (MAX_PAGE_MARKDOWN)"),
          text.count("<img"))
"""


def test_item52_a_64_mib_notebook_of_pathological_markdown_is_served_in_budget(
    gated: GatedRun,
) -> None:
    cell = {"cell_type": "markdown", "metadata": {}, "source": "![" * 100_000}
    cells = [cell] * 320
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}
    path = gated.flow / "runs" / gated.run_id / "output" / "slow.ipynb"
    path.write_text(json.dumps(notebook))
    assert 60 << 20 < path.stat().st_size <= reading.MAX_NOTEBOOK_BYTES
    done = measured_python(VIEW, str(gated.root), gated.ref, gated.run_id, "slow.ipynb",
                           timeout=300)  # fmt: skip
    assert done.code == 0, done
    assert done.rss < SERVER_BUDGET, f"the server peaked at {done.rss >> 20} MiB"
    view, index, size, took, as_text, cut, images = done.out.split()
    assert (view, index) == ("200", "200"), done.out
    # the cells past the page's time are shown as escaped text naming the cap, those past
    # its characters of markdown are named, each with its cap
    assert int(as_text) + int(cut) == 320 and int(images) == 0, done.out
    assert int(as_text) == (8 << 20) // 200_000 and int(size) < 9 << 20, done.out
    print(f"the view took {took} s ({render.MAX_SECONDS:g} s of markdown), {done.rss >> 20} MiB")
