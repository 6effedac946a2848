"""A CSV/TSV profile for a prompt, within a budget of rows, bytes and time.

The rows are read as a stream (``praxis.flows.store.csvread``: lines, records and fields bounded),
at most ``ROWS`` of them, ``BYTES`` of text and ``SECONDS`` of reading; pandas then types
the columns of what was read. The file's rows are counted by newlines, in fixed-size reads.
A file past a bound is profiled from the rows read, saying so; one whose lines or records are
past csvread's bounds is reported, never loaded.
"""

from __future__ import annotations

import csv
import io
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from praxis.flows.store import csvread

ROWS = 10_000  # data rows a profile reads
BYTES = 8 << 20  # characters of rows a profile reads
SECONDS = 5.0  # of reading, whatever the phase's timeout
COLUMNS = 200  # columns a profile shows


@dataclass
class Sample:
    header: list[str]
    rows: list[list[str]]
    complete: bool  # every row of the file was read
    why: str = ""  # the budget that stopped the read


def sample(path: Path, *, rows: int = ROWS, chars: int = BYTES, seconds: float = SECONDS) -> Sample:
    """The header and the first rows of a table, within the budget."""
    deadline = time.monotonic() + seconds
    found: list[list[str]] = []
    used = 0
    with csvread.opened(path) as fh, closing(csvread.records(fh, path.name)) as records:
        header = next(records, [])
        for row in records:
            if len(found) >= rows:
                return Sample(header, found, False, f"the first {rows:,} rows")
            used += sum(len(cell) + 1 for cell in row)
            if used > chars:
                return Sample(header, found, False, f"the first {chars >> 20} MiB")
            if time.monotonic() > deadline:
                return Sample(header, found, False, f"what {seconds:g} s of reading gave")
            found.append(row)
    return Sample(header, found, True)


def profile(path: Path, shown: int = 5) -> str:
    """Rows, columns, dtypes, nulls and ``shown`` sample rows of a CSV/TSV, within budget."""
    import pandas as pd

    try:
        got = sample(path)
    except (csvread.Unreadable, OSError) as exc:
        return f"could not be read as a table ({exc})"
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(got.header)
    writer.writerows(row[: len(got.header)] for row in got.rows)
    text.seek(0)
    try:
        frame = pd.read_csv(text)
    except Exception as exc:  # a malformed file is reported to the model, not fatal
        return f"could not be read as a table ({type(exc).__name__}: {exc})"
    rows = len(got.rows) if got.complete else max(_newlines(path) - 1, len(got.rows))
    cols = frame.shape[1]
    header = "| column | dtype | nulls |\n|---|---|---|"
    lines = [
        f"| {c} | {frame[c].dtype} | {int(frame[c].isna().sum())} |"
        for c in frame.columns[:COLUMNS]
    ]
    if cols > COLUMNS:
        lines.append(f"| ... {cols - COLUMNS:,} more columns | | |")
    sample_text = frame.head(shown).iloc[:, :COLUMNS].to_csv(index=False).strip()
    note = "" if got.complete else f" (profiled from {got.why}: {len(got.rows):,} rows)"
    return (
        f"{rows:,} rows, {cols} columns{note}\n\n{header}\n"
        + "\n".join(lines)
        + f"\n\nFirst {min(len(got.rows), shown)} rows:\n```\n{sample_text}\n```"
    )


def _newlines(path: Path) -> int:
    count = 0
    with csvread.opened(path) as fh:
        while chunk := fh.read(1 << 20):
            count += chunk.count(b"\n")
    return count
