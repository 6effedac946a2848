"""What the CLI shows while a run advances: which phase, how long, what it wrote."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import TextIO

from .flows import events as ev
from .flows.state import RunState


class Progress:
    """Prints one line per event that matters; on a terminal, a live elapsed-time line."""

    def __init__(self, total: int, phases: list[str], out: TextIO | None = None) -> None:
        self.out = out or sys.stderr
        self.total = total
        self.phases = phases
        self.tty = self.out.isatty()
        self._current: str | None = None
        self._since = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __call__(self, event: ev.Event) -> None:
        with self._lock:
            self._clear()
            if isinstance(event, ev.PhaseStarted):
                n = self.phases.index(event.phase) + 1 if event.phase in self.phases else "?"
                again = f", attempt {event.attempt}" if event.attempt > 1 else ""
                self._line(f"▶ {event.phase} ({n}/{self.total}{again})")
                self._current, self._since = event.phase, time.monotonic()
            elif isinstance(event, ev.SandboxOpened):
                note = "" if event.isolated else "  (NOT isolated: local kernels)"
                self._line(f"  sandbox: {event.backend}{note}")
            elif isinstance(event, ev.FilesCollected):
                wrote = ", ".join(f"output/{n}" for n in event.outputs) or "no declared outputs"
                extra = f" (+{len(event.scratch)} in scratch/)" if event.scratch else ""
                self._line(f"  wrote {wrote}{extra}")
            elif isinstance(event, ev.PhaseDone):
                self._line(f"✓ {event.phase} done in {event.seconds:.1f} s")
                self._current = None
            elif isinstance(event, ev.PhaseFailed):
                self._line(f"✗ {event.phase} failed after {event.seconds:.1f} s: {event.error}")
                self._current = None

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


def table_preview(path: Path, rows: int = 8) -> str:
    """The first rows of a CSV/TSV as a text table, for a reviewer at a Gate."""
    import pandas as pd

    sep = "\t" if path.suffix.lower() == ".tsv" else ","
    try:
        frame = pd.read_csv(path, sep=sep, nrows=rows)
        total = sum(1 for _ in path.open("rb")) - 1
    except Exception as exc:  # a preview must never stop the CLI
        return f"    (no preview: {exc})"
    text = frame.to_string(index=False, max_colwidth=24)
    more = f"\n    … {total - len(frame)} more rows" if total > len(frame) else ""
    return "\n".join("    " + line for line in text.splitlines()) + more


MARKS = {"done": "✓", "failed": "✗", "running": "▶", "stale": "~", "pending": "·"}


def timeline(state: RunState, width: int = 30) -> str:
    """The phases as rows of bars placed on the run's clock, for `praxis status`."""
    spans = [(p.started, p.ended or time.time()) for p in state.phases if p.started]
    t0 = min((a for a, _ in spans), default=0.0)
    total = max((b for _, b in spans), default=t0) - t0 or 1.0
    rows = []
    for p in state.phases:
        bar = ""
        if p.started is not None:
            start = int((p.started - t0) / total * width)
            end = max(start + 1, int(((p.ended or time.time()) - t0) / total * width))
            bar = " " * start + "█" * (end - start)
        secs = f"{p.seconds:.1f} s" if p.seconds is not None else ""
        note = p.error or (f"attempt {p.attempt}" if p.attempt > 1 else "")
        mark = MARKS.get(p.status, "?")
        rows.append(f"  {mark} {p.status:<8} {p.id:<18} {secs:>8}  {bar:<{width}}  {note}".rstrip())
    if state.waiting == "gate":
        rows.append(f"  ⏸ waiting at the Gate after {state.gate}")
    return "\n".join(rows)


def format_event(event: ev.Event) -> str:
    """One human line for `praxis log`."""
    stamp = time.strftime("%H:%M:%S", time.localtime(event.at))
    fields = {k: v for k, v in event.__dict__.items() if k != "at"}
    detail = " ".join(f"{k}={_short(v)}" for k, v in fields.items())
    return f"{stamp} {event.kind:<16} {detail}"


def _short(value: object) -> str:
    text = str(value)
    return text if len(text) <= 80 else text[:77] + "..."
