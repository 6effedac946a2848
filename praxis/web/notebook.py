"""A record notebook as HTML without nbconvert: code, text, images, and HTML kept in a box.

HTML outputs (a DataFrame's table, a model's markup) come from code that ran in the sandbox:
they are shown in an ``<iframe sandbox srcdoc=...>`` with no scripts and a unique origin, so
they cannot reach the reviewer's page, its cookie or its forms. Everything else is escaped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif")
MAX_TEXT = 200_000


@dataclass
class Cell:
    kind: str  # code | markdown | raw
    source: str
    count: int | None = None
    outputs: list[Markup] = field(default_factory=list)
    failure: bool = False


@dataclass
class Notebook:
    cells: list[Cell]
    metadata: dict[str, Any]


def load(path: Path) -> Notebook:
    data = json.loads(path.read_text(encoding="utf-8"))
    cells = [_cell(c) for c in data.get("cells", [])]
    meta = data.get("metadata", {}).get("praxis", {})
    return Notebook(cells=cells, metadata=meta if isinstance(meta, dict) else {})


def _text(value: Any) -> str:
    text = "".join(value) if isinstance(value, list) else str(value or "")
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT] + f"\n... [{len(text) - MAX_TEXT} more characters not shown]"
    return text


def _cell(data: dict[str, Any]) -> Cell:
    kind = str(data.get("cell_type", "raw"))
    meta = data.get("metadata", {}).get("praxis", {}) or {}
    cell = Cell(kind=kind, source=_text(data.get("source")), failure=bool(meta.get("failure")))
    if kind == "code":
        cell.count = data.get("execution_count")
        cell.outputs = [render_output(o) for o in data.get("outputs", [])]
    return cell


def render_output(out: dict[str, Any]) -> Markup:
    kind = out.get("output_type")
    if kind == "stream":
        name = "stderr" if out.get("name") == "stderr" else "stdout"
        return Markup('<pre class="out {}">{}</pre>').format(name, _text(out.get("text")))
    if kind == "error":
        trace = ANSI.sub("", "\n".join(out.get("traceback") or []))
        head = f"{out.get('ename', 'Error')}: {out.get('evalue', '')}"
        return Markup('<pre class="out error">{}</pre>').format(trace or head)
    if kind in ("execute_result", "display_data"):
        return _rich(out.get("data") or {})
    return Markup("")


def _rich(data: dict[str, Any]) -> Markup:
    for mime in IMAGE_TYPES:
        if mime in data:
            b64 = re.sub(r"\s", "", _text(data[mime]))
            if re.fullmatch(r"[A-Za-z0-9+/=]*", b64):
                tag = '<img class="out" alt="output image" src="data:{};base64,{}">'
                return Markup(tag).format(mime, b64)
    if "text/html" in data:
        return Markup(
            '<iframe class="out html" sandbox title="HTML output" srcdoc="{}"></iframe>'
        ).format(_text(data["text/html"]))
    for mime in ("text/markdown", "text/plain", "application/json"):
        if mime in data:
            value = data[mime]
            text = value if isinstance(value, (str, list)) else json.dumps(value, indent=1)
            return Markup('<pre class="out">{}</pre>').format(_text(text))
    return Markup('<p class="muted">(output of type {} not shown)</p>').format(
        ", ".join(sorted(data)) or "none"
    )
