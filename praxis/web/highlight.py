"""Code and terminal text as coloured HTML, and the one stylesheet both need.

Source is highlighted by Pygments (IPython's lexer, so ``%magics`` read right); ANSI escapes in
streams and tracebacks become classes by ansi2html (escaping the text), never inline styles,
so the page's content security policy holds. Escapes ansi2html does not colour (hyperlinks,
cursor moves, titles) are removed, and any control character left is dropped: the text comes
from phase code. The colours are JupyterLab's.
"""

from __future__ import annotations

import re
from functools import cache

from markupsafe import Markup

PYGMENTS_STYLE = "default"
# SGR colour escapes ansi2html turns into classes; every other escape is dropped first
OTHER_ESCAPES = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC (hyperlinks, titles)
    r"|\x1b\[[0-9;?]*[A-Za-ln-z]"  # CSI but SGR (cursor moves, erases)
    r"|\x1b[^\[\]]"  # two-character escapes
)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# JupyterLab's ANSI palette (normal, then intense): black red green yellow blue magenta cyan white
NORMAL = ("#3e424d", "#e75c58", "#00a250", "#ddb62b", "#208ffb", "#d160c4", "#60c6c8", "#c5c1b4")
INTENSE = ("#282c36", "#b22b31", "#007427", "#b27d12", "#0065ca", "#a03196", "#258f8f", "#a1a6b2")


@cache
def _lexer() -> object:
    try:
        from ipython_pygments_lexers import IPython3Lexer

        return IPython3Lexer()
    except ImportError:  # IPython's lexers ship with IPython; without them, plain Python
        from pygments.lexers import PythonLexer

        return PythonLexer()


@cache
def _formatter() -> object:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(nowrap=True, style=PYGMENTS_STYLE)


def code(source: str) -> Markup:
    """``source`` as highlighted HTML (spans inside the caller's ``<pre>``)."""
    from pygments import highlight

    return Markup(highlight(source, _lexer(), _formatter()))


@cache
def _converter() -> object:
    from ansi2html import Ansi2HTMLConverter

    return Ansi2HTMLConverter(inline=False, escaped=True, linkify=False)


def terminal(text: str) -> Markup:
    """Text with ANSI colour escapes as escaped HTML with ansi2html's classes."""
    text = OTHER_ESCAPES.sub("", text)
    if "\x1b" not in text:
        return Markup.escape(CONTROL.sub("", text))
    html = _converter().convert(text, full=False)  # type: ignore[attr-defined]
    return Markup(CONTROL.sub("", str(html)))


@cache
def stylesheet() -> str:
    """Pygments' classes under ``.highlight`` and ansi2html's under ``.ansi``: served at
    ``/notebook.css``."""
    from ansi2html.style import get_styles
    from pygments.formatters import HtmlFormatter

    rules = [HtmlFormatter(style=PYGMENTS_STYLE).get_style_defs(".highlight")]
    for rule in get_styles(dark_bg=False, line_wrap=True, scheme="xterm"):
        text = str(rule).strip()
        if text.startswith((".ansi", ".inv")) and not text.startswith(".ansi2html"):
            rules.append(".ansi " + text)
    for base, palette in ((30, NORMAL), (90, INTENSE)):
        for i, colour in enumerate(palette):
            rules.append(f".ansi .ansi{base + i} {{ color: {colour}; }}")
            rules.append(f".ansi .ansi{base + 10 + i} {{ background-color: {colour}; }}")
    return "\n".join(rules) + "\n"
