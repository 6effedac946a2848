"""A notebook (a phase's record, or one a run wrote) as HTML that reads like JupyterLab.

Markdown cells go through the reports' safe renderer (``render.markdown``: no raw HTML, links
and images limited; a cell's own image attachments are shown). Code is highlighted; streams
and tracebacks keep their ANSI colours (``highlight``); images are ``data:`` URLs. HTML
outputs (a DataFrame's table, a model's markup) come from code that ran in the sandbox: each is
shown in an ``<iframe sandbox>`` loading ``/output``, a document of its own with no scripts,
no network and a unique origin, styled like JupyterLab's output area (``frame_document``), so
it cannot reach the reviewer's page, its cookie or its forms. Everything else is escaped.

Each code cell's anchor is its number, ``#cell-N`` for ``In [N]`` (the number errors name).
nbconvert's HTML exporter is not used: it puts HTML outputs into the page itself (sanitised,
with their own styles stripped), renders markdown with raw HTML by a second renderer, and
its templates carry inline styles and scripts this page's content security policy refuses.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup

from . import highlight

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif")
MAX_TEXT = 200_000
MAX_FRAME = 2 << 20  # characters of one HTML output served in its frame
INJECTED = "injected-parameters"
FAILED = ("error", "stopped")
Markdown = Callable[[str, dict[str, str]], Markup]  # (text, attachments as data: URLs)
FrameUrl = Callable[[int, int], str]  # (cell index, output index) -> the frame's URL


@dataclass
class Cell:
    kind: str  # code | markdown | raw
    source: str
    count: int | None = None
    outputs: list[Markup] = field(default_factory=list)
    failure: bool = False  # the runner's failure note, or a code cell that failed
    html: Markup = Markup("")  # markdown rendered, or code highlighted
    anchor: str = ""


@dataclass
class Notebook:
    cells: list[Cell]
    metadata: dict[str, Any]


def plain(text: str, attachments: dict[str, str]) -> Markup:
    return Markup("<pre>{}</pre>").format(text)


def load(path: Path, *, markdown: Markdown = plain, frame: FrameUrl | None = None) -> Notebook:
    """The notebook at ``path``; ``frame`` gives the URL showing an HTML output (None: such
    outputs are shown as their text)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    meta = data.get("metadata", {}).get("praxis", {})
    cells = [_cell(c, i, markdown, frame) for i, c in enumerate(data.get("cells", []))]
    return Notebook(cells=cells, metadata=meta if isinstance(meta, dict) else {})


def _text(value: Any) -> str:
    text = "".join(str(v) for v in value) if isinstance(value, list) else str(value or "")
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT] + f"\n... [{len(text) - MAX_TEXT} more characters not shown]"
    return text


def _cell(data: dict[str, Any], index: int, markdown: Markdown, frame: FrameUrl | None) -> Cell:
    kind = str(data.get("cell_type", "raw"))
    meta = data.get("metadata", {}) or {}
    praxis = meta.get("praxis", {}) or {}
    cell = Cell(kind=kind, source=_text(data.get("source")), failure=bool(praxis.get("failure")))
    if kind == "markdown":
        cell.html = markdown(cell.source, _attachments(data.get("attachments")))
    elif kind == "code":
        count = data.get("execution_count")
        cell.count = count if isinstance(count, int) else None
        tags = meta.get("tags")
        injected = isinstance(tags, list) and INJECTED in tags
        cell.anchor = INJECTED if injected else f"cell-{count}" if cell.count else ""
        cell.failure = praxis.get("status") in FAILED
        cell.html = highlight.code(cell.source)
        outputs = data.get("outputs")
        cell.outputs = [
            render_output(o, _frame_of(frame, index), j)
            for j, o in enumerate(outputs if isinstance(outputs, list) else [])
            if isinstance(o, dict)
        ]
    return cell


def _frame_of(frame: FrameUrl | None, cell: int) -> Callable[[int], str] | None:
    if frame is None:
        return None
    return lambda output: frame(cell, output)


def _attachments(value: Any) -> dict[str, str]:
    """A markdown cell's image attachments (name -> data: URL)."""
    found: dict[str, str] = {}
    for name, bundle in (value if isinstance(value, dict) else {}).items():
        for mime in IMAGE_TYPES:
            b64 = _base64(bundle.get(mime) if isinstance(bundle, dict) else None)
            if b64:
                found[str(name)] = f"data:{mime};base64,{b64}"
                break
    return found


def _base64(value: Any) -> str | None:
    b64 = re.sub(r"\s", "", _text(value)) if value is not None else ""
    return b64 if b64 and re.fullmatch(r"[A-Za-z0-9+/=]*", b64) else None


