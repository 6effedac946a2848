"""Sandboxes opened before the click: `praxis serve` keeps the sandbox of a run that waits at
a Gate open while a reviewer looks at it, so that approving (or reopening) starts the next
phase at once instead of after a container start.

A warm sandbox belongs to one run (its container is labelled and its workspace mounted for
that run only) and is used by that run's next advance, once: it is never shared, and the
advance closes it as it closes any sandbox. At most ``keep`` are kept (the oldest is closed
first); ``close`` closes the rest. No code runs in a warm sandbox: its kernels wait dormant,
out of reach, until the runner hands one out (``sandbox/standby.py``).
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections import OrderedDict
from functools import partial
from pathlib import Path

from praxis.flows.store.handle import RunHandle
from praxis.service.acting import Opening, SandboxFactory

log = logging.getLogger("praxis")

Key = tuple[str, str]  # (flow folder, run id)


class WarmSandboxes:
    def __init__(self, make_sandbox: SandboxFactory, *, keep: int = 1) -> None:
        self.make_sandbox = make_sandbox
        self.keep = max(0, int(keep))
        self._open: OrderedDict[Key, Opening] = OrderedDict()
        self._lock = threading.Lock()
        self._closed = False

    def prepare(self, run: RunHandle) -> None:
        """Start opening ``run``'s sandbox now (it returns at once), unless one is open."""
        key = (str(run.flow.root), run.id)
        with self._lock:
            if self._closed or self.keep == 0:
                return
            stale = self._open.pop(key, None)
            if stale is not None and stale.usable():
                self._open[key] = stale  # open already (or opening)
                return
            self._open[key] = Opening(partial(self.make_sandbox, run.flow, run))
            kinds = sorted({phase.kind for phase in run.flow.phases})
            threading.Thread(
                target=_load_executors, args=(kinds,), name="executors-load", daemon=True
            ).start()
            extra = [self._open.popitem(last=False)[1] for _ in range(len(self._open) - self.keep)]
        for opening in [stale, *extra]:
            if opening is not None:
                _close_later(opening)

    def take(self, flow: Path, run_id: str) -> Opening | None:
        """The run's warm sandbox, for its advance to use (and close); None if there is none
        or it can no longer run code (another process advanced the run and removed it)."""
        with self._lock:
            opening = self._open.pop((str(flow), run_id), None)
        if opening is None:
            return None
        if not opening.usable():
            _close_later(opening)
            return None
        return opening

    def ready(self, flow: Path, run_id: str) -> bool:
        """Whether the run's warm sandbox is open (its kernels may still be starting)."""
        with self._lock:
            opening = self._open.get((str(flow), run_id))
        return opening is not None and opening.opened()

    def close(self) -> None:
        """Close every warm sandbox (the server stops). Idempotent."""
        with self._lock:
            self._closed = True
            openings = list(self._open.values())
            self._open.clear()
        for opening in openings:
            _quietly_abandon(opening)


def _load_executors(kinds: list[str]) -> None:
    """Import what the run's next advance imports first (the phase steps, nbformat, the
    executors of its kinds), so that the click does not wait for it either."""
    try:
        importlib.import_module("praxis.flows.engine.phase")
        from praxis.flows.definition import kinds as phase_kinds
        from praxis.flows.store.record import prepare_validator

        prepare_validator()  # the records' validator, built now rather than beside the phase
        for kind in kinds:
            phase_kinds.get(kind).load()
    except Exception:  # the advance imports them again and says what is wrong
        log.debug("loading the executors ahead of a click", exc_info=True)


def _close_later(opening: Opening) -> None:
    threading.Thread(
        target=_quietly_abandon, args=(opening,), name="sandbox-close", daemon=True
    ).start()


def _quietly_abandon(opening: Opening) -> None:
    try:
        opening.abandon()
    except Exception:  # a sandbox that failed to open has nothing to close
        log.debug("closing a warm sandbox", exc_info=True)
