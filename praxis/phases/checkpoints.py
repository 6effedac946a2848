"""Saving a running phase's record: often enough to watch it, rarely enough to cost little.

Before a cell runs, the record is saved if saving is due (at most ``SHARE`` of the phase's
time goes to saving, judged by what the last save cost). When it is not due, a timer saves
it once the cell has run ``SOON`` seconds, so a long cell is always seen running with every
cell before it. The timer runs only while the executor waits on the kernel and is joined
before the executor touches the record again.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from praxis.flows.store.record import Record

log = logging.getLogger("praxis")

SHARE = 0.1  # of the phase's time, at most, spent saving its record while it runs
SOON = 0.5  # seconds: a cell running longer than this is shown running


class Checkpoints:
    def __init__(
        self, record: Record, path: Path, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.record = record
        self.path = path
        self.clock = clock
        self.last = -math.inf  # when the last save ended
        self.cost = 0.0  # what it took

    def save(self) -> None:
        """Save now; a record that cannot be saved now is saved when the phase ends."""
        started = self.clock()
        try:
            self.record.checkpoint(self.path)
        except OSError as exc:
            log.warning("record %s not saved yet: %s", self.path, exc)
        self.last = self.clock()
        self.cost = self.last - started

    @property
    def wait(self) -> float:
        """Seconds between saves that keep their cost within SHARE."""
        return self.cost / SHARE

    @contextmanager
    def around(self) -> Iterator[None]:
        """Around one execution: save first if due, else once it has run a while."""
        if self.clock() - self.last >= self.wait:
            self.save()
            yield
            return
        timer = threading.Timer(max(SOON, self.wait), self.save)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
            timer.join()
