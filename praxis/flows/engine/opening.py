"""A sandbox made and opened on its own thread, so that its container and kernel server start
while the runner does its own work (``runner.run``), or before a click (``praxis.web.warm``)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from sandbox import Sandbox


class Opening:
    """``make()`` then ``open()`` on their own thread: the backend's imports, the container and
    its kernel server, while the runner reads its state and imports the executors. ``box()``
    waits and raises what ``make`` or ``open`` raised; ``abandon()`` waits and closes (nothing
    leaks when the run stops first).
    """

    def __init__(self, make: Callable[[], Sandbox]) -> None:
        self._make = make
        self._box: Sandbox | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._open, name="sandbox-open", daemon=True)
        self._thread.start()

    def _open(self) -> None:
        try:
            self._box = self._make()
            self._box.open()
        except BaseException as exc:  # handed to the runner's thread by box()
            self._error = exc

    def box(self) -> Sandbox:
        try:
            self._thread.join()
        except BaseException:  # Ctrl-C while it opens: the container must not outlive us
            self.abandon()
            raise
        if self._error is not None:
            raise self._error
        assert self._box is not None
        return self._box

    def abandon(self) -> None:
        self._thread.join()
        if self._box is not None:
            self._box.close()

    def opened(self) -> bool:
        """True once the sandbox is open (False while it opens, or if it failed)."""
        return not self._thread.is_alive() and self._error is None

    def usable(self) -> bool:
        """False once it failed to open, or its sandbox can no longer run code."""
        if self._thread.is_alive():
            return True
        return self._error is None and self._box is not None and self._box.usable()
