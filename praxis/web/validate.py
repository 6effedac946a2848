"""Every save from the reviewer's page passes here before it is written.

``check_save`` turns the submitted edit into the bytes to write, or refuses it with a reason
a person can act on (their draft stays on the page). Today it checks that a table still is
one: it parses in the file's own dialect, with the same header and as many fields in each
row. Checks that flow.yaml declares for an output (``checks:``) belong here too, run on the
bytes about to be written, so a save that breaks them is refused the same way.
"""

from __future__ import annotations

from pathlib import Path

from praxis.flows import checks
from praxis.flows.model import Flow

from . import tables


def text_save(path: Path, text: str) -> bytes:
    """The bytes of a whole-file text edit of ``path``; BadEdit when it may not be saved."""
    if tables.is_table(path.name):
        return tables.check_text(path, text)
    data = text.replace("\r\n", "\n")
    if _crlf(path):
        data = data.replace("\n", "\r\n")
    return data.encode("utf-8")


def cell_save(path: Path, cells: dict[tuple[int, int], str], version: str) -> bytes:
    """The bytes of a cell-level table edit; only the edited rows differ from the file."""
    return tables.apply_cells(path, cells, version)


def check_save(flow: Flow, phase: str, name: str, data: bytes) -> None:
    """flow.yaml's checks for output ``name`` of ``phase`` on the bytes about to be written.

    Raise ``tables.BadEdit`` with the failed check's message to refuse the save; the page
    shows it and keeps the reviewer's draft.
    """
    failures = checks.check_data(flow, flow.phase(phase), name, data, original=None)
    if failures:
        raise tables.BadEdit(checks.summary(failures))


def _crlf(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(65536)
    except OSError:
        return False
    return b"\r\n" in head
