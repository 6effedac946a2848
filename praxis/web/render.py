"""Markdown and event details as a reviewer reads them, safe against hostile text.

Markdown comes from phase outputs (a model may have written it): it is rendered with raw
HTML off (markdown-it-py escapes it), links limited to http(s), mailto and relative paths,
and images only from the run folder (a relative ``src`` becomes a ``/file`` URL of the run;
any other source is dropped and its alt text shown).

Rendering is bounded in size and time: a text longer than ``MAX_MARKDOWN`` characters is cut,
and a page's ``Budget`` gives all of its markdown ``MAX_SECONDS`` (markdown-it-py spends up
to 15 us a character on text such as ``![![![``, and 500 bytes a character on nested lists).
The budget is checked inside the parser, at every inline position and block line, so one
long cell cannot run past it: what is not rendered in time is shown as escaped text under a
line naming the cap; past ``MAX_PAGE_MARKDOWN`` characters a page names what it leaves out.
The pages are served from Starlette's thread pool, so the server answers other pages
meanwhile.
"""

from __future__ import annotations

import posixpath
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from markdown_it import MarkdownIt
from markupsafe import Markup

MAX_MARKDOWN = 512 * 1024  # characters of one text rendered as markdown
MAX_SECONDS = 1.0  # of markdown rendering for one page
MAX_PAGE_MARKDOWN = 8 * 1024 * 1024  # characters of markdown one page shows, rendered or not
HEX64 = re.compile(r"^[0-9a-f]{64}$")


@dataclass
class Budget:
    """The time one page may spend rendering markdown; ``clock`` is injectable for tests."""

    deadline: float
    clock: Callable[[], float] = time.monotonic
    room: int = MAX_PAGE_MARKDOWN  # characters the page may still show

    @classmethod
    def start(cls, clock: Callable[[], float] = time.monotonic) -> Budget:
        return cls(clock() + MAX_SECONDS, clock)

    def spent(self) -> bool:
        return self.clock() > self.deadline

    def take(self, text: str) -> bool:
        """Whether the page may show ``text``; its characters are counted if so."""
        if len(text) > self.room:
            self.room = 0
            return False
        self.room -= len(text)
        return True


class _Spent(Exception):
    """The page's budget ran out while a text was parsed."""


def _check_inline(state: Any, silent: bool) -> bool:
    if state.env["budget"].spent():
        raise _Spent
    return False  # never consumes: the other rules parse


def _check_block(state: Any, start: int, end: int, silent: bool) -> bool:
    if state.env["budget"].spent():
        raise _Spent
    return False


def _md() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False})
    md.enable("table")
    md.enable("strikethrough")
    md.block.ruler.before("table", "budget", _check_block)
    md.inline.ruler.before("text", "budget", _check_inline)
    return md


_MD = _md()


def markdown(
    text: str,
    *,
    flow: str,
    run: str,
    folder: str,
    attachments: dict[str, str] | None = None,
    budget: Budget | None = None,
) -> Markup:
    """``text`` as HTML; relative images and links resolve against ``folder`` of the run.
    ``attachments`` (a notebook cell's, name -> ``data:`` URL) are the ``attachment:NAME``
    images. ``budget`` is the page's (a fresh one when None); once it is spent, the text is
    shown escaped, under a line naming the cap."""
    if len(text) > MAX_MARKDOWN:
        text = text[:MAX_MARKDOWN] + "\n\n*[the rest of the file is not shown]*"
    budget = budget or Budget.start()
    if not budget.take(text):
        return Markup(
            '<p class="muted">Markdown of {:,} characters not shown: this page shows at most '
            "{} MiB of markdown (MAX_PAGE_MARKDOWN); download the file to read it.</p>"
        ).format(len(text), MAX_PAGE_MARKDOWN >> 20)
    try:
        tokens = _MD.parse(text, {"budget": budget})
    except _Spent:
        return as_text(text)
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


def as_text(text: str) -> Markup:
    """Markdown shown as its text, once the page's time for rendering is spent."""
    return Markup(
        '<p class="muted">Shown as text: this page renders at most {:g} s of markdown '
        "(MAX_SECONDS); download the file to read it rendered.</p><pre>{}</pre>"
    ).format(MAX_SECONDS, text)


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
