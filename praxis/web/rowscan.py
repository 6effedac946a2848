"""Where each record of a CSV/TSV starts and ends, found a window at a time with numpy.

A record ends at a newline with an even count of quotes before it (since the record began:
the same rule as ``csvedit.record_ends``, which every whole record keeps even), so the
ends are the newlines whose count of quotes from the file's start is even. Only one window
of bytes and the ends not yet taken are held at once.
"""

from __future__ import annotations

from typing import BinaryIO

import numpy as np

WINDOW = 1 << 20


class Spans:
    """The (starts, ends) of records from byte ``pos``, taken ``n`` at a time."""

    def __init__(self, fh: BinaryIO, pos: int, size: int) -> None:
        self.fh, self.pos, self.size = fh, pos, size
        self.read_to = pos  # bytes before this were scanned
        self.quotes = 0  # quotes scanned so far, from ``pos``
        self.ends = np.empty(0, np.int64)  # ends found and not taken
        self.start = pos  # where the next record starts
        fh.seek(pos)

    def take(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        while len(self.ends) < n and self.read_to < self.size:
            self._scan()
        ends, self.ends = self.ends[:n], self.ends[n:]
        starts = np.empty(len(ends), np.int64)
        if len(ends):
            starts[0] = self.start
            starts[1:] = ends[:-1]
            self.start = int(ends[-1])
        return starts, ends

    def _scan(self) -> None:
        data = self.fh.read(min(WINDOW, self.size - self.read_to))
        if not data:
            raise OSError("the table shrank while it was being read")
        buf = np.frombuffer(data, np.uint8)
        newlines = np.flatnonzero(buf == 0x0A)
        quotes = np.flatnonzero(buf == 0x22)
        before = self.quotes + np.searchsorted(quotes, newlines)
        found = newlines[before % 2 == 0].astype(np.int64) + self.read_to + 1
        self.quotes += len(quotes)
        self.read_to += len(data)
        self.ends = np.concatenate([self.ends, found])
        last = int(self.ends[-1]) if len(self.ends) else self.start
        if self.read_to >= self.size and last < self.size:
            self.ends = np.append(self.ends, self.size)  # a last record without a newline


def longest(fh: BinaryIO, pos: int, size: int) -> int:
    """The length in bytes of the longest record from ``pos``: one pass, a window at a time."""
    spans, most = Spans(fh, pos, size), 0
    while True:
        starts, ends = spans.take(1 << 16)
        if not len(ends):
            return most
        most = max(most, int((ends - starts).max()))
