"""What the CLI shows while a run advances: which phase, how long, what it wrote."""

from __future__ import annotations

import itertools
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from . import units
from .flows.model import events as ev
from .flows.model.state import STOPPED
from .flows.store import csvread
from .flows.store.live import Output, path
from .terminal import escape

if TYPE_CHECKING:  # the event types load with the first event: `praxis status` needs none
    from .flows.model import events as ev

OUTPUT_INDENT = "    "  # a phase's printed output, under its phase line
PARTIAL_LIMIT = 4096  # characters of an unfinished output line held back


class Progress:
    """Prints one line per event that matters; on a terminal, a live elapsed-time line."""

    def __init__(
        self, total: int, phases: list[str], out: TextIO | None = None, *, quiet: bool = False
    ) -> None:
        self.out = out or sys.stderr
        self.total = total
        self.phases = phases
        self.quiet = quiet  # hide what phases print
        self._partial = ""  # printed output not yet ended by a newline
        self.tty = self.out.isatty()
        self._current: str | None = None
        self._since = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __call__(self, event: ev.Event) -> None:
        with self._lock:
            self._clear()
            self._flush_output()  # an unfinished output line goes before the event's line
            if isinstance(event, ev.PhaseStarted):
                n = self.phases.index(event.phase) + 1 if event.phase in self.phases else "?"
                again = f", attempt {event.attempt}" if event.attempt > 1 else ""
                self._line(f"▶ {event.phase} ({n}/{self.total}{again})")
                self._current, self._since = event.phase, time.monotonic()
            elif isinstance(event, ev.SandboxOpened):
                note = "" if event.isolated else f"  (NOT isolated: {event.backend} kernels)"
                self._line(f"  sandbox: {event.backend}{note}")
            elif isinstance(event, ev.FilesCollected):
                wrote = ", ".join(f"output/{escape(n)}" for n in event.outputs)
                wrote = wrote or "no declared outputs"
                extra = f" (+{len(event.scratch)} in scratch/)" if event.scratch else ""
                self._line(f"  wrote {wrote}{extra}")
            elif isinstance(event, ev.PhaseDone):
                self._line(f"✓ {event.phase} done in {event.seconds:.1f} s")
                self._current = None
            elif isinstance(event, ev.PhaseFailed) and event.error == STOPPED:
                self._line(f"■ {event.phase} cancelled after {event.seconds:.1f} s")
                self._current = None
            elif isinstance(event, ev.PhaseFailed):
                error = escape(event.error)
                self._line(f"✗ {event.phase} failed after {event.seconds:.1f} s: {error}")
                self._current = None
            elif isinstance(event, ev.PhaseRetrying):
                self._line(
                    f"↻ {event.phase}: {event.cause.replace('_', ' ')}; retrying in "
                    f"{event.backoff:g} s ({event.number} of {event.of}), from its recorded "
                    "pre-state"
                )
            elif isinstance(event, ev.PhaseReused) and event.source_run:
                self._line(
                    f"↺ {event.phase} reused from {event.source_run} (attempt "
                    f"{event.source_attempt}: nothing it reads changed)"
                )
            elif isinstance(event, ev.PhaseReused):
                self._line(
                    f"↺ {event.phase} reused (attempt {event.attempt}: nothing it reads changed)"
                )
            elif isinstance(event, ev.RunCancelled):
                self._line("■ run cancelled")
            elif isinstance(event, ev.SandboxEnded):
                ended = escape(", ".join(event.ended)) or "nothing left running"
                self._line(
                    f"! the process that advanced the run before (pid {event.owner}) was "
                    f"killed; its sandbox's watchdog ended {ended}"
                )

    def message(self, text: str) -> None:
        """The run's ``progress``: a phase's printed output (``live.Output``) is shown as it
        comes, indented under the phase line, escaped; other messages are not shown."""

        if self.quiet or not isinstance(text, Output):
            return
        with self._lock:
            lines = (self._partial + text).split("\n")
            self._partial = lines.pop()
            if len(self._partial) > PARTIAL_LIMIT:  # a long line without an end: show it now
                lines.append(self._partial)
                self._partial = ""
            if lines:
                self._clear()
            for line in lines:
                self._line(OUTPUT_INDENT + escape(line))

    def _flush_output(self) -> None:
        if self._partial:
            self._line(OUTPUT_INDENT + escape(self._partial))
            self._partial = ""

    def _line(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def _clear(self) -> None:
        if self.tty and self._current:
            self.out.write("\r\033[K")

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            with self._lock:
                if self._current and self.tty:
                    elapsed = time.monotonic() - self._since
                    self.out.write(f"\r\033[K  … {self._current} running {elapsed:.0f} s")
                    self.out.flush()

    def __enter__(self) -> Progress:
        self._ticker = threading.Thread(target=self._tick, daemon=True)
        self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._ticker:
            self._ticker.join(timeout=1)
        with self._lock:
            self._clear()
            self._current = None


PREVIEW_LINE = 64 << 10  # characters of one line a preview reads
PREVIEW_COLUMNS = 12  # columns a preview shows


def table_preview(path: Path, rows: int = 8, clip: int = 24, flagged: tuple[int, ...] = ()) -> str:
    """The first rows of a CSV/TSV as a text table, for a reviewer at a Gate; with
    ``flagged`` (1-based data rows a check names) those rows first, each with its number.

    Read with the csv module, not pandas: the preview is the only table work the CLI does,
    and a pandas import would cost more than the rest of the command. Bounded whatever the
    file: lines of at most PREVIEW_LINE characters, PREVIEW_COLUMNS columns shown, rows
    counted by newlines in fixed-size reads.
    """

    wanted = sorted(set(flagged))[:rows]
    try:
        with (
            csvread.opened(path) as fh,
            closing(csvread.records(fh, path.name, max_line=PREVIEW_LINE)) as found,
        ):
            table = list(itertools.islice(found, rows + 1))
            if wanted:
                table = _flagged_first(table, found, wanted, rows)
        total = _newlines(path) - 1
    except csvread.Unreadable as exc:
        return f"    (no preview: {escape(str(exc))})"
    except OSError as exc:  # a preview must never stop the CLI
        return f"    (no preview: {escape(str(exc))})"
    if not table:
        return "    (empty file)"
    wide = max(len(row) for row in table)
    cells = [[_clip(escape(cell), clip) for cell in row[:PREVIEW_COLUMNS]] for row in table]
    columns = max(len(row) for row in cells)
    cells = [row + [""] * (columns - len(row)) for row in cells]
    widths = [max(len(row[i]) for row in cells) for i in range(columns)]
    lines = [
        "    " + " ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in cells
    ]
    shown = len(cells) - 1
    more = [f"    … {total - shown} more rows"] if total > shown else []
    if wide > columns:
        more.append(f"    … {wide - columns} more columns")
    if wanted:
        lines.insert(1, f"    (rows a check flags first: {', '.join(map(str, wanted))})")
    return "\n".join(lines + more)


def _newlines(path: Path) -> int:
    count = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            count += chunk.count(b"\n")
    return count


def _flagged_first(
    first: list[list[str]], reader: Iterator[list[str]], wanted: list[int], rows: int
) -> list[list[str]]:
    """The header, then the ``wanted`` rows, then first rows up to ``rows``; each data row
    led by its number (one pass, stopping after the last wanted row)."""
    found = {n: row for n, row in enumerate(first[1:], start=1) if n in wanted}
    n = len(first) - 1
    for row in reader:
        if len(found) == len(wanted):
            break
        n += 1
        if n in wanted:
            found[n] = row
    picked = [n for n in wanted if n in found]
    picked += [n for n in range(1, len(first)) if n not in found][: rows - len(picked)]
    body = {**dict(enumerate(first[1:], start=1)), **found}
    return [["#", *first[0]]] + [[str(n), *body[n]] for n in picked]


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def format_event(event: ev.Event) -> str:
    """One human line for `praxis log`."""
    stamp = time.strftime("%H:%M:%S", time.localtime(event.at))
    fields = {k: v for k, v in event.__dict__.items() if k != "at"}
    detail = " ".join(f"{k}={escape(_short(_unit(k, v)))}" for k, v in fields.items())
    return f"{stamp} {event.kind:<16} {detail}"


def _unit(name: str, value: object) -> object:
    """A field's value in the units a person reads: seconds and byte counts."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and (name == "seconds" or name.endswith("_seconds")):
        return units.duration(float(value))  # type: ignore[arg-type]
    if number and isinstance(value, int) and (name == "bytes" or name.endswith("_bytes")):
        return units.size(value)
    return value


def _short(value: object) -> str:
    text = str(value)
    return text if len(text) <= 80 else text[:77] + "..."


class LiveTail:
    """`praxis log --follow`: the new text of the live logs of a run's running phases."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.offsets: dict[str, int] = {}
        self.partial: dict[str, str] = {}

    def lines(self, running: list[str]) -> list[str]:
        """Complete new lines of the phases running now (and of those followed so far)."""

        out: list[str] = []
        for phase in [*self.offsets, *(p for p in running if p not in self.offsets)]:
            file = path(self.run_dir, phase)
            offset = self.offsets.get(phase, 0)
            try:
                size = file.stat().st_size
                if size < offset:  # a new attempt started the log afresh
                    offset, self.partial[phase] = 0, ""
                with file.open("rb") as fh:
                    fh.seek(offset)
                    data = fh.read(min(size - offset, 1 << 20))
            except OSError:
                continue
            self.offsets[phase] = offset + len(data)
            text = self.partial.get(phase, "") + data.decode("utf-8", "replace")
            *done, self.partial[phase] = text.split("\n")
            if phase not in running and self.partial[phase]:  # the phase ended: show the rest
                done.append(self.partial[phase])
                self.partial[phase] = ""
            out += [OUTPUT_INDENT + escape(line) for line in done]
        return out
