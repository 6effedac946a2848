"""``praxis serve``'s keeper: a thread that tends every flow it serves, once a second.

Each look finds the flows below the root (as the index page does), and for each with a
``schedule:``, a ``trigger:`` or a Gate ``deadline:`` calls ``keeper.tend``; a run it starts
is advanced in the server's background (``Advancer``) as a run begun on the page is. A flow
that does not load, a record that cannot be trusted, a Busy lock: logged, tried again next
look (said once, until it changes). A flow.yaml is read again only when it changed. The
time is the keeper's clock (``$PRAXIS_TEST_CLOCK`` in tests), the wait between
looks real (``INTERVAL``): a tick is started on the first look at or after its time.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from praxis.flows.definition import contract
from praxis.flows.engine.notify import Notifier
from praxis.flows.model.flow import Flow
from praxis.service import keeper

from .background import Advancer
from .catalog import find_flows

log = logging.getLogger(__name__)
INTERVAL = 1.0  # seconds between looks


class KeeperLoop:
    def __init__(
        self,
        root: Path,
        advancer: Advancer,
        *,
        clock: keeper.Clock,
        notifier: Notifier | None = None,
        interval: float = INTERVAL,
    ) -> None:
        self.root = root
        self.advancer = advancer
        self.clock = clock
        self.notifier = notifier
        self.interval = interval
        self._stop = threading.Event()
        self._flows: dict[str, tuple[tuple[int, int], Flow | None]] = {}  # ref: (stat, flow)
        self._said: dict[str, str] = {}  # ref: the trouble last logged
        self._thread = threading.Thread(target=self._loop, name="praxis-keeper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.look()
            self._stop.wait(self.interval)

    def look(self) -> list[keeper.Started]:
        started: list[keeper.Started] = []
        for ref in find_flows(self.root):
            if self._stop.is_set():
                break
            flow = self._flow(ref)
            if flow is None or not keeper.kept(flow):
                continue
            try:
                started += keeper.tend(
                    flow, clock=self.clock, start=self._begin, notifier=self.notifier
                )
            except Exception as exc:  # one flow's trouble never stops the others
                said = f"{type(exc).__name__}: {exc}"
                if self._said.get(ref) != said:
                    log.warning("keeper: %s: %s", ref, said)
                self._said[ref] = said
            else:
                self._said.pop(ref, None)
        return started

    def _flow(self, ref: str) -> Flow | None:
        """The flow ``ref``, read again only when its flow.yaml changed."""
        folder = self.root.resolve() / ref
        try:
            st = (folder / "flow.yaml").lstat()
        except OSError:
            return None
        key = (st.st_mtime_ns, st.st_size)
        known = self._flows.get(ref)
        if known is None or known[0] != key:
            known = self._flows[ref] = (key, contract.load(folder)[0])
        return known[1]

    def _begin(self, flow: Flow, params: dict[str, str]) -> str:
        run_id = keeper.begin(flow, params)
        self.advancer.start(flow.root, run_id)
        return run_id
