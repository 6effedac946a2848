"""How the reviewer UI answers an error of a form: one HTTP status per branch of the error
tree (``praxis.errors``) and a sentence for the person. Nothing was changed in every case.
"""

from __future__ import annotations

import re

from markupsafe import Markup, escape

from praxis.errors import PraxisError, RecordCorrupt, Refused, UsageError
from praxis.flows.store.lock import Busy
from sandbox.errors import PathRefused

from .catalog import NotFound


class RequestRefused(Refused):
    """Raised by a page's action for a form it turns down (nothing to save, no note)."""


class TokenRefused(RequestRefused):
    """Raised when a form's security token is missing or old."""


# The most specific class of the error that is a key here gives the status.
STATUS: dict[type[BaseException], int] = {
    TokenRefused: 403,
    NotFound: 404,
    UsageError: 400,
    Busy: 409,
    Refused: 409,
    RecordCorrupt: 409,
    PathRefused: 409,
    PraxisError: 500,
}


def status_of(exc: PraxisError | PathRefused) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def sentence(exc: PraxisError | PathRefused, expect: int | None) -> str:
    """What the page says: the error's words, with what to do where that is known."""
    if isinstance(exc, RequestRefused):
        return str(exc)
    if isinstance(exc, Busy):
        return f"Not done: another process is working on this run now ({exc}). Try again soon."
    if isinstance(exc, PathRefused):
        return f"Not done: {exc.reason}"
    if isinstance(exc, Refused) and exc.revision is not None and expect is not None:
        if exc.revision != expect:
            return (
                f"Not done: this run changed since this page was shown (the page showed revision "
                f"{expect}, the run is now at revision {exc.revision}). Nothing was changed. "
                "Look at the run as it is now below, then try again."
            )
    return f"Not done: {exc}"


ONE = r"\d+(?: \(line \d+\))?"
ROWS = re.compile(rf"\b(rows? )({ONE}(?:, {ONE})*)")
ROW = re.compile(r"(\d+)( \(line \d+\))?")


def row_links(text: str) -> Markup:
    """The refusal's text, escaped, each data row a check names ("rows 3, 7", "data rows
    3 (line 4), 7 (line 9)") a link that shows that row in the table."""
    out, pos = [], 0
    for m in ROWS.finditer(text):
        out.append(escape(text[pos : m.start(2)]))
        links = [Markup('<a href="#" class="goto" data-row="{0}">{0}</a>{1}').format(
                     int(one.group(1)), one.group(2) or "")
                 for one in ROW.finditer(m.group(2))]  # fmt: skip
        out.append(Markup(", ").join(links))
        pos = m.end(2)
    out.append(escape(text[pos:]))
    return Markup("").join(out)
