"""The entry points that change runs, called by the service alone: begin, run, advance
(``lifecycle``; what an advance runs with is one frozen ``RunOptions``, ``options``);
approve, reject, edit, accept, manage, read, rerun, cancel (``decisions``); delete_runs,
gc (``housekeeping``); publish (``publish``).

``advance`` is the only one that runs phases. Every entry point that changes a run takes
that run's lock (``handle.held``: a caller meeting an advancing holder gets ``Busy`` naming
it at once; one meeting a brief holder, a decision or a sandbox closing, waits a moment)
and, where a person looked at the run first, checks ``expect_revision``. Creating and
deleting runs take the Flow's lock, briefly: nothing holds it while a phase runs, so the
runs of one flow advance, and are decided, independently.
"""

from __future__ import annotations

from ...errors import Refused as Refused
from ..store.handle import RunHandle as RunHandle
from .binding import Unbound as Unbound
from .decisions import EDIT_CHOICES as EDIT_CHOICES
from .decisions import EditsAtRisk as EditsAtRisk
from .decisions import accept as accept
from .decisions import approve as approve
from .decisions import cancel as cancel
from .decisions import edit as edit
from .decisions import manage as manage
from .decisions import note_refusal as note_refusal
from .decisions import read as read
from .decisions import reject as reject
from .decisions import rerun as rerun
from .housekeeping import delete_runs as delete_runs
from .housekeeping import gc as gc
from .lifecycle import advance as advance
from .lifecycle import begin as begin
from .lifecycle import check_definition as check_definition
from .lifecycle import confined as confined
from .lifecycle import default_sandbox as default_sandbox
from .lifecycle import flow_lock as flow_lock
from .lifecycle import load_flow as load_flow
from .lifecycle import recover as recover
from .lifecycle import run as run
from .options import RunOptions as RunOptions
from .options import SandboxFactory as SandboxFactory
from .publish import Outcome
from .publish import PublishIncomplete as PublishIncomplete
from .publish import publish as publish

PublishOutcome = Outcome  # what publish tells of each entry
