"""A phase's printed output as it runs: ``runs/<run>/live/<phase>.log``, and the terminal.

The file is plain UTF-8 text, appended as stdout/stderr arrive (both streams, in order), and
started afresh by each attempt. It stops growing at ``LIMIT`` bytes with one marker line:
the record keeps the phase's output; this file is for watching it run (`praxis log
--follow`, the reviewer's page). Each piece is also handed to the run's ``on_message``
callable as an ``Output``, a ``str`` that says which stream it came from.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from sandbox.files import open_nofollow

from .layout import RunPaths

log = logging.getLogger("praxis")

LIMIT = 1 << 20  # bytes of live output kept per phase attempt
SHOWN = 64 << 10  # characters of it forwarded to the terminal per phase attempt
SHOWN_MARKER = (
    "\n[praxis: more output than the terminal shows (64 KiB); the record and "
    "runs/<run>/live/<phase>.log have it]\n"
)
MARKER = "\n[praxis: live output stops here at 1 MiB; the record holds the phase's output]\n"
FLAGS = os.O_WRONLY | os.O_CREAT | os.O_APPEND


class Output(str):
    """A piece of a phase's printed output, handed to ``on_message``; ``stream`` is its name."""

    stream: str = "stdout"

    def __new__(cls, text: str, stream: str = "stdout") -> Output:
        self = super().__new__(cls, text)
        self.stream = stream
        return self


def path(run_dir: Path, phase_id: str) -> Path:
    """Where the live output of ``phase_id`` goes."""
    return RunPaths(run_dir).live(phase_id)


class LiveLog:
    """``(stream, text)`` -> appended to the file (up to ``limit`` bytes) and forwarded.

    Writing never fails the phase: an unwritable file is logged once and skipped.
    """

    def __init__(
        self, file: Path, forward: Callable[[str], None] | None = None, *, limit: int = LIMIT
    ) -> None:
        self.file = file
        self.forward = forward
        self.limit = limit
        self.written = 0
        self.shown = 0
        self.full = False
        self.broken = False
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            file.unlink(missing_ok=True)  # a new attempt starts an empty log
            os.close(open_nofollow(file, FLAGS, 0o644))
        except OSError as exc:
            self._broke(exc)

    def __call__(self, stream: str, text: str) -> None:
        if not text:
            return
        self._append(text)
        if self.forward is not None and self.shown < SHOWN:
            piece = text[: SHOWN - self.shown]
            self.shown += len(piece)
            if self.shown >= SHOWN:
                piece += SHOWN_MARKER
            self.forward(Output(piece, stream))

    def _append(self, text: str) -> None:
        if self.full or self.broken:
            return
        data = text.encode("utf-8", "replace")
        room = self.limit - self.written
        if len(data) > room:
            data = data[: max(room, 0)].decode("utf-8", "ignore").encode("utf-8")
            data += MARKER.encode("utf-8")
            self.full = True
        try:
            fd = open_nofollow(self.file, FLAGS, 0o644)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        except OSError as exc:
            self._broke(exc)
            return
        self.written += len(data)

    def _broke(self, exc: OSError) -> None:
        self.broken = True
        log.warning("live output of %s not written: %s", self.file, exc)


def writer(run_dir: Path, phase_id: str, forward: Callable[[str], None]) -> LiveLog:
    """The live writer of one phase attempt (PhaseContext.live)."""
    return LiveLog(path(run_dir, phase_id), forward)
