"""The run's own sandbox, opened only when a phase needs it (DESIGN.md §17).

A fan-out phase runs each partition in a sandbox of its own and never runs code in the run's
sandbox: an advance whose next phase is a fan-out makes that sandbox (its workspace folder,
which the phases' snapshots read) but opens it only when a later phase asks (``need``), so
no container or kernel starts that no partition uses. A sandbox opened ahead (an
``Opening``: ``praxis run``, ``praxis serve``) is used as it is.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import Sandbox

from .opening import Opening


class MainBox:
    """The run's sandbox: ``box`` (made; open once ``opened``), ``need()`` opens it."""

    def __init__(
        self,
        make: Callable[[], Sandbox],
        opening: Opening | None,
        *,
        lazy: bool,
        on_open: Callable[[Sandbox], None],
    ) -> None:
        self._on_open = on_open
        self.opened = False
        if opening is None and lazy:
            self.box = make()  # not opened: SandboxUnavailable, if any, when a phase needs it
            return
        self.box = (opening or Opening(make)).box()
        self._now_open()

    def need(self) -> Sandbox:
        """The sandbox, open (opened now if it was not)."""
        if not self.opened:
            self.box.open()
            self._now_open()
        return self.box

    def _now_open(self) -> None:
        self.opened = True
        self._on_open(self.box)