def render_output(
    out: dict[str, Any], frame: Callable[[int], str] | None = None, index: int = 0
) -> Markup:
    """One output, in a block with its prompt (``Out[n]:`` for an execute_result)."""
    kind = out.get("output_type")
    prompt = ""
    if kind == "stream":
        name = "stderr" if out.get("name") == "stderr" else "stdout"
        body = Markup('<pre class="out ansi {}">{}</pre>').format(
            name, highlight.terminal(_text(out.get("text")))
        )
    elif kind == "error":
        trace = "\n".join(_text(line) for line in out.get("traceback") or [])
        head = f"{_text(out.get('ename')) or 'Error'}: {_text(out.get('evalue'))}"
        shown = highlight.terminal(trace or head)
        body = Markup('<pre class="out ansi error">{}</pre>').format(shown)
    elif kind in ("execute_result", "display_data"):
        data = out.get("data")
        body = _rich(data if isinstance(data, dict) else {}, _frame_at(frame, index))
        count = out.get("execution_count")
        if kind == "execute_result" and isinstance(count, int):
            prompt = f"Out[{count}]:"
    else:
        return Markup("")
    return Markup('<div class="output"><div class="prompt">{}</div>{}</div>').format(prompt, body)


def _frame_at(frame: Callable[[int], str] | None, index: int) -> Callable[[], str] | None:
    return None if frame is None else lambda: frame(index)


def _rich(data: dict[str, Any], frame: Callable[[], str] | None) -> Markup:
    for mime in IMAGE_TYPES:
        if mime in data and (b64 := _base64(data[mime])):
            tag = '<img class="out" alt="output image" src="data:{};base64,{}">'
            return Markup(tag).format(mime, b64)
    if "image/svg+xml" in data:  # as an image: an SVG shown by <img> runs no script
        svg = base64.b64encode(_text(data["image/svg+xml"]).encode()).decode()
        return Markup('<img class="out" alt="output image" src="data:image/svg+xml;base64,{}">')\
            .format(svg)  # fmt: skip
    if "text/html" in data and frame is not None:
        html = _text(data["text/html"])
        return Markup(
            '<iframe class="out html" sandbox loading="lazy" title="HTML output" '
            'height="{}" src="{}"></iframe>'
        ).format(frame_height(html), frame())
    for mime in ("text/markdown", "text/plain", "text/html", "application/json"):
        if mime in data:
            value = data[mime]
            text = value if isinstance(value, (str, list)) else json.dumps(value, indent=1)
            return Markup('<pre class="out">{}</pre>').format(_text(text))
    return Markup('<p class="muted">(output of type {} not shown)</p>').format(
        ", ".join(sorted(data)) or "none"
    )


def frame_height(html: str) -> int:
    """Pixels for an HTML output's frame, from its rows and lines (it cannot tell us: no
    script runs in it); the reader can drag it taller."""
    rows = len(re.findall(r"<tr[\s>]", html, re.I))
    lines = len(re.findall(r"<(?:br|p|li|div|h[1-6])[\s>/]", html, re.I))
    return max(40, min(640, 24 + 27 * rows + 22 * lines))


def html_output(path: Path, cell: int, output: int) -> str | None:
    """The text/html of output ``output`` of cell ``cell`` in the notebook at ``path``."""
    data = json.loads(path.read_text(encoding="utf-8"))
    try:
        out = data["cells"][cell]["outputs"][output]
        html = out["data"]["text/html"]
    except (KeyError, IndexError, TypeError):
        return None
    text = "".join(str(v) for v in html) if isinstance(html, list) else str(html)
    return text[:MAX_FRAME]


FRAME_STYLE = """\
body { margin: 0; padding: 2px 4px; font: 13px/1.4 system-ui, -apple-system, "Segoe UI",
  Roboto, Helvetica, Arial, sans-serif; color: rgba(0, 0, 0, 0.87); background: #fff; }
table { border-collapse: collapse; border-spacing: 0; border: none; font-size: 12px;
  table-layout: fixed; margin-left: 0; margin-right: auto; }
thead { border-bottom: 1px solid #bdbdbd; vertical-align: bottom; }
td, th, tr { text-align: right; vertical-align: middle; padding: 0.5em; line-height: normal;
  white-space: normal; max-width: none; border: none; }
th { font-weight: bold; }
tbody tr:nth-child(odd) { background: #fff; }
tbody tr:nth-child(even) { background: #f5f5f5; }
tbody tr:hover { background: rgba(66, 165, 245, 0.2); }
.dataframe { margin-bottom: 4px; }
pre, code { font: 12px/1.35 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
img { max-width: 100%; }
"""


def frame_document(html: str) -> str:
    """An HTML output as the document its sandboxed frame loads."""
    return (
        '<!doctype html>\n<html><head><meta charset="utf-8"><style>'
        + FRAME_STYLE
        + "</style></head><body>\n"
        + html
        + "\n</body></html>\n"
    )
