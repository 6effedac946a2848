"""``--discard-edits``: the Gate edits a re-run or reopen may replace, put back as their phases
wrote them.

The outputs of the phases after the one going back stay in place (a stale phase whose inputs
and definition did not change is restored by reuse rather than run), so discarding an edit is
not left to the next run of its phase: each edited output is put back now to the version its
phase wrote (an object of the flow's store, its content checked against its name), and the
state then records the phase's own hashes again (``state._rerun``). The edited versions stay
in the store and in ``edits/<phase>/<attempt>.json``. An edit whose phase's version is not in
the store is not put back: its phase runs again instead. The phase gone back to runs again
anyway: its files, edited ones included, are kept under ``attempts/`` as always.
"""

from __future__ import annotations

import re

from sandbox.files import hash_file

from ..model.machine import allows
from ..model.transitions import Rerun
from ..store.handle import RunHandle
from ..store.objects import RunStore
from . import collect

SHA = re.compile(r"[0-9a-f]{64}")


def put_back(run: RunHandle, back: Rerun) -> list[str]:
    """Put every output edited at a Gate of a phase after ``from_phase`` back as its phase
    wrote it, where the store holds that version intact; the outputs put back. Nothing when
    the run's state refuses ``back`` (a Rerun or a Reject) from there: the change that
    follows is refused, and no file may have moved for it."""
    state = run.state
    if not allows(state, back):
        return []
    from_phase = back.phase
    store = RunStore(run.paths)
    done = []
    for p in state.phases[state.index(from_phase) + 1 :]:
        phase = run.flow.phase(p.id)
        for name, wrote in sorted(p.edited.items()):
            if _intact(store, wrote):
                collect._file(run.paths, phase, name, store, wrote, set(phase.outputs))
                done.append(name)
    return done


def _intact(store: RunStore, sha: str) -> bool:
    if not SHA.fullmatch(sha) or not store.claim([sha]):
        return False
    try:
        return hash_file(store.path(sha)) == sha
    except OSError:
        return False
