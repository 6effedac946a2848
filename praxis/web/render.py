"""Markdown and event details as a reviewer reads them, safe against hostile text.

Markdown comes from phase outputs (a model may have written it): it is rendered with raw
HTML off (markdown-it-py escapes it), links limited to http(s), mailto and relative paths,
and images only from the run folder (a relative ``src`` becomes a ``/file`` URL of the run;
any other source is dropped and its alt text shown).
"""

from __future__ import annotations

import posixpath
import re
from typing import Any
from urllib.parse import urlencode, urlsplit

from markdown_it import MarkdownIt
from markupsafe import Markup

MAX_MARKDOWN = 2 * 1024 * 1024
HEX64 = re.compile(r"^[0-9a-f]{64}$")


def _md() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False})
    md.enable("table")
    md.enable("strikethrough")
    return md


_MD = _md()


def markdown(
    text: str, *, flow: str, run: str, folder: str, attachments: dict[str, str] | None = None
) -> Markup:
    """``text`` as HTML; relative images and links resolve against ``folder`` of the run.
    ``attachments`` (a notebook cell's, name -> ``data:`` URL) are the ``attachment:NAME``
    images."""
    if len(text) > MAX_MARKDOWN:
        text = text[:MAX_MARKDOWN] + "\n\n*[the rest of the file is not shown]*"
    tokens = _MD.parse(text)
    for tok in tokens:
        for child in tok.children or []:
            src = str(child.attrGet("src") or "") if child.type == "image" else ""
            if src.startswith("attachment:") and src[11:] in (attachments or {}):
                child.attrSet("src", (attachments or {})[src[11:]])
            elif child.type == "image":
                _image(child, flow, run, folder)
            elif child.type == "link_open":
                _link(child, flow, run, folder)
    return Markup(_MD.renderer.render(tokens, _MD.options, {}))


def _local(src: str, folder: str) -> str | None:
    parts = urlsplit(src)
    if parts.scheme or parts.netloc or src.startswith(("/", "\\")) or not parts.path:
        return None
    path = posixpath.normpath(posixpath.join(folder, parts.path))
    return None if path.startswith("..") else path


def _image(tok: Any, flow: str, run: str, folder: str) -> None:
    path = _local(str(tok.attrGet("src") or ""), folder)
    if path is None:
        tok.type = "text"
        tok.tag = ""
        tok.content = f"[image not shown: {tok.content or 'an image from outside the run'}]"
        tok.children = None
        tok.attrs = {}
        return
    tok.attrSet("src", "/file?" + urlencode({"flow": flow, "run": run, "path": path}))


def _link(tok: Any, flow: str, run: str, folder: str) -> None:
    href = str(tok.attrGet("href") or "")
    if href.startswith("#"):
        return
    path = _local(href, folder)
    if path is not None:
        tok.attrSet("href", "/view?" + urlencode({"flow": flow, "run": run, "path": path}))
    elif urlsplit(href).scheme in ("http", "https", "mailto"):
        tok.attrSet("rel", "noopener noreferrer")
    else:
        tok.attrs.pop("href", None)


def short(value: Any) -> tuple[str, str]:
    """(what an events table shows, the full value for a tooltip) for one event field."""
    if isinstance(value, bool) or value is None:
        return str(value), ""
    if isinstance(value, float):
        return (f"{value:.2f}" if abs(value) < 1e6 else f"{value:.0f}"), repr(value)
    if isinstance(value, str):
        if HEX64.match(value):
            return value[:12] + "…", value
        if len(value) > 120:
            return value[:117] + "...", value[:4000]
        return value, ""
    if isinstance(value, dict):
        parts = [f"{k}: {short(v)[0]}" for k, v in value.items()]
        full = ", ".join(f"{k}: {v}" for k, v in value.items())
        text = "{" + ", ".join(parts) + "}"
        return (text if len(text) <= 200 else text[:197] + "...}"), full[:4000]
    if isinstance(value, list):
        parts = [short(v)[0] for v in value]
        text = "[" + ", ".join(parts) + "]"
        full = ", ".join(str(v) for v in value)
        return (text if len(text) <= 200 else text[:197] + "...]"), full[:4000]
    return str(value), ""
