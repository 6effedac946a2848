"""What an advance runs with: one frozen ``RunOptions``, made once by the service (from its
verbs' keywords) and handed whole to the lifecycle, the phase loop and each phase.

An option is added here and read where it is used; the layers between pass the object on.
What is per call rather than per advance stays beside it: the run (``run_id``), the clock,
``expect_revision``, a sandbox ``opening`` made ahead; and what only a new run takes
(``lifecycle.run``: params, managed, partitions). Who may act is the service's
(``praxis.service.authority``), never an option.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sandbox import Sandbox

from ..model.events import Event
from ..model.flow import Flow
from ..store.handle import RunHandle
from .context import OnMessage
from .retry import Sleep

if TYPE_CHECKING:
    from .notify import Notifier

SandboxFactory = Callable[[Flow, RunHandle], Sandbox]


def _quiet(message: str) -> None:
    """No one watching: a text for a person goes nowhere."""


@dataclass(frozen=True)
class RunOptions:
    """``make_sandbox`` (``(flow, run) -> Sandbox``; None: flow.yaml's ``sandbox:``, as the
    person allowed it), ``on_message`` (texts for a person: status lines, what phases print),
    ``on_event`` (each ``Event`` as it is recorded), ``given`` (what the phases of a kind are
    handed, by kind: an agent's model and approver, opaque here), ``reuse`` (False: stale
    phases run even when nothing they depend on changed), ``notifier`` (who is told when the
    run waits, fails or is done; None: from the environment), ``sleep`` (how a retry's
    backoff is waited: flow.yaml ``retries: {backoff:}``)."""

    make_sandbox: SandboxFactory | None = None
    on_message: OnMessage = _quiet
    on_event: Callable[[Event], None] | None = None
    given: Mapping[str, object] | None = None
    reuse: bool = True
    notifier: Notifier | None = None
    sleep: Sleep = time.sleep

    def given_to(self, kind: str) -> object:
        """What the phases of ``kind`` are handed (None: nothing)."""
        return (self.given or {}).get(kind)


DEFAULT = RunOptions()
