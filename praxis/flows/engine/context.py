"""What the runner hands a phase executor.

The runner does steps 1-3 and 5-7 of a phase (DESIGN.md §5); an executor does step 4:
it runs the phase's code in ``ctx.kernel``. Executors live in ``praxis/phases/`` and are
chosen by ``Phase.kind``. What an executor leaves is files: in the workspace, or in
``ctx.staging`` (``write_output``); the runner collects both. An executor raises
``PhaseError`` (or lets a sandbox error through) to fail the phase; the runner records it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import PraxisError
from ..model.flow import Flow, Phase

if TYPE_CHECKING:  # a Record needs nbformat: loaded where phases run
    from sandbox import Kernel, Sandbox

    from ..model.events import Event
    from ..store.record import Record

# Takes one short text for a person watching: a status line, or a piece of what a phase prints
# (a ``live.Output``). Not an ``Event``: those go to ``on_event`` listeners and events.jsonl.
OnMessage = Callable[[str], None]


class PhaseError(PraxisError):
    """Raised by an executor when the phase's code failed; the message names what and where."""


@dataclass
class PhaseContext:
    flow: Flow
    phase: Phase
    run_id: str
    attempt: int
    run_dir: Path
    sandbox: Sandbox
    kernel: Kernel
    timeout: float  # seconds for one execute
    emit: Callable[[Event], None]  # append an event to the run's log
    record: Record  # the phase's record notebook, filled as code runs
    staging: Path  # host folder: files an executor writes itself (write_output) go here
    note: str | None = None  # the reviewer's note when a Gate reopened this phase
    params: dict[str, Any] = field(default_factory=dict)  # the run's parameters
    on_message: OnMessage = lambda message: None
    # (stream, text) as the phase's code prints it: the runner writes runs/<run>/live/<phase>.log
    live: Callable[[str, str], None] = lambda stream, text: None
    # Tell the runner the phase now waits on something a restart would lose ("approval"),
    # or no longer does (None). The runner persists it in run.json.
    waiting: Callable[[str | None], None] = lambda what: None
    # What the caller of the run gave phases of this kind (an agent's chat model and approver:
    # ``praxis.llm.given``), handed over untouched: the engine knows neither.
    given: object = None
